"""`replay --json` against the independent oracle (tests/support/oracle.py) on random realistic logs.

The engine sums integer tokens per cell and derives dollars on read; the
oracle prices record by record in floats, straight from docs/prices.md. They
must agree field by field: integers exactly, dollars to rel 1e-9.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from exporter.cli.main import main
from tests.support import oracle

PRICES = Path(__file__).resolve().parents[1] / "fixtures" / "engine" / "prices_two_versions.yaml"
REPO = Path(__file__).resolve().parents[2]
MONTH_KEYS = set(oracle.MONTH_KEYS_INT) | set(oracle.MONTH_KEYS_FLOAT) | set(oracle.MONTH_KEYS_OTHER)


def write_log(directory: Path, seed: int, n: int, parts: int = 2) -> list[Path]:
    lines = oracle.generate_log(random.Random(seed), n)
    paths = []
    step = -(-len(lines) // parts)
    for index in range(parts):
        path = directory / f"log-{seed}-{index}.jsonl"
        path.write_bytes(b"".join(lines[index * step : (index + 1) * step]))
        paths.append(path)
    return paths


def assert_same(engine: dict[str, Any], expected: dict[str, Any]) -> None:
    assert engine["rejected_by_reason"] == expected["rejected_by_reason"]
    assert sorted(engine["months"]) == sorted(expected["months"])
    for month, want in expected["months"].items():
        got = engine["months"][month]
        assert set(got) == MONTH_KEYS, month
        for key in oracle.MONTH_KEYS_INT:
            assert type(got[key]) is int, (month, key)
            assert got[key] == want[key], (month, key)
        for key in oracle.MONTH_KEYS_FLOAT:
            assert isinstance(got[key], float), (month, key)
            assert got[key] == pytest.approx(want[key], rel=1e-9, abs=1e-9), (month, key)
        for key in oracle.MONTH_KEYS_OTHER:
            assert oracle.same(got[key], want[key]), (month, key, got[key], want[key])


def replay_cli(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["replay", *args, "--json"]) == 0
    out = capsys.readouterr().out
    result: dict[str, Any] = json.loads(out)
    return result


@pytest.mark.parametrize("seed", range(6))
def test_replay_equals_oracle(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_log(tmp_path, seed, 3000)
    engine = replay_cli(capsys, *map(str, paths), "--prices", str(PRICES))
    expected = oracle.replay(paths, PRICES)
    assert_same(engine, expected)
    # the generated log really exercises what it should
    months = expected["months"]
    assert {"2026-10", "2026-11", "unknown"} <= set(months)
    assert sum(m["duplicates"] for m in months.values()) > 50
    assert sum(m["unpriced"] for m in months.values()) > 50
    assert sum(m["rejected"] for m in months.values()) > 100
    assert all(m["spend_usd"] > 0 for k, m in months.items() if k != "unknown")
    assert len(expected["rejected_by_reason"]) >= 8


@pytest.mark.parametrize("timezone", ["America/New_York", "Asia/Kathmandu", "Pacific/Kiritimati"])
def test_replay_equals_oracle_in_a_time_zone(
    timezone: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_log(tmp_path, 100, 2000)
    engine = replay_cli(capsys, *map(str, paths), "--prices", str(PRICES), "--timezone", timezone)
    assert_same(engine, oracle.replay(paths, PRICES, timezone))


def test_replay_as_a_subprocess(tmp_path: Path) -> None:
    paths = write_log(tmp_path, 7, 2000, parts=3)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "exporter",
            "replay",
            *map(str, paths),
            "--prices",
            str(PRICES),
            "--json",
        ],
        capture_output=True,
        check=False,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert_same(json.loads(done.stdout), oracle.replay(paths, PRICES))


def test_replay_from_stdin(tmp_path: Path) -> None:
    [path] = write_log(tmp_path, 8, 500, parts=1)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "exporter", "replay", "-", "--prices", str(PRICES), "--json"],
        input=path.read_bytes(),
        capture_output=True,
        check=False,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert_same(json.loads(done.stdout), oracle.replay([path], PRICES))


def test_oracle_notices_a_wrong_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The comparison has teeth: a table that differs by one rate makes it fail."""
    paths = write_log(tmp_path, 3, 1000)
    other = tmp_path / "other.yaml"
    other.write_text(PRICES.read_text().replace("cache_read: 0.25", "cache_read: 0.26"))
    engine = replay_cli(capsys, *map(str, paths), "--prices", str(other))
    with pytest.raises(AssertionError):
        assert_same(engine, oracle.replay(paths, PRICES))


