"""The OTLP server's connection limits: the capped connection registry, deadlines, heap trim.

``ConnectionServer`` (the base of ``exporter.sources.otlp.server.TraceServer``)
keeps one ``Conn`` per accepted socket, one thread each, evicts at the cap,
and its handler reads each socket through a ``DeadlineReader``; what each
limit does is described in ``exporter.sources.otlp.server``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import io
import logging
import math
import socket
import socketserver
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import HTTPServer
from typing import Any

from exporter.sources.otlp.body import ByteBudget

log = logging.getLogger(__name__)

# Why a request was refused or a connection cut (the bounded `reason` label).
REFUSAL_REASONS = (
    "memory_budget",  # 503: the in-flight byte budget could not cover the request
    "queue_full",  # 429: the queue to the pipeline thread is full
    "stopping",  # 503: the receiver is shutting down
    "connections",  # 503: at max_connections with nothing to evict
    "evicted_idle",  # an idle keep-alive connection closed to make room at the cap
    "evicted_slow",  # the slowest incomplete request cut to make room at the cap
    "slow_sender",  # request not in within request_timeout, or stalled for idle_timeout
    "idle_timeout",  # keep-alive connection idle for idle_timeout
)
SHED_AFTER_SECONDS = 1.0  # a request still arriving after this long may be evicted at the cap

IDLE, READING, WORKING = "idle", "reading", "working"
TRIM_AFTER_BYTES = 8 << 20  # after a request that held this much, freed heap goes back to the OS


def _load_malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to trim
        return None
    return trim


_MALLOC_TRIM = _load_malloc_trim()


def trim_heap() -> None:
    """Give freed heap back to the OS (glibc keeps a big body's pages in per-thread arenas)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


@dataclass(eq=False)
class Conn:
    """One connection's phase and deadline; guarded by ``TraceServer._lock``."""

    sock: socket.socket
    phase: str
    since: float  # when the phase began
    deadline: float
    received: int = 0  # bytes of the current request
    evicted: bool = False
    cut: str | None = None  # the refusal reason of a deadline that passed


class DeadlineReader(io.RawIOBase):
    """The socket's reads, each bounded by the connection's deadline (and stall timeout).

    The first byte of a request moves the connection from idle to reading, so
    the request deadline runs from there; a deadline that has passed raises
    ``TimeoutError`` before any further read, however slowly the bytes trickle.
    """

    def __init__(self, server: Any, conn: Conn) -> None:  # server: TraceServer
        super().__init__()
        self._server = server
        self._conn = conn
        self._sock = conn.sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        server, conn = self._server, self._conn
        remaining = conn.deadline - server.receiver.clock()
        if conn.phase == READING:
            remaining = min(remaining, server.receiver.idle_timeout)
        if remaining <= 0 or conn.evicted:
            return self._expired()
        self._sock.settimeout(remaining)
        try:
            n = self._sock.recv_into(buffer)
        except TimeoutError:
            return self._expired()
        if n and conn.phase == IDLE:
            server.phase(conn, READING)
        conn.received += n
        return n

    def _expired(self) -> int:
        conn = self._conn
        if not conn.evicted:
            conn.cut = "idle_timeout" if conn.phase == IDLE else "slow_sender"
        raise TimeoutError("connection deadline passed")


class ConnectionServer(HTTPServer):
    """HTTPServer with one thread per connection, a connection cap and per-connection deadlines."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, receiver: Any, address: tuple[str, int], handler: Any) -> None:
        self.receiver = receiver  # an OtlpReceiver
        self.budget = ByteBudget(receiver.max_inflight_bytes)
        self._conns: dict[socket.socket, Conn] = {}
        self._lock = threading.Lock()
        super().__init__(address, handler)

    def server_bind(self) -> None:
        """Like HTTPServer.server_bind without the reverse DNS lookup of getfqdn."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._conns)

    def sockets(self) -> list[socket.socket]:
        """The accepted sockets open now (tests read their options)."""
        with self._lock:
            return list(self._conns)

    # -- the connection cap
    def process_request(self, request: Any, client_address: Any) -> None:
        receiver = self.receiver
        now = receiver.clock()
        victim: Conn | None = None
        with self._lock:
            if len(self._conns) >= receiver.max_connections:
                victim = self._victim(now)
                if victim is not None:
                    victim.evicted = True
                    del self._conns[victim.sock]
            if victim is not None or len(self._conns) < receiver.max_connections:
                conn = Conn(request, IDLE, now, now + receiver.idle_timeout)
                self._conns[request] = conn
            else:
                conn = None
        if victim is not None:
            receiver.stats.refuse("evicted_idle" if victim.phase == IDLE else "evicted_slow")
            with contextlib.suppress(OSError):
                victim.sock.shutdown(socket.SHUT_RDWR)
        if conn is None:
            receiver.stats.refuse("connections")
            receiver.stats.status(503)
            try:
                request.settimeout(1.0)
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: "
                    + str(receiver.retry_after).encode()
                    + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
            except OSError:
                pass
            self.shutdown_request(request)
            return
        thread = threading.Thread(target=self._work, args=(request, client_address), daemon=True)
        thread.start()

    def _victim(self, now: float) -> Conn | None:
        """The longest-idle connection, else the slowest request arriving for a while."""
        idle = [c for c in self._conns.values() if c.phase == IDLE]
        if idle:
            return min(idle, key=lambda c: c.since)
        slow = [
            c
            for c in self._conns.values()
            if c.phase == READING and now - c.since >= SHED_AFTER_SECONDS
        ]
        if slow:
            return min(slow, key=lambda c: c.received / max(now - c.since, 1e-9))
        return None

    def conn(self, request: socket.socket) -> Conn:
        with self._lock:
            found = self._conns.get(request)
        if found is None:  # evicted before its thread started
            now = self.receiver.clock()
            return Conn(request, IDLE, now, now, evicted=True)
        return found

    def phase(self, conn: Conn, phase: str) -> None:
        """Enter ``phase``: idle and reading get their deadline, working none."""
        now = self.receiver.clock()
        with self._lock:
            conn.phase, conn.since, conn.received = phase, now, 0
            if phase == IDLE:
                conn.deadline = now + self.receiver.idle_timeout
            elif phase == READING:
                conn.deadline = now + self.receiver.request_timeout
            else:
                conn.deadline = math.inf

    def _work(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # a handler bug must not leak the connection
            log.exception("OTLP handler failed")
        finally:
            with self._lock:
                self._conns.pop(request, None)
            self.shutdown_request(request)


__all__ = [
    "IDLE",
    "READING",
    "REFUSAL_REASONS",
    "SHED_AFTER_SECONDS",
    "TRIM_AFTER_BYTES",
    "WORKING",
    "Conn",
    "ConnectionServer",
    "DeadlineReader",
    "trim_heap",
]
