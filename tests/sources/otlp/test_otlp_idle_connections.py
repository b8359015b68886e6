"""Idle keep-alive connections time out, and at the connection cap they are evicted first."""

from __future__ import annotations

import http.client
import socket
import time
from typing import Any

from opentelemetry.sdk.trace.export import SpanExportResult

from tests.sources.otlp.test_otlp_receiver import (
    PB,
    pb_body,
    sdk_exporter,
    spans,
    start,
    wait_until,
)

__all__ = ["spans", "start"]  # fixtures


def _keepalive(port: int, body: bytes) -> http.client.HTTPConnection:
    """A connection that did one export and now sits idle, kept alive."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("POST", "/v1/traces", body=body, headers={"Content-Type": PB})
    response = conn.getresponse()
    response.read()
    assert response.status == 200 and not response.will_close
    return conn


def test_idle_keepalive_connections_at_the_cap_do_not_block_an_export(
    start: Any, spans: dict[str, Any]
) -> None:
    rx = start(max_connections=4, idle_timeout=30.0)
    body = pb_body(spans)
    idle = [_keepalive(rx.port, body) for _ in range(2)]
    silent = [socket.create_connection(("127.0.0.1", rx.port), timeout=5) for _ in range(2)]
    try:
        wait_until(lambda: rx.stats.snapshot()["connections"] == 4)
        began = time.monotonic()
        for _ in range(3):  # the first takes an idle one's slot; shutdown frees it again
            exporter = sdk_exporter(rx)
            assert exporter.export(list(spans.values())) == SpanExportResult.SUCCESS
            exporter.shutdown()
        assert time.monotonic() - began < 5
    finally:
        for conn in idle:
            conn.close()
        for sock in silent:
            sock.close()
    snap = rx.stats.snapshot()
    assert snap["refused"]["evicted_idle"] >= 1
    assert snap["refused"]["connections"] == 0 and 503 not in snap["requests"]


def test_an_idle_keepalive_connection_is_closed_after_idle_timeout(
    start: Any, spans: dict[str, Any]
) -> None:
    rx = start(idle_timeout=0.5, request_timeout=30.0)
    conn = _keepalive(rx.port, pb_body(spans))
    try:
        assert conn.sock is not None
        conn.sock.settimeout(5)
        began = time.monotonic()
        assert conn.sock.recv(1) == b""  # the server closed it
        assert 0.3 <= time.monotonic() - began < 3
    finally:
        conn.close()
    wait_until(lambda: rx.stats.snapshot()["refused"]["idle_timeout"] == 1)
    wait_until(lambda: rx.stats.snapshot()["connections"] == 0)
