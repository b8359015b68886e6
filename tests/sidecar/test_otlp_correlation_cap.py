"""otlp.correlation_max_entries: from the config file to the receiver's correlator, and its count on /metrics.

The count is the early forgetting a user must see: spans of one call exported
further apart than the memory lasts are counted twice. Here a real sidecar
takes real OTLP/HTTP exports from the OTel SDK's exporter over loopback, with
a cap small enough that the fourth request makes the memory forget entries
well inside their 120 s.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from exporter import catalog
from exporter.sidecar.sidecar import Sidecar
from exporter.sources.otlp.correlator import MAX_ENTRIES, SpanCorrelator
from tests.fixtures.otlp.spans import make_spans
from tests.support.sidecar import WALL, make_config

EVICTED = catalog.OTLP_CORRELATION_EVICTED_TOTAL.name


def _sidecar(tmp_path: Path, **otlp: object) -> Sidecar:
    (tmp_path / "logs").mkdir(parents=True)
    config = make_config(tmp_path, otlp={"enabled": True, "listen": "127.0.0.1:0", **otlp})
    return Sidecar(config, wall_clock=lambda: WALL)


def test_the_setting_reaches_the_receivers_correlator(tmp_path: Path) -> None:
    assert make_config(tmp_path, otlp={"enabled": True}).otlp.correlation_max_entries == MAX_ENTRIES
    sidecar = _sidecar(tmp_path, correlation_max_entries=10)
    try:
        assert sidecar.receiver is not None
        options = sidecar.receiver.options
        assert options.correlation_max_entries == 10
    finally:
        sidecar.close()


def _evicted_on_metrics(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        lines = response.read().decode().splitlines()
    (value,) = [line.split(" ")[1] for line in lines if line.startswith(EVICTED + " ")]
    assert f"# TYPE {EVICTED} counter" in lines
    return float(value)


def _export_request() -> list[ReadableSpan]:
    """Three root model-call spans of one dialect with fresh ids: two entries each (the span, its fingerprint)."""
    return [make_spans(("openai_cached",))["openai_cached"] for _ in range(3)]


def test_cap_evictions_appear_on_metrics_after_real_otlp_exports(tmp_path: Path) -> None:
    sidecar = _sidecar(tmp_path, correlation_max_entries=10)
    sidecar.start()
    try:
        assert sidecar.receiver is not None
        assert _evicted_on_metrics(sidecar.port) == 0  # published from the start, before any export
        exporter = OTLPSpanExporter(endpoint=sidecar.receiver.url, timeout=10)
        try:
            # held on arrival of each request: 0, 6, 12 (> 10: 2 forgotten), 16 (6 forgotten)
            for _ in range(4):
                assert exporter.export(_export_request()) is SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()
        correlator = sidecar.receiver.options._memory["correlator"]
        assert isinstance(correlator, SpanCorrelator) and correlator.max_entries == 10
        assert _evicted_on_metrics(sidecar.port) == 8
    finally:
        sidecar.stop()
