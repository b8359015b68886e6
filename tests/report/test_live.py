"""The landing page from the live aggregates: a copy taken under the lock, everything else outside it."""

from __future__ import annotations

import threading
from html.parser import HTMLParser
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from exporter.engine.aggregate import Aggregates
from exporter.engine.gateway import GatewaySavings
from exporter.report.live import landing_page, live_report, snapshot
from exporter.sidecar.sidecar import Sidecar
from tests.support.processes import samples, total
from tests.support.sidecar import WALL, drain, make_config, record_line


class _WatchedLock:
    """The pipeline's lock, recording whether it is held (so a test can see what runs under it)."""

    def __init__(self, lock: Any) -> None:
        self.lock = lock
        self.held = 0
        self.entered = 0

    def __enter__(self) -> None:
        self.lock.acquire()
        self.held += 1
        self.entered += 1

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.held -= 1
        self.lock.release()


@pytest.fixture
def sidecar(tmp_path: Path) -> Any:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_bytes(b"".join(record_line(i) for i in range(60)) + b"oops\n")
    found = Sidecar(make_config(tmp_path), wall_clock=lambda: WALL)
    drain(found)
    yield found
    found.close()


def test_snapshot_is_not_changed_by_later_ingestion(sidecar: Sidecar) -> None:
    agg = sidecar.pipeline.aggregates
    copy = snapshot(agg)
    before = copy.month_totals()
    assert before == agg.month_totals()
    for cell in agg.cells.values():
        cell[0] += 5
    agg.components.clear()
    agg.rejected[("2026-11", "x")] = 9
    assert copy.month_totals() == before
    assert copy.cells.keys() == agg.cells.keys() and copy.components


def test_snapshot_copies_every_mutable_value(sidecar: Sidecar) -> None:
    """The copy is generic over Aggregates' tables: each must hold lists (copied) or immutable values
    (shared), so a table the engine adds later is copied correctly too, or this test says why not."""
    agg = sidecar.pipeline.aggregates
    copy = snapshot(agg)
    for name, table in vars(agg).items():
        if isinstance(table, dict):
            assert copy.__dict__[name] is not table, name
            for key, value in table.items():
                assert isinstance(value, list | int | float | str | tuple), (name, type(value))
                if isinstance(value, list):
                    assert copy.__dict__[name][key] == value and copy.__dict__[name][key] is not value, name
        elif isinstance(table, list):
            assert copy.__dict__[name] == table and copy.__dict__[name] is not table, name
        elif isinstance(table, GatewaySavings):  # its tables are copied cell by cell
            found = copy.__dict__[name]
            assert found is not table and found.to_state() == table.to_state(), name
            assert all(found.hits[key] is not cell for key, cell in table.hits.items()), name


def test_only_the_copy_runs_under_the_lock(sidecar: Sidecar, monkeypatch: pytest.MonkeyPatch) -> None:
    watched = _WatchedLock(sidecar.pipeline.lock)
    monkeypatch.setattr(sidecar.pipeline, "lock", watched)
    month_totals = Aggregates.month_totals
    calls: list[int] = []

    def totals_outside_the_lock(self: Aggregates) -> dict[str, dict[str, Any]]:
        calls.append(watched.held)
        return month_totals(self)

    monkeypatch.setattr(Aggregates, "month_totals", totals_outside_the_lock)
    report = live_report(sidecar)
    assert watched.entered == 1 and calls == [0]
    assert report.month == "2026-11" and report.source == "sidecar"


class _Figures(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[str, str] = {}
        self.models: dict[str, dict[str, str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if "data-figure" in found:
            self.figures[found["data-figure"]] = found["data-value"]
        if found.get("data-breakdown") == "model":
            self.models[found["data-name"]] = found


def test_the_page_shows_what_metrics_shows(sidecar: Sidecar) -> None:
    body, _ctype = sidecar.metrics(None)
    parsed = samples(body.decode())
    page = _Figures()
    page.feed(landing_page(sidecar).decode())
    month = {"month": "2026-11"}
    assert float(page.figures["usd_saved"]) == pytest.approx(total(parsed, "llm_savings_usd_saved_total", **month),
                                                             rel=1e-12)
    assert float(page.figures["spend_usd"]) == pytest.approx(total(parsed, "llm_savings_spend_usd_total", **month),
                                                             rel=1e-12)
    assert int(page.figures["tokens_saved"]) == total(parsed, "llm_savings_tokens_saved_total", **month)
    for model, row in page.models.items():
        assert int(row["data-requests"]) == total(parsed, "llm_savings_requests_total", model=model, **month)
    assert set(page.models) == {"gpt-4o", "claude-sonnet-4-5", "unknown-model-x"}


def test_a_page_render_does_not_wait_for_a_slow_scrape(sidecar: Sidecar) -> None:
    """The page takes only the pipeline lock, never the render lock a /metrics frame holds while it renders."""
    with sidecar._render_lock:
        done = threading.Event()

        def render() -> None:
            landing_page(sidecar)
            done.set()

        worker = threading.Thread(target=render)
        worker.start()
        assert done.wait(10)
        worker.join()
