"""A reload that drops versions in use waits until the file has held still: a prefix is never applied."""

from __future__ import annotations

from pathlib import Path

from exporter.prices.table import load_price_table
from exporter.sidecar.health import Health
from exporter.sidecar.price_reload import PriceReloader
from tests.support.prices import price_table

BOTH = price_table(("v1", "2026-01-01"), ("v2", "2026-06-01"))
PREFIX = price_table(("v1", "2026-01-01"))  # a valid table: v2 not written yet


def _reloader(path: Path, clock: list[float]) -> PriceReloader:
    return PriceReloader(str(path), 0.0, Health(), clock[0], monotonic=lambda: clock[0], shrink_hold_seconds=10)


def test_a_prefix_is_held_and_the_complete_table_applies_at_once(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(BOTH)
    current = load_price_table(path)
    clock = [100.0]
    reloader = _reloader(path, clock)
    path.write_text(PREFIX)  # rewritten in place, the writer pauses
    assert reloader.check(current) is None
    clock[0] += 9.0
    assert reloader.check(current) is None  # still held: not 10 s yet
    path.write_text(BOTH.replace("output: 10.0", "output: 12.0"))  # the writer finishes: no version dropped
    table = reloader.check(current)
    assert table is not None and [v.version for v in table.versions] == ["v1", "v2"]


def test_a_table_that_really_drops_a_version_applies_after_holding_still(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(BOTH)
    current = load_price_table(path)
    clock = [100.0]
    reloader = _reloader(path, clock)
    path.write_text(PREFIX)
    assert reloader.check(current) is None
    clock[0] += 10.0
    table = reloader.check(current)
    assert table is not None and [v.version for v in table.versions] == ["v1"]
    assert reloader.health.price_reloads == {"success": 0, "error": 0}  # the sidecar counts the success


def test_sighup_applies_a_shrunk_table_at_once(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(BOTH)
    current = load_price_table(path)
    reloader = _reloader(path, [0.0])
    path.write_text(PREFIX)
    table = reloader.check(current, force=True)
    assert table is not None and [v.version for v in table.versions] == ["v1"]
