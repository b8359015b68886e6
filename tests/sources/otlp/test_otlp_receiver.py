"""OTLP/HTTP receiver end to end: the real OTel SDK exporter against a running receiver.

Every status of the OTLP/HTTP spec the receiver answers is provoked here with
a real client (the SDK exporter, or http.client / raw sockets for what the SDK
never sends), and a real Pipeline counts what a sink receives.
"""

from __future__ import annotations

import base64
import gzip
import http.client
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
from google.protobuf import json_format
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace.export import SpanExportResult

from exporter.engine.pipeline import Pipeline
from exporter.prices.table import parse_price_table
from exporter.sources.otlp.http import BadBody, BodyTooLarge, OtlpReceiver, inflate_capped
from tests.fixtures.otlp.spans import END_NS, MODEL_CALLS, expected, make_spans, otlp_json_body

PB = "application/x-protobuf"
JSON = "application/json"


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll with a deadline (never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached before the deadline")
        time.sleep(0.005)


class Sink:
    def __init__(self, block: threading.Event | None = None) -> None:
        self.batches: list[tuple[list[dict[str, Any]], str]] = []
        self.rejects: list[tuple[str, str, float | None]] = []
        self.block = block
        self.entered = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, records: list[dict[str, Any]], source: str) -> None:
        self.entered.set()
        if self.block is not None:
            self.block.wait(30)
        with self._lock:
            self.batches.append((records, source))

    def reject(self, reason: str, source: str, ts: float | None) -> None:
        with self._lock:
            self.rejects.append((reason, source, ts))

    @property
    def records(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r for batch, _ in self.batches for r in batch]


@pytest.fixture
def start() -> Iterator[Callable[..., OtlpReceiver]]:
    started: list[OtlpReceiver] = []

    def _start(sink: Any = None, **kw: Any) -> OtlpReceiver:
        sink = sink if sink is not None else Sink()
        reject = getattr(sink, "reject", None)
        rx = OtlpReceiver(sink, "127.0.0.1", 0, reject=reject, **kw)
        rx.start()
        started.append(rx)
        return rx

    yield _start
    for rx in started:
        rx.stop()


@pytest.fixture(scope="module")
def spans() -> dict[str, Any]:
    return make_spans()


