"""The landing page ``/`` from the live aggregates, without holding the ingestion lock long.

Under the pipeline's lock the aggregates are only copied (every table and cell list,
as a cold /metrics frame copies its cells: no arithmetic, no sorting); the month
totals, the summary and the HTML are made from the copy outside the lock.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Protocol

from exporter.engine.aggregate import Aggregates
from exporter.engine.gateway import GatewaySavings
from exporter.engine.pipeline import Pipeline
from exporter.prices.table import PriceTable
from exporter.report.html import render_html
from exporter.report.summary import Report, build_report


class LiveSidecar(Protocol):
    """What the page reads of the sidecar (``exporter.sidecar.sidecar.Sidecar``)."""

    pipeline: Pipeline
    wall: Callable[[], float]


def snapshot(agg: Aggregates) -> Aggregates:
    """A copy of ``agg`` that later ingestion cannot change: every table copied, every cell list too.

    Generic over the tables an ``Aggregates`` holds, so counters the engine adds are copied as well.
    """
    copy = Aggregates.__new__(Aggregates)
    for name, value in vars(agg).items():
        if isinstance(value, dict):
            # each table holds one kind of value: lists (cells, pairs) are copied one by one, numbers shared
            if isinstance(next(iter(value.values()), None), list):
                value = dict(zip(value.keys(), map(list.copy, value.values()), strict=True))
            else:
                value = dict(value)
        elif isinstance(value, list):
            value = list(value)
        elif isinstance(value, GatewaySavings):  # hit and routing tables: a table of their own
            value = value.copy()
        setattr(copy, name, value)
    return copy


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No garbage collection while the page is built: the copy and the page allocate hundreds of thousands
    of short-lived containers (freed by reference counting, no cycles) that would otherwise trigger full
    collections, which pause every thread (ingestion too) and, under the lock, hold it (100k cells: the
    copy took 0.6 s with the collector on). The collector is re-enabled, if it was on, even on error."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def live_report(sidecar: LiveSidecar) -> Report:
    """The report of the sidecar's aggregates now, the current month (in its time zone) in focus."""
    pipeline = sidecar.pipeline
    with collector_paused():
        with pipeline.lock:
            agg = snapshot(pipeline.aggregates)
            prices: PriceTable = pipeline.prices
        now = sidecar.wall()
        zone = pipeline.month_of.zone
        current = datetime.fromtimestamp(now, zone).strftime("%Y-%m")
        return build_report(agg, agg.month_totals(), source="sidecar", generated_at=rfc3339(now),
                            timezone=str(zone), month=current,
                            price_versions=[version.version for version in prices.versions])


def landing_page(sidecar: LiveSidecar) -> bytes:
    """The HTML of ``/``."""
    report = live_report(sidecar)
    with collector_paused():
        return render_html(report, links=True).encode("utf-8")
