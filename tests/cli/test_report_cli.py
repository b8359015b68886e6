"""``report``: replay's numbers, month for month, in every format; bad arguments refused with a clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.cli.main import main
from exporter.demo.simulator import Simulator

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
NOV = 1_793_491_200  # 2026-11-01T00:00:00Z


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def _golden_args(case: Path) -> list[str]:
    args = [str(case / "input.jsonl")]
    if (case / "prices.yaml").exists():
        args += ["--prices", str(case / "prices.yaml")]
    else:
        args += ["--prices", str(GOLDEN / "prices.yaml")]
    settings = yaml.safe_load((case / "case.yaml").read_text()) if (case / "case.yaml").exists() else {}
    if settings and "timezone" in settings:
        args += ["--timezone", settings["timezone"]]
    return args


@pytest.fixture(scope="module")
def demo_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo simulator's log: every usage shape, duplicates, bad lines, two months."""
    path = tmp_path_factory.mktemp("demo") / "gateway.jsonl"
    Simulator(11, NOV - 3 * 86_400, rate_per_s=0.01).write(path, 4000)
    return path


@pytest.mark.parametrize("case", sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()))
def test_report_json_equals_replay_json_on_the_golden_cases(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = _golden_args(GOLDEN / case)
    replayed = _json(capsys, "replay", *args, "--json")
    reported = _json(capsys, "report", *args, "--format", "json")
    assert reported["schema"] == "llm-savings-report/v1"
    assert {month: body["totals"] for month, body in reported["months"].items()} == replayed["months"]
    rejected: dict[str, int] = {}
    for body in reported["months"].values():
        for reason, count in body["provenance"]["records_rejected"].items():
            rejected[reason] = rejected.get(reason, 0) + count
    assert rejected == replayed["rejected_by_reason"]


def test_report_json_equals_replay_json_on_the_demo_log(demo_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    replayed = _json(capsys, "replay", str(demo_log), "--json")
    reported = _json(capsys, "report", str(demo_log), "--format", "json")
    assert {month: body["totals"] for month, body in reported["months"].items()} == replayed["months"]
    assert len([m for m in replayed["months"] if m != "unknown"]) == 2  # the log crosses a month boundary
    assert reported["month"] == max(m for m in replayed["months"] if m != "unknown")
    focus = reported["months"][reported["month"]]
    assert sum(row["requests"] for row in focus["by_model"]) == focus["totals"]["requests"]
    assert sum(row["tokens_saved"] for row in focus["by_component"]) == focus["totals"]["tokens_saved"]


@pytest.mark.parametrize("fmt", ["text", "markdown", "html"])
def test_human_formats_show_replays_rounded_figures(demo_log: Path, fmt: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    replayed = _json(capsys, "replay", str(demo_log), "--json")
    month = min(m for m in replayed["months"] if m != "unknown")
    assert main(["report", str(demo_log), "--format", fmt, "--month", month]) == 0
    out = capsys.readouterr().out
    totals = replayed["months"][month]
    assert f"{totals['requests']:,}" in out
    assert f"${totals['spend_usd']:,.2f}" in out and f"${totals['usd_saved']:,.2f}" in out
    assert month in out


def test_output_file_and_month_note(demo_log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "report.html"
    assert main(["report", str(demo_log), "--format", "html", "--month", "2030-01", "-o", str(target)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "no records counted for 2030-01" in captured.err
    assert target.read_text().startswith("<!doctype html>")


@pytest.mark.parametrize(("argv", "message"), [
    (["--month", "2026-13"], "--month '2026-13': expected YYYY-MM"),
    (["--prices", "/nonexistent/prices.yaml"], "/nonexistent/prices.yaml"),
    (["--timezone", "Mars/Olympus"], "--timezone 'Mars/Olympus'"),
    (["--input-format", "mapping"], "mapping"),
])
def test_bad_arguments_are_refused(demo_log: Path, argv: list[str], message: str,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(demo_log), *argv]) == 2
    assert message in capsys.readouterr().err


def test_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "/nonexistent.jsonl"]) == 2
    assert "error: /nonexistent.jsonl: no such file" in capsys.readouterr().err
