"""The optional OTLP metrics push sends the numbers /metrics serves, to a real OTLP/HTTP endpoint."""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

from exporter.sidecar.sidecar import Sidecar
from tests.support.sidecar import WALL, drain, make_config, record_line


class _Collector(BaseHTTPRequestHandler):
    received: ClassVar[list[ExportMetricsServiceRequest]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        type(self).received.append(request)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def _points(request: ExportMetricsServiceRequest) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                data = metric.sum if metric.HasField("sum") else metric.gauge
                for point in data.data_points:
                    attrs = {kv.key: kv.value.string_value for kv in point.attributes}
                    value = point.as_double if point.HasField("as_double") else float(point.as_int)
                    out.setdefault(metric.name, []).append((attrs, value))
    return out


def test_push_sends_the_same_counters(tmp_path: Path) -> None:
    _Collector.received = []
    server = HTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_bytes(b"".join(record_line(i) for i in range(30)))
    endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1/metrics"
    config = make_config(tmp_path, otlp_push={"enabled": True, "endpoint": endpoint, "interval_seconds": 3600})
    sidecar = Sidecar(config, wall_clock=lambda: WALL)
    try:
        drain(sidecar)
        from exporter.exposition.otlp_push import start_push

        provider = start_push(sidecar)
        assert provider.force_flush(timeout_millis=10_000)
        provider.shutdown()
    finally:
        sidecar.close()
        server.shutdown()
    assert _Collector.received, "nothing was pushed"
    points = _points(_Collector.received[-1])  # cumulative: the last export holds the totals
    requests = points["llm_savings_requests"]
    assert sum(v for _, v in requests) == 30
    assert {a["month"] for a, _ in requests} == {"2026-11"}
    with sidecar.pipeline.lock:
        totals = sidecar.pipeline.aggregates.month_totals()["2026-11"]
    pushed_usd = sum(v for _, v in points["llm_savings_usd_saved"])
    assert abs(pushed_usd - totals["usd_saved"]) < 1e-9
    assert sum(v for a, v in points["llm_savings_prompt_tokens"] if a["tier"] == "cache_read") == 30 * 300
