"""The hostile-input corpus (tests/hostile/) through replay, the loaders and a running sidecar.

``tests/hostile/manifest.json`` gives, for each committed record file, the
outcome of every line ("ok": counted, "skip": blank, else the rejection
reason), and for each bad price table and config the ``file:line: key: ``
prefix of the refusal. ``tests/hostile/generate.py`` writes the big files
(10 MiB lines, a NUL run, no newline, distinct names by the hundred thousand)
and their expectations. The checks: the process survives, every hostile
line is one counted rejection under its named reason, the good lines beside
them all count, label caps hold, and the prompt-text marker some lines carry
never reaches /metrics, the log or the checkpoint.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from exporter.engine.labels import LabelCaps
from exporter.engine.pipeline import Pipeline
from exporter.prices.table import PriceTableError, load_price_table
from exporter.replay.replay import replay_files
from exporter.sidecar.config import ConfigError, load_config
from exporter.sources.formats.registry import make_line_decoder
from tests.hostile.generate import expected as big_expected
from tests.hostile.generate import generate
from tests.support.processes import ROOT, by_label, poll, samples, scrape, total

HOSTILE = Path(__file__).resolve().parents[1] / "hostile"
MANIFEST: dict[str, dict[str, Any]] = json.loads((HOSTILE / "manifest.json").read_text())
MARKER = b"HOSTILE-PROMPT-MARKER-7f3a"
NAMES = int(os.environ.get("HOSTILE_NAMES", "100000"))  # tests/hostile/generate.py defaults to a million
PORT_LINE = re.compile(rb"serving /metrics on \S+ \(port (\d+)\)")


def _outcomes(lines: list[str]) -> tuple[int, Counter[str]]:
    rejected = Counter(line for line in lines if line not in ("ok", "skip"))
    return lines.count("ok"), rejected


def _replay(paths: list[Path], caps: LabelCaps | None = None) -> Pipeline:
    pipeline = Pipeline(load_price_table(), caps=caps)
    replay_files([str(p) for p in paths], pipeline, make_line_decoder("canonical"))
    return pipeline


def _rejected(pipeline: Pipeline) -> Counter[str]:
    out: Counter[str] = Counter()
    for (_month, reason), count in pipeline.aggregates.rejected.items():
        out[reason] += count
    return out


def _requests(pipeline: Pipeline) -> int:
    return sum(m["requests"] for m in pipeline.aggregates.month_totals().values())


@pytest.mark.parametrize("name", sorted(MANIFEST["records"]))
def test_record_file_through_replay(name: str) -> None:
    ok, rejected = _outcomes(MANIFEST["records"][name]["lines"])
    pipeline = _replay([HOSTILE / "records" / name])
    assert _rejected(pipeline) == rejected
    assert _requests(pipeline) == ok
    assert pipeline.aggregates.duplicates == {} or sum(pipeline.aggregates.duplicates.values()) == 0


def test_every_corpus_file_has_a_manifest_entry() -> None:
    for kind in ("records", "prices", "configs"):
        on_disk = {p.name for p in (HOSTILE / kind).iterdir()}
        assert on_disk == set(MANIFEST[kind]), kind


def _loader_cases(kind: str) -> list[Any]:
    cases = []
    for name, outcome in sorted(MANIFEST[kind].items()):
        marks = [pytest.mark.xfail(strict=True, reason=f"open: {outcome['open']}")] if "open" in outcome else []
        cases.append(pytest.param(name, outcome, id=name, marks=marks))
    return cases


@pytest.mark.parametrize(("name", "outcome"), _loader_cases("prices"))
def test_price_table_mistake_is_refused_naming_file_line_key(name: str, outcome: dict[str, str]) -> None:
    path = HOSTILE / "prices" / name
    with pytest.raises(PriceTableError) as info:
        load_price_table(path)
    assert str(info.value).startswith(f"{path}{outcome.get('refused', ':?')}"), str(info.value)


@pytest.mark.parametrize(("name", "outcome"), _loader_cases("configs"))
def test_config_mistake_is_refused_naming_file_line_key(name: str, outcome: dict[str, str]) -> None:
    path = HOSTILE / "configs" / name
    if "accepted" in outcome:
        load_config(path, environ={})
        return
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert str(info.value).startswith(f"{path}{outcome.get('refused', ':?')}"), str(info.value)


def test_bad_config_and_prices_fail_the_cli_cleanly(tmp_path: Path) -> None:
    """``run --config`` on a refused file exits 2 with one error line, no traceback."""
    bad_prices = tmp_path / "config.yaml"
    bad_prices.write_text(f"state_dir: {tmp_path / 'state'}\nprices: {HOSTILE / 'prices' / 'alias_bomb.yaml'}\n")
    for config in (HOSTILE / "configs" / "huge_int.yaml", HOSTILE / "configs" / "deep_nesting.yaml", bad_prices):
        result = subprocess.run([sys.executable, "-m", "exporter", "run", "--config", str(config), "--check-config"],
                                capture_output=True, cwd=ROOT, timeout=60, check=False)
        assert result.returncode == 2, result.stderr
        assert b"Traceback" not in result.stderr and b"error: " in result.stderr, result.stderr


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hostile-big")
    generate(out, NAMES)
    return out


@pytest.mark.parametrize("name", ["long_lines.jsonl", "nul_run_big.jsonl", "no_newline_big.jsonl"])
def test_big_file_through_replay(big: Path, name: str) -> None:
    ok, rejected = _outcomes(big_expected(NAMES)[name]["replay"])
    pipeline = _replay([big / name])
    assert _rejected(pipeline) == rejected
    assert _requests(pipeline) == ok


def test_distinct_names_by_the_hundred_thousand_hold_the_label_caps(big: Path) -> None:
    pipeline = _replay([big / "million_names.jsonl"], LabelCaps(max_models=500, max_tenants=200))
    assert _requests(pipeline) == NAMES
    models = {key[1] for key in pipeline.aggregates.cells}
    tenants = {key[2] for key in pipeline.aggregates.cells}
    assert len(models) == 501 and "other" in models  # 500 names, then everything else is `other`
    assert len(tenants) == 201 and "other" in tenants
    assert pipeline.caps.model.overflow == NAMES - 500
    assert pipeline.caps.tenant.overflow == NAMES - 200


def _sidecar_expectation(big: Path) -> tuple[int, Counter[str]]:
    ok, rejected = 0, Counter[str]()
    for entry in MANIFEST["records"].values():
        lines = entry.get("sidecar", entry["lines"])
        lines = lines[:len(lines) - entry.get("sidecar_pending", 0)]
        n, r = _outcomes(lines)
        ok, rejected = ok + n, rejected + r
    for exp in big_expected(NAMES).values():
        n, r = _outcomes(exp["sidecar"])
        ok, rejected = ok + n, rejected + r
    return ok, rejected


@pytest.mark.slow
def test_running_sidecar_survives_the_whole_corpus(big: Path, tmp_path: Path) -> None:
    logs, state = tmp_path / "logs", tmp_path / "state"
    logs.mkdir()
    for path in sorted((HOSTILE / "records").iterdir()):
        shutil.copy(path, logs / path.name)
    for path in sorted(big.iterdir()):
        os.link(path, logs / path.name) if path.stat().st_dev == logs.stat().st_dev else shutil.copy(path, logs)
    config = tmp_path / "config.yaml"
    config.write_text(f'listen: "127.0.0.1:0"\nstate_dir: {state}\ncheckpoint_interval_seconds: 0.2\n'
                      "month_retention: 600\nlog_level: INFO\n"
                      f'sources:\n  - name: gw\n    paths: ["{logs}/*.jsonl"]\n    watch: false\n'
                      "    poll_interval_seconds: 0.05\n")
    stderr_path = tmp_path / "stderr.log"
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "exporter", "run", "--config", str(config)],
                                stdout=subprocess.DEVNULL, stderr=stderr, cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            def port() -> int | None:
                assert proc.poll() is None, stderr_path.read_text(errors="replace")[-3000:]
                match = PORT_LINE.search(stderr_path.read_bytes())
                return int(match.group(1)) if match else None

            metrics_port = poll(port, 60, "the sidecar's port")
            ok, rejected = _sidecar_expectation(big)

            def caught_up() -> dict[str, Any] | None:
                assert proc.poll() is None, stderr_path.read_text(errors="replace")[-3000:]
                parsed = samples(scrape(metrics_port))
                seen = total(parsed, "llm_savings_requests_total") + total(parsed, "llm_savings_records_rejected_total")
                behind = total(parsed, "llm_savings_source_bytes_behind")  # no_newline.jsonl's last line waits
                if seen >= ok + sum(rejected.values()) and behind <= 2**20:
                    return parsed
                return None

            parsed = poll(caught_up, 120, "the sidecar to read the corpus")
            assert total(parsed, "llm_savings_requests_total") == ok
            got = {reason: int(v) for reason, v in by_label(parsed, "llm_savings_records_rejected_total",
                                                            "reason").items() if v}
            assert got == dict(rejected)
            overflow = by_label(parsed, "llm_savings_label_overflow_total", "label")
            assert overflow["model"] >= NAMES - 500 and overflow["tenant"] >= NAMES - 200
            models = {dict(labels).get("model") for labels in parsed["llm_savings_requests_total"]}
            assert len(models) <= 501
            text = scrape(metrics_port).encode()
            assert MARKER not in text
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(60) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert MARKER not in stderr_path.read_bytes()
    assert b"Traceback" not in stderr_path.read_bytes(), stderr_path.read_text(errors="replace")[-3000:]
    for checkpoint in state.iterdir():
        assert MARKER not in checkpoint.read_bytes(), checkpoint
