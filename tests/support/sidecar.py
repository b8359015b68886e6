"""Shared helpers for the sidecar tests: configs, record lines and an oracle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from exporter.sidecar.config import Config, config_from_dict
from exporter.sidecar.sidecar import Sidecar

NOV = 1_793_491_200  # 2026-11-01T00:00:00Z
WALL = NOV + 20 * 86_400.0  # a fixed "now" inside November 2026


def make_config(tmp: Path, **overrides: Any) -> Config:
    raw: dict[str, Any] = {
        "listen": "127.0.0.1:0",
        "state_dir": str(tmp / "state"),
        "checkpoint_interval_seconds": 0.05,
        "sources": [{"name": "gw", "paths": [str(tmp / "logs" / "*.jsonl")], "watch": False,
                     "poll_interval_seconds": 0.05}],
    }
    raw.update(overrides)
    return config_from_dict(raw, origin="test")


def record_line(i: int, ts: float | None = None, request_id: str | None = None, **extra: Any) -> bytes:
    obj: dict[str, Any] = {
        "ts": NOV + 3600 + i if ts is None else ts,
        "request_id": request_id or f"req-{i}",
        "model": ("gpt-4o", "claude-sonnet-4-5", "unknown-model-x")[i % 3],
        "tenant": f"team-{i % 4}",
        "tokens_before": 1000 + i % 17,
        "tokens_after": 600,
        "count_method": "tiktoken:o200k_base",
        "usage": {"prompt_tokens": 700, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 300}},
    }
    obj.update(extra)
    return json.dumps(obj).encode() + b"\n"


def expected_requests(lines: list[bytes]) -> int:
    """Oracle: the number of unique request ids among parseable lines."""
    return len({json.loads(line)["request_id"] for line in lines})


def requests_counted(sidecar: Sidecar) -> int:
    with sidecar.pipeline.lock:
        return sum(m["requests"] for m in sidecar.pipeline.aggregates.month_totals().values())


def drain(sidecar: Sidecar, rounds: int = 50) -> None:
    """Drive the ingest loop by hand until the sources are idle."""
    idle = 0
    for _ in range(rounds):
        idle = idle + 1 if sidecar.ingest_once() == 0 else 0
        if idle >= 2:
            return
