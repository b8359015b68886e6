"""``cold_render_gc``: the collector is off during a cold render and back on after it, even if it raises."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from exporter.exposition.collector import cold_render_gc


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # the test process's heap back where the collector scans it
    gc.enable()


def test_cold_render_runs_without_the_collector_and_freezes_what_it_built() -> None:
    with cold_render_gc(True):
        assert not gc.isenabled()
        built = [[i] for i in range(1000)]  # gc-tracked containers, kept alive
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(built)


def test_collector_back_on_and_nothing_frozen_when_the_render_raises() -> None:
    frozen = gc.get_freeze_count()
    with pytest.raises(RuntimeError), cold_render_gc(True):
        raise RuntimeError("render failed")
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    with cold_render_gc(True):
        pass
    assert not gc.isenabled()


def test_a_steady_render_is_left_alone() -> None:
    frozen = gc.get_freeze_count()
    with cold_render_gc(False):
        assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
