"""Checkpoints: exact resume, fallback to the previous generation, refusal when none is readable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from exporter.sidecar.checkpoint import CheckpointError, CheckpointStore, decode, encode
from exporter.sidecar.sidecar import Sidecar
from tests.support.sidecar import WALL, drain, expected_requests, make_config, record_line, requests_counted


def _sidecar(tmp_path: Path) -> Sidecar:
    return Sidecar(make_config(tmp_path), wall_clock=lambda: WALL)


def _write(tmp_path: Path, lines: list[bytes], name: str = "a.jsonl") -> None:
    (tmp_path / "logs").mkdir(exist_ok=True)
    with open(tmp_path / "logs" / name, "ab") as f:
        f.writelines(lines)


def _close(sidecar: Sidecar) -> None:
    sidecar.close()


def test_restart_resumes_exactly(tmp_path: Path) -> None:
    first = [record_line(i) for i in range(300)]
    _write(tmp_path, first)
    sidecar = _sidecar(tmp_path)
    drain(sidecar)
    assert sidecar.checkpoint()
    totals_before = sidecar.summary()
    _close(sidecar)
    again = _sidecar(tmp_path)
    assert again.summary() == totals_before  # restored values, never lower
    second = [record_line(i) for i in range(300, 450)] + [record_line(5)]  # one duplicate
    _write(tmp_path, second)
    drain(again)
    assert requests_counted(again) == expected_requests(first + second)
    with again.pipeline.lock:
        assert sum(again.pipeline.aggregates.duplicates.values()) == 1
    _close(again)


def test_corrupt_newest_generation_falls_back_without_recounting(tmp_path: Path) -> None:
    lines = [record_line(i) for i in range(200)]
    _write(tmp_path, lines[:100])
    sidecar = _sidecar(tmp_path)
    drain(sidecar)
    sidecar.checkpoint()
    _write(tmp_path, lines[100:])
    drain(sidecar)
    sidecar.checkpoint()
    _close(sidecar)
    store = CheckpointStore(tmp_path / "state")
    newest = sorted((tmp_path / "state").glob("checkpoint-*.ckpt"))[-1]
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 0xFF
    newest.write_bytes(bytes(data))
    loaded = store.load()
    assert loaded is not None and loaded.skipped and loaded.path != newest
    resumed = _sidecar(tmp_path)
    drain(resumed)  # re-reads the lines the older generation had not counted
    assert requests_counted(resumed) == expected_requests(lines)
    _close(resumed)


@pytest.mark.parametrize("damage", ["empty", "truncated", "garbage"])
def test_no_readable_checkpoint_refuses_to_start(tmp_path: Path, damage: str) -> None:
    _write(tmp_path, [record_line(i) for i in range(10)])
    sidecar = _sidecar(tmp_path)
    drain(sidecar)
    sidecar.checkpoint()
    _close(sidecar)
    for path in (tmp_path / "state").glob("checkpoint-*.ckpt"):
        data = path.read_bytes()
        path.write_bytes({"empty": b"", "truncated": data[: len(data) - 7], "garbage": b"\x00" * 64}[damage])
    with pytest.raises(CheckpointError, match="Refusing to start"):
        _sidecar(tmp_path)


def test_encode_decode_roundtrip_and_detection() -> None:
    body = {"a": [1, 2, {"b": "c"}]}
    blobs = {20000: b"\x01" * 16, 20001: b"\x02" * 8}
    data = encode(body, blobs)
    assert decode(data) == (body, blobs)
    for cut in (0, 10, len(data) - 1):
        with pytest.raises(ValueError):
            decode(data[:cut])


def test_checkpoint_holds_no_prompt_text(tmp_path: Path) -> None:
    marker = "SECRET-PROMPT-MARKER-42"
    line = record_line(1, tokens_before=None, tokens_after=None, text_before=marker * 3, text_after=marker)
    _write(tmp_path, [line])
    sidecar = _sidecar(tmp_path)
    drain(sidecar)
    sidecar.checkpoint()
    body, _ = sidecar.metrics(None)
    _close(sidecar)
    assert marker.encode() not in body
    for path in (tmp_path / "state").iterdir():
        assert marker.encode() not in path.read_bytes()


def test_a_line_that_breaks_the_pipeline_costs_only_itself(tmp_path: Path) -> None:
    _write(tmp_path, [record_line(i) for i in range(5)])
    sidecar = _sidecar(tmp_path)
    real = sidecar.pipeline.ingest_watched
    calls = {"n": 0}

    def flaky(lines: list[bytes], first: int, watch: Any) -> None:
        for at in range(first, len(lines)):  # the sidecar hands a batch: the second line of it breaks the pipeline
            calls["n"] += 1
            watch.at = at
            if calls["n"] == 2:
                raise RuntimeError("injected fault")
            real(lines[at:at + 1], 0, type(watch)())

    sidecar.pipeline.ingest_watched = flaky  # type: ignore[method-assign]
    drain(sidecar)
    _close(sidecar)
    assert requests_counted(sidecar) == 4
    with sidecar.pipeline.lock:
        assert sidecar.pipeline.aggregates.rejected == {("unknown", "internal_error"): 1}
