"""The sidecar's record limits come from its config: future_skew_seconds and max_request_tokens."""

from __future__ import annotations

import json
from pathlib import Path

from exporter.sidecar.sidecar import Sidecar
from tests.support.sidecar import WALL, drain, make_config, record_line


def _rejected(sidecar: Sidecar) -> dict[tuple[str, str], int]:
    with sidecar.pipeline.lock:
        return dict(sidecar.pipeline.aggregates.rejected)


def test_a_record_past_the_configured_ceiling_is_refused_and_its_id_stays_free(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    big = json.loads(record_line(1, request_id="r-1"))
    big["usage"] = {"prompt_tokens": 5_000, "completion_tokens": 1}
    small = record_line(2, request_id="r-1")  # the same id, plausible: counted, not a duplicate
    (tmp_path / "logs" / "a.jsonl").write_bytes(json.dumps(big).encode() + b"\n" + small)
    sidecar = Sidecar(make_config(tmp_path, max_request_tokens=4_000), wall_clock=lambda: WALL)
    try:
        drain(sidecar)
        rejected = _rejected(sidecar)
        requests = sum(m["requests"] for m in sidecar.pipeline.aggregates.month_totals().values())
    finally:
        sidecar.close()
    assert sum(v for (_month, reason), v in rejected.items() if reason == "implausible_count") == 1
    assert requests == 1


def test_a_record_ahead_of_the_configured_skew_is_refused_without_opening_its_month(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    lines = [record_line(1, ts=WALL + 120), record_line(2, ts=WALL + 30 * 86_400)]
    (tmp_path / "logs" / "a.jsonl").write_bytes(b"".join(lines))
    sidecar = Sidecar(make_config(tmp_path, future_skew_seconds=300), wall_clock=lambda: WALL)
    try:
        drain(sidecar)
        rejected = _rejected(sidecar)
        months = sidecar.pipeline.aggregates.months()
    finally:
        sidecar.close()
    assert rejected == {("unknown", "future_ts"): 1}
    assert months == ["2026-11", "unknown"]
