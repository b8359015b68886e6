"""Bodies in flight are bounded by ``max_inflight_bytes``: over it, 503 + Retry-After, body unread.

A reservation held on the server's budget stands in for requests in flight,
so every case is deterministic; the flood of real concurrent 15 MB bodies is
``tests/e2e/test_otlp_flood.py``.
"""

from __future__ import annotations

import gzip
import http.client
import socket
import threading
import tracemalloc
from typing import Any

from google.rpc.status_pb2 import Status
from opentelemetry.sdk.trace.export import SpanExportResult

from exporter.sources.otlp.body import DECODE_FACTOR, ByteBudget, OverBudget, Reservation
from tests.sources.otlp.test_otlp_receiver import (
    MODEL_CALLS,
    PB,
    Sink,
    pb_body,
    post,
    sdk_exporter,
    spans,
    start,
    wait_until,
)

__all__ = ["spans", "start"]  # fixtures


def _hold(rx: Any, n: int) -> Reservation:
    """A request in flight holding ``n`` bytes of the budget."""
    reservation = rx._server.budget.reservation()
    reservation.grow(n)
    return reservation


def test_over_budget_gets_503_with_retry_after_and_the_connection_stays_usable(
    start: Any, spans: dict[str, Any]
) -> None:
    rx = start(max_inflight_bytes=100_000, retry_after=1)
    body = pb_body(spans)
    held = _hold(rx, 100_000 - len(body))  # not enough room left for body + decode estimate
    conn = http.client.HTTPConnection("127.0.0.1", rx.port, timeout=5)
    try:
        conn.request("POST", "/v1/traces", body=body, headers={"Content-Type": PB})
        first = conn.getresponse()
        payload = first.read()
        assert first.status == 503 and first.getheader("Retry-After") == "1"
        assert Status.FromString(payload).code == 14  # UNAVAILABLE
        held.release()
        conn.request("POST", "/v1/traces", body=body, headers={"Content-Type": PB})
        second = conn.getresponse()  # same connection: the refused body was drained
        second.read()
        assert second.status == 200
    finally:
        conn.close()
    snap = rx.stats.snapshot()
    assert snap["refused"]["memory_budget"] == 1
    assert snap["requests"] == {503: 1, 200: 1}
    wait_until(lambda: rx.stats.snapshot()["inflight_bytes"] == 0)


def test_the_refused_body_is_not_read_into_memory(start: Any) -> None:
    rx = start(max_inflight_bytes=1 << 20, max_body_bytes=16 << 20)
    held = _hold(rx, 1 << 20)
    body = bytes(8 << 20)
    tracemalloc.start()
    try:
        status, headers, _ = post(rx, body)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        held.release()
    assert status == 503 and headers["retry-after"] == "1"
    # the client's own 8 MiB body is not traced (allocated before start); the server's
    # drain uses a 64 KiB buffer, so nothing near 8 MiB was allocated while it ran
    assert peak < 2 << 20


def test_the_sdk_exporter_honours_retry_after_and_succeeds_once_memory_frees(
    start: Any, spans: dict[str, Any]
) -> None:
    sink = Sink()
    rx = start(sink, max_inflight_bytes=10_000, retry_after=1)
    held = _hold(rx, 10_000)
    outcome: list[SpanExportResult] = []
    thread = threading.Thread(
        target=lambda: outcome.append(sdk_exporter(rx).export(list(spans.values())))
    )
    thread.start()
    try:
        wait_until(lambda: rx.stats.snapshot()["refused"]["memory_budget"] >= 1)
    finally:
        held.release()
    thread.join(15)
    assert outcome == [SpanExportResult.SUCCESS]
    wait_until(lambda: len(sink.records) == len(MODEL_CALLS))


def test_a_request_alone_is_admitted_even_over_the_budget(
    start: Any, spans: dict[str, Any]
) -> None:
    rx = start(max_inflight_bytes=1)  # a body up to max_body_bytes is never refused forever
    assert post(rx, pb_body(spans))[0] == 200


def test_chunked_body_growing_past_the_budget_is_cut(start: Any) -> None:
    rx = start(max_inflight_bytes=200_000)
    held = _hold(rx, 120_000)
    try:
        with socket.create_connection(("127.0.0.1", rx.port), timeout=5) as sock:
            sock.sendall(
                b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
            )
            chunk = bytes(50_000)
            framed = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
            sock.sendall(framed)  # 50 kB fits beside the 120 kB held
            sock.sendall(framed)  # 100 kB more does not
            response = sock.recv(65536)
    finally:
        held.release()
    assert response.startswith(b"HTTP/1.1 503")
    assert b"Retry-After: 1" in response and b"Connection: close" in response
    assert rx.stats.snapshot()["refused"]["memory_budget"] == 1


def test_inflated_size_counts_against_the_budget(start: Any) -> None:
    rx = start(max_inflight_bytes=4 << 20)
    bomb = gzip.compress(bytes(3 << 20))  # ~3 kB on the wire, 3 MiB inflated
    held = _hold(rx, 2 << 20)
    try:
        status, headers, _ = post(rx, bomb, PB, {"Content-Encoding": "gzip"})
    finally:
        held.release()
    assert status == 503 and headers["retry-after"] == "1"
    wait_until(lambda: rx.stats.snapshot()["inflight_bytes"] == 0)


def test_byte_budget_arithmetic() -> None:
    budget = ByteBudget(100)
    first, second = budget.reservation(), budget.reservation()
    first.grow(150)  # alone: admitted over the limit
    try:
        second.grow(1)
        raise AssertionError("second reservation should not fit")
    except OverBudget:
        pass
    first.grow(-100)
    second.grow(40)
    assert budget.used == 90
    with first, second:
        pass
    assert budget.used == 0
    assert DECODE_FACTOR >= 1
