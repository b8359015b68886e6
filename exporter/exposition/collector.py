"""What runs beside the catalog's render: the process_* families, and keeping the GC from pausing ingestion.

* ``ProcessFamilies``: the standard ``process_*`` families every Prometheus
  exporter serves (CPU seconds, resident and virtual memory, open and maximum
  file descriptors, start time), collected by prometheus_client's
  ``ProcessCollector`` (passed in, never registered in a global registry) and
  written by this package's own writer, in the text format and in OpenMetrics.
  Their names are prometheus_client's, not the catalog's: they are the same in
  every exporter, and the catalog only holds ``llm_savings_*``.
* ``freeze_long_lived`` and ``cold_render_gc``: a full collection stops every thread.
* ``set_young_threshold``: how many container allocations the collector lets
  pass between two young collections (the sidecar's ``gc_young_threshold``).
"""

from __future__ import annotations

import contextlib
import gc
import logging
from collections.abc import Iterable, Iterator

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from exporter.exposition.lines import escape, format_value
from exporter.exposition.render import UnknownMetric

log = logging.getLogger(__name__)
# The metric types the writer below knows; ProcessCollector yields only these.
PROCESS_TYPES = ("counter", "gauge")
# What prometheus_client's ProcessCollector serves on Linux, as scraped (counters with _total), for
# docs/metrics.md; a test checks it against a real collection. (Without /proc it serves none.)
STANDARD_PROCESS_FAMILIES: tuple[tuple[str, str, str], ...] = (
    ("process_cpu_seconds_total", "counter", "user and system CPU time of the sidecar process"),
    ("process_resident_memory_bytes", "gauge", "resident memory (RSS)"),
    ("process_virtual_memory_bytes", "gauge", "virtual memory size"),
    ("process_open_fds", "gauge", "open file descriptors"),
    ("process_max_fds", "gauge", "the open-file limit (RLIMIT_NOFILE)"),
    ("process_start_time_seconds", "gauge", "start time, seconds since the epoch"),
)


def _help(text: str, openmetrics: bool) -> str:
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    return text.replace('"', '\\"') if openmetrics else text


def render_families(families: Iterable[Metric], openmetrics: bool) -> str:
    """Exposition text of prometheus_client metric families (counters and gauges).

    The text format names a counter family by its ``_total`` sample, as
    prometheus_client's own text writer does; OpenMetrics names the family
    without it and adds ``# UNIT`` when the family has one. A family of another
    type, or a sample that does not belong to its family, raises ``UnknownMetric``.
    """
    out: list[str] = []
    for family in families:
        if family.type not in PROCESS_TYPES:
            raise UnknownMetric(f"{family.name}: type {family.type!r} is not one of {PROCESS_TYPES}")
        name = family.name + "_total" if family.type == "counter" and not openmetrics else family.name
        out.append(f"# HELP {name} {_help(family.documentation, openmetrics)}\n# TYPE {name} {family.type}\n")
        if openmetrics and family.unit:
            out.append(f"# UNIT {name} {family.unit}\n")
        allowed = {family.name + "_total"} if family.type == "counter" else {family.name}
        for sample in family.samples:
            if sample.name not in allowed:
                raise UnknownMetric(f"{family.name}: sample {sample.name!r} is not one of {sorted(allowed)}")
            labels = ",".join(f'{key}="{escape(value)}"' for key, value in sorted(sample.labels.items()))
            out.append(f"{sample.name}{{{labels}}} {format_value(float(sample.value))}\n" if labels
                       else f"{sample.name} {format_value(float(sample.value))}\n")
    return "".join(out)


class ProcessFamilies:
    """The ``process_*`` families of one collector, rendered at each scrape (a few reads of /proc).

    ``render`` never raises for the scrape's sake: if the collector cannot read
    its files the families are simply absent, as prometheus_client does; a family
    the writer cannot write is refused at start-up by ``check``, and one that fails
    later is left out of the scrape (logged once) while the catalog's families are served.
    """

    def __init__(self, collector: Collector) -> None:
        self.collector = collector
        self._failed = False  # logged once, not at every scrape

    def check(self) -> None:
        """Render once in both formats; ``UnknownMetric`` if a family cannot be written."""
        render_families(self.collector.collect(), False)
        render_families(self.collector.collect(), True)

    def render(self, openmetrics: bool) -> str:
        try:
            return render_families(self.collector.collect(), openmetrics)
        except (UnknownMetric, OSError, ValueError) as exc:  # a scrape still serves the catalog's families
            if not self._failed:
                log.warning("process metrics left out of /metrics: %s", exc)
            self._failed = True
            return ""


def freeze_long_lived() -> None:
    """Collect once, then move every surviving object to the permanent generation (``gc.freeze``).

    For start-up, after the restore and before any thread runs: the restored
    aggregates and dedupe ledger live as long as the process, and a full (gen-2)
    collection, which pauses every thread, would otherwise rescan them each time.
    Frozen objects are still freed by reference counting; only a cycle that
    becomes garbage after the freeze is never collected (the state holds none).
    """
    gc.collect()
    gc.freeze()


def set_young_threshold(allocations: int) -> int:
    """Let ``allocations`` container allocations (net of frees) pass between two young collections;
    the older generations' thresholds are kept. Returns the threshold it replaced (to restore it).

    Why: an export request or a block of lines is turned into a few thousand short-lived
    containers (span views, record dicts, outcomes) that live until the request is done. With
    CPython's 700, several young collections run while they are all still alive, so each is
    scanned, survives, and is scanned again by the middle and the full collections: over
    loopback that was 2-3 us of a protobuf span's ~26 us and 7 us of an OTLP/JSON span's ~39
    (``tests/bench/bench_otlp.py``). With a larger threshold most of them are freed by reference
    counting before any collection sees them. Nothing is kept longer but garbage *cycles* (which
    only reference counting cannot free); the state holds none. ``0`` leaves the threshold as it is.
    """
    young, middle, old = gc.get_threshold()
    if allocations > 0:
        gc.set_threshold(allocations, middle, old)
    return young


@contextlib.contextmanager
def cold_render_gc(cold: bool) -> Iterator[None]:
    """Around a render: if ``cold``, no garbage collection during it and what it built frozen after it.

    A cold render (``Frame.reset``) allocates hundreds of thousands of container
    objects (series keys, member lists, label texts) that stay in the
    ``Exposition``'s caches; with the collector on, they trigger full
    collections that pause every thread (ingestion too) for 50-150 ms at 100k
    series. Here the collector is off for the render (process-wide, so ingestion
    meanwhile runs without collections too, for the render's length) and
    ``gc.freeze()`` afterwards moves everything alive into the permanent
    generation, so the new caches are never scanned, with no collection pause at
    all. The cost: a garbage cycle pending at that instant is never collected;
    cold renders are rare (start-up, retention dropping a month), and the
    caches of the last cold render are freed by reference counting on the next.
    A steady render (not ``cold``) is left alone. The collector is re-enabled
    (if it was on) even when the render raises; nothing is frozen then.
    """
    if not cold:
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        gc.freeze()
    finally:
        if enabled:
            gc.enable()


__all__ = ["PROCESS_TYPES", "STANDARD_PROCESS_FAMILIES", "ProcessFamilies", "cold_render_gc", "freeze_long_lived",
           "render_families", "set_young_threshold"]