def test_unterminated_last_line_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(b'{"ts": "2026-11-02T00:00:00Z", "model": "alpha", "request_id": "a"}')
    assert (
        replay_cli(capsys, str(log), "--prices", str(PRICES))["months"]["2026-11"]["requests"] == 1
    )


def test_empty_file_prints_no_months(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "empty.jsonl"
    log.write_bytes(b"")
    assert replay_cli(capsys, str(log), "--prices", str(PRICES)) == {
        "months": {},
        "rejected_by_reason": {},
    }


def test_missing_file_and_bad_table_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(tmp_path / "nope.jsonl"), "--prices", str(PRICES), "--json"]) == 2
    assert "no such file" in capsys.readouterr().err
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"")
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "schema: llm-savings-prices/v1\nversions:\n"
        "  - version: x\n    effective_from: nope\n    models: {}\n"
    )
    assert main(["replay", str(log), "--prices", str(bad), "--json"]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "effective_from" in err


def test_table_output_without_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [path] = write_log(tmp_path, 9, 300, parts=1)
    capsys.readouterr()
    assert main(["replay", str(path), "--prices", str(PRICES)]) == 0
    out = capsys.readouterr().out
    assert "spend usd" in out and "2026-11" in out


def test_timezone_option_moves_a_utc_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(b'{"ts": "2026-11-01T03:00:00Z", "model": "alpha", "request_id": "a"}\n')
    utc = replay_cli(capsys, str(log), "--prices", str(PRICES))
    new_york = replay_cli(
        capsys, str(log), "--prices", str(PRICES), "--timezone", "America/New_York"
    )
    assert list(utc["months"]) == ["2026-11"]
    assert list(new_york["months"]) == ["2026-10"]


def test_bench_replay_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The benchmark is not collected; this keeps it from rotting (tiny size)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_replay", REPO / "tests" / "bench" / "bench_replay.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--records", "2000"]) == 0
    out = capsys.readouterr().out
    assert "full replay" in out and "replay / ceiling" in out


def test_oracle_matches_hand_figures() -> None:
    """The oracle itself, on two records worked out by hand from the fixture table."""
    o = oracle.Oracle(oracle.load_prices(PRICES))
    o.line(
        b'{"ts": "2026-11-05T00:00:00Z", "model": "alpha", "request_id": "a",'
        b' "tokens_before": 1000, "tokens_after": 400, "count_method": "tiktoken:o200k_base",'
        b' "usage": {"prompt_tokens": 1000, "completion_tokens": 10,'
        b' "prompt_tokens_details": {"cached_tokens": 600}}}\n'
    )
    o.line(b'{"ts": "2026-11-05T00:00:01Z", "model": "alpha", "request_id": "a"}\n')
    o.line(b"{broken\n")
    month = o.result()["months"]["2026-11"]
    assert (month["requests"], month["duplicates"], month["tokens_saved"]) == (1, 1, 600)
    assert month["spend_usd"] == pytest.approx((400 * 2.5 + 600 * 0.25 + 10 * 12.0) / 1e6)
    assert month["usd_saved"] == pytest.approx(600 * 1.2 * 2.5 / 1e6)
    assert month["cache_savings_usd"] == pytest.approx(600 * (2.5 - 0.25) / 1e6)
    assert month["cache_hit_rate"] == pytest.approx(0.6)
    assert o.result()["months"]["unknown"]["rejected"] == 1