def post(
    rx: OtlpReceiver,
    body: bytes,
    content_type: str | None = PB,
    headers: dict[str, str] | None = None,
    path: str = "/v1/traces",
    method: str = "POST",
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", rx.port, timeout=10)
    try:
        hdrs = dict(headers or {})
        if content_type is not None:
            hdrs["Content-Type"] = content_type
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def pb_body(spans: dict[str, Any]) -> bytes:
    return bytes(encode_spans(list(spans.values())).SerializeToString())


def sdk_exporter(rx: OtlpReceiver, **kw: Any) -> OTLPSpanExporter:
    return OTLPSpanExporter(endpoint=rx.url, timeout=10, **kw)


def by_request_id(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["request_id"]: r for r in records}


# --- the happy path with the real SDK exporter --------------------------------------------------


def test_sdk_exporter_protobuf_spans_become_records(start: Any, spans: dict[str, Any]) -> None:
    sink = Sink()
    rx = start(sink)
    assert sdk_exporter(rx).export(list(spans.values())) == SpanExportResult.SUCCESS
    wait_until(lambda: len(sink.records) == len(MODEL_CALLS))
    got = by_request_id(sink.records)
    for name in MODEL_CALLS:
        want = expected(name, spans[name])
        assert got[want["request_id"]] == want, name
    assert {source for _, source in sink.batches} == {"otlp"}
    stats = rx.stats.snapshot()
    assert stats["requests"] == {200: 1}
    assert stats["spans_accepted"] == len(MODEL_CALLS)
    assert stats["spans_ignored"] == {"agent_rollup": 3, "not_model_call": 1}
    assert stats["spans_rejected"] == {}


def test_sdk_exporter_gzip(start: Any, spans: dict[str, Any]) -> None:
    sink = Sink()
    rx = start(sink)
    exporter = sdk_exporter(rx, compression=Compression.Gzip)
    assert exporter.export(list(spans.values())) == SpanExportResult.SUCCESS
    wait_until(lambda: len(sink.records) == len(MODEL_CALLS))
    stats = rx.stats.snapshot()
    assert 0 < stats["bytes_received"] < stats["bytes_decoded"]


def test_deflate_body(start: Any, spans: dict[str, Any]) -> None:
    sink = Sink()
    rx = start(sink)
    status, _, _ = post(rx, zlib.compress(pb_body(spans)), headers={"Content-Encoding": "deflate"})
    assert status == 200
    wait_until(lambda: len(sink.records) == len(MODEL_CALLS))


def test_otlp_json_body_and_json_response(start: Any, spans: dict[str, Any]) -> None:
    sink = Sink()
    rx = start(sink)
    body = orjson.dumps(otlp_json_body(list(spans.values())))
    status, headers, payload = post(rx, gzip.compress(body), JSON, {"Content-Encoding": "gzip"})
    assert status == 200
    assert headers["content-type"] == JSON
    assert orjson.loads(payload) == {}
    wait_until(lambda: len(sink.records) == len(MODEL_CALLS))
    got = by_request_id(sink.records)
    for name in MODEL_CALLS:
        assert got[expected(name, spans[name])["request_id"]] == expected(name, spans[name])


def test_protobuf_response_is_an_export_response(start: Any, spans: dict[str, Any]) -> None:
    rx = start()
    status, headers, payload = post(rx, pb_body(spans))
    assert status == 200 and headers["content-type"] == PB
    response = ExportTraceServiceResponse.FromString(payload)
    assert not response.HasField("partial_success")


def test_retried_export_yields_identical_request_ids(start: Any, spans: dict[str, Any]) -> None:
    sink = Sink()
    rx = start(sink)
    exporter = sdk_exporter(rx)
    batch = list(spans.values())
    assert exporter.export(batch) == SpanExportResult.SUCCESS
    assert exporter.export(batch) == SpanExportResult.SUCCESS
    wait_until(lambda: len(sink.batches) == 2)
    first, second = ([r["request_id"] for r in records] for records, _ in sink.batches)
    assert first == second and len(set(first)) == len(MODEL_CALLS)


PRICES = """
schema: llm-savings-prices/v1
versions:
  - version: "2026-01-01"
    effective_from: "2026-01-01T00:00:00Z"
    source: "test"
    families:
      openai: {}
    models:
      gpt-4o:
        family: openai
        aliases: [gpt-4o-2024-08-06]
        input: 2.50
        output: 10.00
        cache_read: 1.25
"""


def test_real_pipeline_counts_spans_once_and_dedupes_the_retry(
    start: Any, spans: dict[str, Any]
) -> None:
    pipeline = Pipeline(parse_price_table(PRICES, "prices.yaml"))

    def sink(records: list[dict[str, Any]], source: str) -> None:
        with pipeline.lock:
            for record in records:
                pipeline.ingest_object(record, source)

    rx = OtlpReceiver(sink, "127.0.0.1", 0, reject=pipeline.reject)
    rx.start()
    try:
        exporter = sdk_exporter(rx)
        batch = list(spans.values())
        assert exporter.export(batch) == SpanExportResult.SUCCESS
        assert exporter.export(batch) == SpanExportResult.SUCCESS  # a retried export
        bad = ExportTraceServiceRequest()
        span = (
            bad.resource_spans.add()
            .scope_spans.add()
            .spans.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 8)
        )
        span.end_time_unix_nano = END_NS
        span.attributes.add(key="gen_ai.request.model").value.string_value = "gpt-4o"
        span.attributes.add(key="gen_ai.usage.input_tokens").value.int_value = -3
        assert post(rx, bad.SerializeToString())[0] == 200

        def totals() -> dict[str, Any]:
            with pipeline.lock:
                return pipeline.aggregates.month_totals().get("2026-11", {})

        wait_until(
            lambda: totals().get("duplicates") == len(MODEL_CALLS) and totals().get("rejected") == 1
        )
    finally:
        rx.stop()
    month = totals()
    assert month["requests"] == len(MODEL_CALLS)
    assert month["fresh_input_tokens"] == 464 + 100 + 100 + 176 + 288 + 200 + 4299 + 6000
    assert month["cache_read_tokens"] == 1536 + 3000 + 500 + 1024 + 512 + 35574
    assert month["cache_write_tokens"] == 1200 + 300 + 1733 + 17787
    assert month["output_tokens"] == 150 + 250 + 60 + 300 + 40 + 90 + 631 + 400
    assert month["tokens_saved"] == 3000 and month["would_have_saved_tokens"] == 120
    # gpt-4o-2024-08-06 is priced (two spans), everything else is unpriced
    assert month["unpriced"] == len(MODEL_CALLS) - 2
    spend = ((464 + 288) * 2.5 + (1536 + 512) * 1.25 + (150 + 40) * 10.0) / 1e6
    assert month["spend_usd"] == pytest.approx(spend)
    assert pipeline.aggregates.rejected == {("2026-11", "invalid_count"): 1}


