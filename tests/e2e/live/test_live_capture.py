"""Capture every dialect afresh with the pinned real packages and compare with the committed fixtures.

Builds the venvs under .venv-live/ (kept between runs by their pin stamp) and needs the package
index. A new release pinned in tests/live/envs.py that changes what an instrumentation puts on its
spans fails here until the fixtures are regenerated (``python -m tests.live.regen``) and
tests/fixtures/dialects/FINDINGS.md is brought up to date. ``LLM_SAVINGS_LIVE=0`` skips it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.live import regen
from tests.live.envs import all_dialects
from tests.live.spans import FIXTURES
from tests.live.structure import payload_signature, signature

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.live,
    pytest.mark.skipif(os.environ.get("LLM_SAVINGS_LIVE") == "0", reason="LLM_SAVINGS_LIVE=0"),
]


def _jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("dialect", all_dialects())
def test_fresh_capture_matches_committed(dialect: str, tmp_path: Path) -> None:
    committed = FIXTURES / dialect
    assert committed.is_dir(), f"no committed fixtures for {dialect}: run python -m tests.live.regen --only {dialect}"
    regen.capture(dialect, tmp_path, clean=False)
    fresh = tmp_path / dialect
    assert sorted(p.name for p in fresh.iterdir()) == sorted(p.name for p in committed.iterdir() if p.is_file())
    for path in sorted(committed.glob("*.json")):
        old, new = json.loads(path.read_text()), json.loads((fresh / path.name).read_text())
        if path.name.endswith(".calls.json"):
            strip = [{k: v for k, v in c.items() if k != "response_id"} for c in old["calls"]]
            assert strip == [{k: v for k, v in c.items() if k != "response_id"} for c in new["calls"]], path.name
            continue
        assert new["captured_with"]["packages"] == old["captured_with"]["packages"], path.name
        assert signature(new) == signature(old), f"{dialect}/{path.name} drifted"
    for path in sorted(committed.glob("*.jsonl")):
        assert payload_signature(_jsonl(fresh / path.name)) == payload_signature(_jsonl(path)), path.name
