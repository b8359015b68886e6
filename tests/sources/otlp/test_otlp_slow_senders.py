"""Slow senders (1 byte/s) are cut at the request deadline and never starve a legitimate export."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest
from opentelemetry.sdk.trace.export import SpanExportResult

from exporter.sources.otlp import limits
from tests.sources.otlp.test_otlp_receiver import (
    MODEL_CALLS,
    Sink,
    sdk_exporter,
    spans,
    start,
    wait_until,
)

__all__ = ["spans", "start"]  # fixtures

HEAD = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"


class Trickler:
    """Raw sockets sending a request one byte per second; records when each is cut."""

    def __init__(self, port: int, count: int) -> None:
        self.socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]
        self.cut_after: list[float] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(s,)) for s in self.socks]
        for thread in self._threads:
            thread.start()

    def _run(self, sock: socket.socket) -> None:
        began = time.monotonic()
        payload = HEAD + b"Content-Length: 100\r\n\r\n" + bytes(100)
        for byte in payload:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            # paces the slow sender: one byte per second (its whole point), checking for the cut
            if self._stop.wait(1.0) or _closed(sock):
                break
        with self._lock:
            if not self._stop.is_set():
                self.cut_after.append(time.monotonic() - began)

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(10)
        for sock in self.socks:
            sock.close()


def _closed(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (EOF or reset), without blocking."""
    sock.setblocking(False)
    try:
        return sock.recv(1024, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        sock.setblocking(True)


def test_slow_senders_are_cut_at_the_deadline_while_an_export_succeeds(
    start: Any, spans: dict[str, Any]
) -> None:
    sink = Sink()
    rx = start(sink, request_timeout=2.0, idle_timeout=5.0, max_connections=32)
    slow = Trickler(rx.port, 20)
    try:
        wait_until(lambda: rx.stats.snapshot()["connections"] >= 20)
        began = time.monotonic()
        assert sdk_exporter(rx).export(list(spans.values())) == SpanExportResult.SUCCESS
        assert time.monotonic() - began < 1.5  # served at once, not after the slow ones
        wait_until(lambda: len(slow.cut_after) == 20, timeout=15)
    finally:
        slow.close()
    # each is cut at its 2 s deadline although a byte arrives every second (+1 s pacing tick)
    assert all(1.5 <= after < 4.5 for after in slow.cut_after), slow.cut_after
    assert rx.stats.snapshot()["refused"]["slow_sender"] == 20
    wait_until(lambda: len(sink.records) == len(MODEL_CALLS))


def test_at_the_cap_the_slowest_sender_is_evicted_for_a_new_export(
    start: Any, spans: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "SHED_AFTER_SECONDS", 0.2)
    rx = start(request_timeout=30.0, idle_timeout=30.0, max_connections=4)
    slow = Trickler(rx.port, 4)  # every slot held by a slow sender, none near its deadline
    try:
        def all_evictable() -> bool:
            conns = list(rx._server._conns.values())
            now = rx.clock()
            return len(conns) == 4 and all(
                c.phase == "reading" and now - c.since > 0.2 for c in conns
            )

        wait_until(all_evictable)
        began = time.monotonic()
        assert sdk_exporter(rx).export(list(spans.values())) == SpanExportResult.SUCCESS
        assert time.monotonic() - began < 5
        wait_until(lambda: len(slow.cut_after) >= 1)
    finally:
        slow.close()
    refused = rx.stats.snapshot()["refused"]
    assert refused["evicted_slow"] >= 1 and refused["connections"] == 0