# --- partial success ----------------------------------------------------------------------------


def _mixed_request() -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for index, tokens in enumerate((10, -1, 20)):
        span = scope.spans.add(trace_id=bytes([index + 1]) * 16, span_id=bytes([index + 1]) * 8)
        span.end_time_unix_nano = END_NS
        span.attributes.add(key="gen_ai.request.model").value.string_value = "gpt-4o"
        span.attributes.add(key="gen_ai.usage.input_tokens").value.int_value = tokens
    scope.spans.add(
        trace_id=b"\x09" * 16, span_id=b"\x09" * 8, name="GET /"
    )  # ignored, not rejected
    return request


def test_partial_success_protobuf(start: Any) -> None:
    sink = Sink()
    rx = start(sink)
    status, headers, payload = post(rx, _mixed_request().SerializeToString())
    assert status == 200 and headers["content-type"] == PB
    partial = ExportTraceServiceResponse.FromString(payload).partial_success
    assert partial.rejected_spans == 1
    assert partial.error_message == "1 spans rejected (invalid_count=1)"
    wait_until(lambda: len(sink.rejects) == 1 and len(sink.records) == 2)
    assert sink.rejects == [("invalid_count", "otlp", END_NS / 1e9)]
    stats = rx.stats.snapshot()
    assert stats["spans_rejected"] == {"invalid_count": 1} and stats["spans_ignored"] == {
        "not_model_call": 1
    }


def test_partial_success_json(start: Any) -> None:
    rx = start()
    doc = json_format.MessageToDict(_mixed_request())
    for span in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for key in ("traceId", "spanId"):
            span[key] = base64.b64decode(span[key]).hex()
    status, headers, payload = post(rx, orjson.dumps(doc), JSON)
    assert status == 200 and headers["content-type"] == JSON
    assert orjson.loads(payload) == {
        "partialSuccess": {
            "rejectedSpans": "1",
            "errorMessage": "1 spans rejected (invalid_count=1)",
        }
    }


# --- errors -------------------------------------------------------------------------------------


def test_400_undecodable_bodies(start: Any) -> None:
    rx = start()
    status, headers, payload = post(rx, b"\xff\xff\xff\xff", PB)
    assert status == 400 and headers["content-type"] == PB
    assert Status.FromString(payload).code == 3  # INVALID_ARGUMENT
    status, headers, payload = post(rx, b"{not json", JSON)
    assert status == 400 and orjson.loads(payload)["code"] == 3
    status, _, _ = post(rx, b"\x1f\x8b garbage", PB, {"Content-Encoding": "gzip"})
    assert status == 400
    status, _, _ = post(
        rx, gzip.compress(b"abc")[:-6], PB, {"Content-Encoding": "gzip"}
    )  # truncated
    assert status == 400
    assert rx.stats.snapshot()["requests"] == {400: 4}


def test_401_bearer_token(start: Any, spans: dict[str, Any]) -> None:
    sink = Sink()
    rx = start(sink, bearer_token="s3cret")
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
        status, got, _ = post(rx, pb_body(spans), headers=headers)
        assert status == 401 and got["www-authenticate"] == "Bearer"
    assert sdk_exporter(rx, headers={"Authorization": "Bearer s3cret"}).export(
        list(spans.values())
    ) == (SpanExportResult.SUCCESS)
    wait_until(lambda: len(sink.records) == len(MODEL_CALLS))
    assert sdk_exporter(rx).export(list(spans.values())) == SpanExportResult.FAILURE


def test_413_content_length_over_the_cap_is_refused_before_reading(start: Any) -> None:
    rx = start(max_body_bytes=1000)
    sock = socket.create_connection(("127.0.0.1", rx.port), timeout=5)
    with sock:
        sock.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            b"Content-Length: 5000000\r\n\r\n"
        )
        response = sock.recv(65536)
    assert response.startswith(b"HTTP/1.1 413")


