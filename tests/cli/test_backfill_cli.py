"""`backfill` on the command line: refused arguments name the option and exit 2; no dated record exits 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exporter.cli.main import main
from tests.support.prices import one_version


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "gateway.jsonl"
    records = [{"ts": f"2026-10-0{day}T12:00:00Z", "request_id": f"r{day}", "model": "gpt-4o",
                "tokens_before": 900, "tokens_after": 600, "count_method": "provider"} for day in (1, 2, 3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    (tmp_path / "prices.yaml").write_text(one_version("v1"), encoding="utf-8")
    return path


def backfill(log: Path, *extra: str) -> int:
    return main(["backfill", str(log), "--out", str(log.parent / "out.om"), "--prices",
                 str(log.parent / "prices.yaml"), *extra])


@pytest.mark.parametrize(("extra", "message"), [
    (("--step", "1w"), "--step: '1w' is not a duration"),
    (("--step", "0s"), "--step: '0s' is shorter than 1s"),
    (("--label", "month=x"), "--label: 'month' is already a label"),
    (("--label", "job"), "--label: 'job' is not NAME=VALUE"),
    (("--until", "yesterday"), "--until: ts is not an RFC 3339 timestamp"),
    (("--format", "mapping"), "needs a mapping file"),
])
def test_refused_arguments(log: Path, extra: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert backfill(log, *extra) == 2
    assert message in capsys.readouterr().err
    assert not (log.parent / "out.om").exists()


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backfill", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "o.om")]) == 2
    assert "nope.jsonl: no such file" in capsys.readouterr().err


def test_no_dated_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("not json\n\n", encoding="utf-8")
    assert main(["backfill", str(empty), "--out", str(tmp_path / "o.om")]) == 1
    assert "no record with a usable timestamp in 2 line(s)" in capsys.readouterr().err


def test_written(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert backfill(log, "--step", "1d", "--until", "2026-10-05T00:00:00Z", "--label", "job=j") == 0
    err = capsys.readouterr().err
    assert "at 4 steps from 2026-10-02T00:00:00Z to 2026-10-05T00:00:00Z" in err
    text = (log.parent / "out.om").read_text(encoding="utf-8")
    assert text.endswith("# EOF\n")
    assert ('llm_savings_requests_total{month="2026-10",model="gpt-4o",tenant="unset",backfill="true",job="j"} 3 '
            "1791158400\n") in text
