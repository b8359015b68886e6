"""process_* families: prometheus_client's ProcessCollector, written by our writer, read back by its parsers."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client import generate_latest as text_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.openmetrics.exposition import generate_latest as om_latest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
from prometheus_client.parser import text_string_to_metric_families as text_parse
from prometheus_client.registry import Collector

from exporter.exposition.collector import STANDARD_PROCESS_FAMILIES, ProcessFamilies, render_families
from exporter.exposition.render import UnknownMetric
from exporter.sidecar.sidecar import Sidecar
from tests.support.sidecar import WALL, make_config

STANDARD = {"process_virtual_memory_bytes", "process_resident_memory_bytes", "process_start_time_seconds",
            "process_cpu_seconds", "process_open_fds", "process_max_fds"}


class Frozen(Collector):
    """The families of one collection, served again and again (both writers see the same numbers)."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self.families = list(families)

    def collect(self) -> Iterable[Metric]:
        return self.families


def _frozen_process() -> Frozen:
    frozen = Frozen(ProcessCollector(registry=None).collect())
    assert {f.name for f in frozen.families} == STANDARD  # Linux: /proc is there
    return frozen


def _view(families: Iterable[Metric]) -> list[tuple[str, str, str, str, list[tuple[str, dict[str, str], float]]]]:
    return [(f.name, f.type, f.documentation, f.unit, [(s.name, s.labels, s.value) for s in f.samples])
            for f in families]


def _registry(collector: Collector) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)  # a test's own registry, never the global one
    registry.register(collector)
    return registry


def test_text_format_reads_back_as_prometheus_clients_own() -> None:
    frozen = _frozen_process()
    ours = render_families(frozen.collect(), openmetrics=False)
    theirs = text_latest(_registry(frozen)).decode()
    assert _view(text_parse(ours)) == _view(text_parse(theirs))
    # the same lines but for number spelling (repr vs Go's %g)
    assert [line for line in ours.splitlines() if line.startswith("#")] == \
        [line for line in theirs.splitlines() if line.startswith("#")]


def test_openmetrics_reads_back_as_prometheus_clients_own() -> None:
    frozen = _frozen_process()
    ours = render_families(frozen.collect(), openmetrics=True)
    theirs = om_latest(_registry(frozen)).decode()
    assert _view(om_parse(ours + "# EOF\n")) == _view(om_parse(theirs))
    assert "# TYPE process_cpu_seconds counter\n" in ours and "\nprocess_cpu_seconds_total " in ours


def test_labels_units_and_escaping() -> None:
    gauge = GaugeMetricFamily("demo_bytes", 'Help with "quotes" and a \\ backslash\nnewline.', labels=["path"],
                              unit="bytes")
    gauge.add_metric(['a"b\\c\nd'], 5.0)
    counter = CounterMetricFamily("demo_events", "Events.", labels=["kind"])
    counter.add_metric(["x"], 3.0)
    frozen = Frozen([gauge, counter])
    for om, parse, latest in ((False, text_parse, text_latest), (True, om_parse, om_latest)):
        ours = render_families(frozen.collect(), om) + ("# EOF\n" if om else "")
        theirs = latest(_registry(frozen)).decode()
        assert _view(parse(ours)) == _view(parse(theirs))
    assert "# UNIT demo_bytes bytes\n" in render_families(frozen.collect(), True)
    assert "# UNIT" not in render_families(frozen.collect(), False)


def test_families_the_writer_does_not_know_are_refused() -> None:
    histogram = HistogramMetricFamily("demo_seconds", "A histogram.", buckets=[("1.0", 1), ("+Inf", 2)], sum_value=3)
    with pytest.raises(UnknownMetric, match="demo_seconds: type 'histogram'"):
        render_families([histogram], False)
    with pytest.raises(UnknownMetric, match="demo_seconds"):
        ProcessFamilies(Frozen([histogram])).check()


class Broken(Collector):
    def __init__(self) -> None:
        self.calls = 0

    def collect(self) -> Iterable[Metric]:
        self.calls += 1
        raise OSError("/proc is gone")


def test_a_failing_collector_leaves_the_scrape_alone_and_logs_once(caplog: pytest.LogCaptureFixture) -> None:
    families = ProcessFamilies(Broken())
    with caplog.at_level(logging.WARNING):
        assert families.render(False) == "" and families.render(True) == ""
    assert [r.getMessage() for r in caplog.records] == ["process metrics left out of /metrics: /proc is gone"]


def test_the_sidecar_serves_the_families_before_eof(tmp_path: Path) -> None:
    gauge = GaugeMetricFamily("process_open_fds", "Number of open file descriptors.", value=7.0)
    counter = CounterMetricFamily("process_cpu_seconds", "Total user and system CPU time spent in seconds.",
                                  value=1.5)
    (tmp_path / "logs").mkdir()
    sidecar = Sidecar(make_config(tmp_path), wall_clock=lambda: WALL, process_collector=Frozen([gauge, counter]))
    try:
        text, _ = sidecar.metrics(None)
        body, content_type = sidecar.metrics("application/openmetrics-text; version=1.0.0")
    finally:
        sidecar.close()
    assert text.decode().endswith("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.5\n")
    assert "openmetrics" in content_type
    assert body.decode().endswith("# TYPE process_cpu_seconds counter\nprocess_cpu_seconds_total 1.5\n# EOF\n")
    names = {f.name for f in om_parse(body.decode())}
    assert {"process_open_fds", "process_cpu_seconds"} <= names
    assert any(name.startswith("llm_savings_") for name in names)  # the catalog's families as well


def test_without_a_collector_nothing_process_is_served(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    sidecar = Sidecar(make_config(tmp_path), wall_clock=lambda: WALL)
    try:
        text, _ = sidecar.metrics(None)
    finally:
        sidecar.close()
    assert b"process_" not in text


def test_the_documented_families_are_what_the_collector_serves() -> None:
    served = set()
    for family in ProcessCollector(registry=None).collect():
        served.add(family.name + "_total" if family.type == "counter" else family.name)
        assert (family.name + "_total" if family.type == "counter" else family.name, family.type) in {
            (name, kind) for name, kind, _ in STANDARD_PROCESS_FAMILIES}
    assert served == {name for name, _, _ in STANDARD_PROCESS_FAMILIES}
    doc = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text(encoding="utf-8")
    for name, kind, _ in STANDARD_PROCESS_FAMILIES:
        assert f"| `{name}` | {kind} |" in doc