def test_413_gzip_bomb_stops_at_the_cap_without_inflating_it(start: Any) -> None:
    cap = 1 << 20
    rx = start(max_body_bytes=cap)
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    bomb = b"".join(packer.compress(zeros) for _ in range(64)) + packer.flush()  # 64 MiB inflated
    assert len(bomb) < cap
    tracemalloc.start()
    try:
        status, _, _ = post(rx, bomb, PB, {"Content-Encoding": "gzip"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert status == 413
    assert peak < 8 * cap  # the 64 MiB never exist in memory


def test_inflate_capped_exact_limits() -> None:
    data = b"x" * 1000
    assert inflate_capped(gzip.compress(data), 16 + zlib.MAX_WBITS, 1000) == data
    with pytest.raises(BodyTooLarge):
        inflate_capped(gzip.compress(data), 16 + zlib.MAX_WBITS, 999)
    with pytest.raises(BadBody):
        inflate_capped(gzip.compress(data)[:-4], 16 + zlib.MAX_WBITS, 10_000)
    with pytest.raises(BadBody):
        inflate_capped(gzip.compress(data) + b"junk", 16 + zlib.MAX_WBITS, 10_000)


def test_415_wrong_content_type_or_encoding(start: Any, spans: dict[str, Any]) -> None:
    rx = start()
    assert post(rx, pb_body(spans), "text/plain")[0] == 415
    assert post(rx, pb_body(spans), None)[0] == 415
    status, headers, _ = post(rx, pb_body(spans), JSON, {"Content-Encoding": "br"})
    assert status == 415 and headers["content-type"] == JSON
    assert post(rx, pb_body(spans), "application/x-protobuf; charset=binary")[0] == 200


def test_405_and_404(start: Any) -> None:
    rx = start()
    status, headers, _ = post(rx, b"", None, method="GET")
    assert status == 405 and headers["allow"] == "POST"
    assert post(rx, b"", None, method="PUT")[0] == 405
    assert post(rx, b"x", PB, path="/v1/logs")[0] == 404
    assert post(rx, b"", None, path="/", method="GET")[0] == 404


def test_error_then_keepalive_request_on_the_same_connection(
    start: Any, spans: dict[str, Any]
) -> None:
    rx = start()
    conn = http.client.HTTPConnection("127.0.0.1", rx.port, timeout=5)
    try:
        conn.request("POST", "/v1/metrics", body=b"abc", headers={"Content-Type": PB})
        first = conn.getresponse()
        first.read()
        conn.request("POST", "/v1/traces", body=pb_body(spans), headers={"Content-Type": PB})
        second = conn.getresponse()
        second.read()
    finally:
        conn.close()
    assert (first.status, second.status) == (404, 200)


def test_chunked_body(start: Any, spans: dict[str, Any]) -> None:
    sink = Sink()
    rx = start(sink)
    body = pb_body(spans)
    conn = http.client.HTTPConnection("127.0.0.1", rx.port, timeout=5)
    try:
        conn.request(
            "POST",
            "/v1/traces",
            body=iter([body[:100], body[100:]]),
            headers={"Content-Type": PB},
            encode_chunked=True,
        )
        status = conn.getresponse().status
    finally:
        conn.close()
    assert status == 200
    wait_until(lambda: len(sink.records) == len(MODEL_CALLS))


def test_429_when_the_queue_is_full_then_the_sdk_retry_succeeds(
    start: Any, spans: dict[str, Any]
) -> None:
    release = threading.Event()
    sink = Sink(block=release)
    rx = start(sink, queue_size=1, retry_after=1)
    body = pb_body(spans)
    try:
        assert post(rx, body)[0] == 200
        wait_until(sink.entered.is_set)  # the dispatcher holds batch 1 inside the sink
        assert post(rx, body)[0] == 200  # batch 2 fills the queue
        status, headers, payload = post(rx, body)
        assert status == 429 and headers["retry-after"] == "1"
        assert Status.FromString(payload).code == 8  # RESOURCE_EXHAUSTED
        outcome: list[SpanExportResult] = []
        thread = threading.Thread(
            target=lambda: outcome.append(sdk_exporter(rx).export(list(spans.values())))
        )
        thread.start()
        wait_until(lambda: rx.stats.snapshot()["queue_full"] >= 2)  # the SDK met a 429 too
    finally:
        release.set()
    thread.join(15)
    assert outcome == [SpanExportResult.SUCCESS]  # it honoured Retry-After and retried
    wait_until(lambda: len(sink.batches) == 3)


def test_503_when_every_connection_is_busy_and_none_can_be_evicted(
    start: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from exporter.sources.otlp import limits

    monkeypatch.setattr(limits, "SHED_AFTER_SECONDS", 60.0)  # the holder is too young to evict
    rx = start(max_connections=1, idle_timeout=10)
    holder = socket.create_connection(("127.0.0.1", rx.port), timeout=5)
    try:
        holder.sendall(b"POST /v1/traces HTTP/1.1\r\n")  # holds the only connection slot
        wait_until(
            lambda: bool(rx._server)
            and [c.phase for c in rx._server._conns.values()] == ["reading"]
        )
        status, headers, _ = post(rx, b"", PB)
        assert status == 503 and headers["retry-after"] == "1"
        assert rx.stats.snapshot()["connections_refused"] == 1
    finally:
        holder.close()


def test_slow_loris_is_cut_off_at_the_request_deadline(start: Any) -> None:
    rx = start(request_timeout=1.0, idle_timeout=5.0)
    sock = socket.create_connection(("127.0.0.1", rx.port), timeout=5)
    began = time.monotonic()
    closed_after = None
    with sock:
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
        sock.settimeout(0.1)
        while time.monotonic() - began < 5:
            try:
                sock.sendall(b"X")  # one header byte every 100 ms, forever
                if sock.recv(1) == b"":
                    closed_after = time.monotonic() - began
                    break
            except TimeoutError:
                continue
            except OSError:
                closed_after = time.monotonic() - began
                break
    assert closed_after is not None and 0.9 <= closed_after < 4.0  # deadline 1 s + reaper tick
    wait_until(lambda: rx.stats.snapshot()["connections_reaped"] == 1)


def test_silent_client_times_out(start: Any) -> None:
    rx = start(idle_timeout=0.3, request_timeout=30)
    sock = socket.create_connection(("127.0.0.1", rx.port), timeout=5)
    began = time.monotonic()
    with sock:
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\n")
        data = sock.recv(1024)  # the server gives up and closes
    assert data == b"" or data.startswith(b"HTTP/1.1 408")
    assert time.monotonic() - began < 3


def test_stop_delivers_what_was_queued_then_refuses(start: Any, spans: dict[str, Any]) -> None:
    sink = Sink()
    rx = OtlpReceiver(sink, "127.0.0.1", 0)
    rx.start()
    port = rx.port
    assert post(rx, pb_body(spans))[0] == 200
    rx.stop()
    assert len(sink.records) == len(MODEL_CALLS)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_expect_100_continue(start: Any, spans: dict[str, Any]) -> None:
    rx = start(max_body_bytes=1 << 20)
    body = pb_body(spans)
    head = (
        "POST /v1/traces HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/x-protobuf\r\nExpect: 100-continue\r\n"
    )
    with socket.create_connection(("127.0.0.1", rx.port), timeout=5) as sock:
        sock.sendall(f"{head}Content-Length: {10 << 20}\r\n\r\n".encode())
        assert sock.recv(65536).startswith(b"HTTP/1.1 413")  # refused before any byte of the body
    with socket.create_connection(("127.0.0.1", rx.port), timeout=5) as sock:
        sock.sendall(f"{head}Content-Length: {len(body)}\r\n\r\n".encode())
        assert sock.recv(65536).startswith(b"HTTP/1.1 100")
        sock.sendall(body)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")


def test_a_two_argument_reject_callable_is_supported(start: Any) -> None:
    seen: list[tuple[str, str]] = []
    sink = Sink()
    rx = OtlpReceiver(
        sink, "127.0.0.1", 0, reject=lambda reason, source: seen.append((reason, source))
    )
    rx.start()
    try:
        assert post(rx, _mixed_request().SerializeToString())[0] == 200
        wait_until(lambda: seen == [("invalid_count", "otlp")] and len(sink.records) == 2)
    finally:
        rx.stop()
    assert rx.stats.snapshot()["sink_errors"] == 0


def test_411_without_content_length_and_400_on_bad_framing(start: Any) -> None:
    rx = start()
    head = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
    with socket.create_connection(("127.0.0.1", rx.port), timeout=5) as sock:
        sock.sendall(head + b"\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 411")
    with socket.create_connection(("127.0.0.1", rx.port), timeout=5) as sock:
        sock.sendall(head + b"Content-Length: nope\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 400")
    with socket.create_connection(("127.0.0.1", rx.port), timeout=5) as sock:
        sock.sendall(head + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 400")
