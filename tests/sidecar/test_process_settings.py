"""gc_young_threshold and gil_switch_interval_ms: the sidecar sets them while it runs and puts them back.

Both are process-wide, so each must reach ``gc`` or ``sys`` exactly as configured (the
threshold leaving the older generations' alone) and be undone by ``close`` (a test process
or an embedding program runs on with its own settings).
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from exporter.exposition.collector import set_young_threshold
from exporter.sidecar.config import Config
from exporter.sidecar.sidecar import Sidecar
from tests.support.sidecar import WALL, make_config


@pytest.fixture
def python_thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*before)


def _sidecar(tmp_path: Path, **settings: object) -> Sidecar:
    (tmp_path / "logs").mkdir(parents=True, exist_ok=True)
    return Sidecar(make_config(tmp_path, **settings), wall_clock=lambda: WALL)


@contextmanager
def _running(sidecar: Sidecar) -> Iterator[None]:
    """Started for the block, stopped (settings restored) after it, whatever the block raised."""
    sidecar.start()
    try:
        yield
    finally:
        sidecar.stop()


def test_set_young_threshold_keeps_the_older_generations(python_thresholds: tuple[int, int, int]) -> None:
    assert set_young_threshold(25_000) == 700
    assert gc.get_threshold() == (25_000, 10, 10)
    assert set_young_threshold(0) == 25_000  # 0: left as it is
    assert gc.get_threshold() == (25_000, 10, 10)


def test_the_sidecar_sets_the_default_while_running_and_restores_it(
    tmp_path: Path, python_thresholds: tuple[int, int, int]
) -> None:
    sidecar = _sidecar(tmp_path)
    assert gc.get_threshold() == (700, 10, 10)  # constructing it changes nothing
    with _running(sidecar):
        assert gc.get_threshold() == (Config().gc_young_threshold, 10, 10)
        assert Config().gc_young_threshold > 700
    assert gc.get_threshold() == (700, 10, 10)


def test_a_configured_threshold_and_zero(tmp_path: Path, python_thresholds: tuple[int, int, int]) -> None:
    with _running(_sidecar(tmp_path / "a", gc_young_threshold=3000)):
        assert gc.get_threshold()[0] == 3000
    assert gc.get_threshold()[0] == 700
    with _running(_sidecar(tmp_path / "b", gc_young_threshold=0)):
        assert gc.get_threshold()[0] == 700


@pytest.fixture
def python_switch_interval() -> Iterator[float]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield sys.getswitchinterval()
    sys.setswitchinterval(before)


def test_the_switch_interval_is_set_while_running_and_restored(tmp_path: Path, python_switch_interval: float) -> None:
    assert Config().gil_switch_interval_ms == 20
    for name, ms, running in (("default", None, 0.020), ("set", 50, 0.050), ("zero", 0, python_switch_interval)):
        sidecar = _sidecar(tmp_path / name, **({} if ms is None else {"gil_switch_interval_ms": ms}))
        assert sys.getswitchinterval() == pytest.approx(python_switch_interval)  # constructing changes nothing
        with _running(sidecar):
            assert sys.getswitchinterval() == pytest.approx(running), name
        assert sys.getswitchinterval() == pytest.approx(python_switch_interval), name
