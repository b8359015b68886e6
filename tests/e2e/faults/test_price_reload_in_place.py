"""Hostile operation (issue 13): the price table rewritten in place while the sidecar runs.

An editor or `cat new > prices.yaml` truncates the file and writes it again; in between, the file
holds a prefix. A prefix cut at a version boundary is itself a valid table with fewer versions, so
the hot reload must never load it: every table the sidecar publishes (price_table_info) must be
the old one or the new one.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from pathlib import Path

import pytest

from tests.support.faults import ROOT, SidecarProcess, pace, poll, write_config

pytestmark = [pytest.mark.e2e, pytest.mark.faults]
BUNDLED = ROOT / "exporter" / "data" / "prices.yaml"


def _published(sidecar: SidecarProcess) -> tuple[str, ...]:
    snap = sidecar.snapshot()
    return tuple(sorted(snap.label_values("llm_savings_price_table_info", "sha256")))


def test_price_table_written_in_place_never_loads_a_prefix(tmp_path: Path) -> None:
    old = BUNDLED.read_bytes()
    new = old.replace(b"# Bundled default price table", b"# Rewritten in place: default price table", 1)
    assert new != old
    versions = [m.start() for m in re.finditer(rb"^  - version", new, re.M)]
    cut = versions[-1]  # the prefix before the last version: a valid table with one version less
    prices = tmp_path / "prices.yaml"
    prices.write_bytes(old)
    allowed = {hashlib.sha256(old).hexdigest(), hashlib.sha256(new).hexdigest()}
    logs = tmp_path / "logs"
    logs.mkdir()
    sidecar = SidecarProcess(write_config(tmp_path / "s.yaml", tmp_path / "state", [str(logs / "*.jsonl")],
                                          prices=prices), tmp_path / "s.log").start()
    seen: set[str] = set(_published(sidecar))
    try:
        with open(prices, "r+b") as f:  # in place: same inode, truncated, then written in two parts
            f.truncate(0)
            f.write(new[:cut])
            f.flush()
            os.fsync(f.fileno())
            end = time.monotonic() + 3.0  # the writer is slow: longer than the 2 s periodic price check
            while time.monotonic() < end:
                seen.update(_published(sidecar))
                pace(0.1)  # pacing of the scrapes while the prefix is on disk
            f.write(new[cut:])
        poll(lambda: hashlib.sha256(new).hexdigest() in _published(sidecar), 30, "the new table published")
        seen.update(_published(sidecar))
    finally:
        code = sidecar.terminate()
    assert code == 0
    assert seen <= allowed, f"published a table that is neither the old nor the new one: {seen - allowed}"
