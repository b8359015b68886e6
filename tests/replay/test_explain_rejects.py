"""``replay --explain-rejects``: rejected lines by FILE:OFFSET: REASON, never their content."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.cli.main import main
from exporter.prices.table import load_price_table
from exporter.replay.replay import RejectedLine, explain_rejects, replay_pipeline
from exporter.sources.formats.registry import make_line_decoder
from tests.support.sidecar import record_line


def _file(tmp_path: Path) -> tuple[Path, list[int]]:
    good = record_line(1)
    bad = b'{"request_id": "x", "prompt": "SECRET-PROMPT"\n'
    lines = [good, bad, record_line(2), b"\n", bad, record_line(1)]  # a blank line; a duplicate is no rejection
    path = tmp_path / "gw.jsonl"
    path.write_bytes(b"".join(lines))
    offsets, at = [], 0
    for line in lines:
        offsets.append(at)
        at += len(line)
    return path, offsets


def test_explain_rejects_lists_file_offset_reason(tmp_path: Path) -> None:
    path, offsets = _file(tmp_path)
    decoder = make_line_decoder("canonical", None)
    prices = load_price_table(None)
    listed, total = explain_rejects([str(path)], lambda: replay_pipeline(prices, decoder), limit=1, decoder=decoder)
    assert total == 2
    assert listed == [RejectedLine(str(path), offsets[1], "invalid_json")]


def test_replay_explain_rejects_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, offsets = _file(tmp_path)
    assert main(["replay", "--explain-rejects", "5", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [f"{path}:{offsets[1]}: invalid_json", f"{path}:{offsets[4]}: invalid_json",
                                "2 rejected line(s)"]
    assert "SECRET" not in out
