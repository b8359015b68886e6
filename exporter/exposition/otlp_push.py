"""Optional push of the exporter's counters over OTLP metrics (off by default).

For users whose backend is OTel-native. The numbers are the ones /metrics
serves: observable instruments whose callbacks read ``Sidecar.series_view`` (a
frame of the aggregates copied under the pipeline's lock) at each export. Counters
become cumulative monotonic sums (month-to-date, the ``month`` attribute as
in Prometheus); gauges become observable gauges. Needs the ``otlp-push``
extra (``opentelemetry-exporter-otlp-proto-http``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from exporter import __version__, catalog

Snapshot = dict[str, list[tuple[dict[str, str], float]]]


class SnapshotCache:
    """Takes one snapshot per export cycle, shared by every instrument's callback."""

    def __init__(self, take: Callable[[], Snapshot], max_age: float = 1.0,
                 clock: Callable[[], float] | None = None) -> None:
        import time

        self._take = take
        self._max_age = max_age
        self._clock = clock or time.monotonic
        self._lock = threading.Lock()
        self._at = -1e18
        self._value: Snapshot = {}

    def get(self) -> Snapshot:
        with self._lock:
            now = self._clock()
            if now - self._at > self._max_age:
                self._value = self._take()
                self._at = now
            return self._value


def build_meter_provider(take_snapshot: Callable[[], Snapshot], exporter: MetricExporter,
                         interval_seconds: float) -> MeterProvider:
    """A MeterProvider whose instruments mirror the catalog and read ``take_snapshot``."""
    cache = SnapshotCache(take_snapshot)
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=interval_seconds * 1000)
    provider = MeterProvider(
        metric_readers=[reader],
        resource=Resource.create({"service.name": "llm-savings-exporter", "service.version": __version__}),
    )
    meter = provider.get_meter("llm-savings-exporter", __version__)

    def callback_for(name: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def callback(_options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(value, attributes) for attributes, value in cache.get().get(name, [])]

        return callback

    for spec in catalog.CATALOG:
        callbacks = [callback_for(spec.name)]
        if spec.type == "counter":
            meter.create_observable_counter(spec.family_name, callbacks, unit=spec.unit, description=spec.help)
        else:
            meter.create_observable_gauge(spec.name, callbacks, unit=spec.unit, description=spec.help)
    return provider


def snapshot_of(sidecar: Any) -> Snapshot:
    """Every series of the sidecar's catalog families, as OTel attributes and values."""
    out: Snapshot = {}
    with sidecar.series_view() as families:  # copied under the pipeline lock, read outside it
        for family, series in families:
            names = family.spec.labels
            out[family.spec.name] = [
                (dict(zip(names, values, strict=True)), float(value)) for values, value in series
            ]
    return out


def start_push(sidecar: Any) -> MeterProvider:
    """Start pushing the sidecar's counters to ``config.otlp_push.endpoint``."""
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    push = sidecar.config.otlp_push
    exporter = OTLPMetricExporter(endpoint=push.endpoint)
    return build_meter_provider(lambda: snapshot_of(sidecar), exporter, push.interval_seconds)
