"""The OTLP/HTTP server: one thread per connection, a connection cap that sheds idle ones first.

``POST /v1/traces`` only; the status codes it answers are the package's
contract (``exporter.sources.otlp``). Handlers (one thread per connection,
at most ``max_connections`` connections) read the body
(``exporter.sources.otlp.body``), decode and map it, and hand the result to
the receiver's queue (``OtlpReceiver.enqueue``). No span content is logged.

Limits, each counted in ``ReceiverStats.refused`` by reason:

- memory: a request reserves its bytes (body, inflated body, decode working
  set) from the in-flight ``ByteBudget`` before reading them; over it, 503 +
  ``Retry-After`` and the unread body is drained, not kept (``memory_budget``).
- deadlines, enforced on every read (``_DeadlineReader``), so trickling bytes
  do not extend them: a connection waiting for its next request is closed
  after ``idle_timeout`` (``idle_timeout``); a request whose headers and body
  are not in ``request_timeout`` after its first byte, or that stalls for
  ``idle_timeout``, is cut (``slow_sender``).
- connections: at ``max_connections`` a new connection first evicts the
  longest-idle keep-alive connection (``evicted_idle``), else the slowest
  request still being received after ``SHED_AFTER_SECONDS``
  (``evicted_slow``), else it gets 503 + ``Retry-After`` (``connections``).
  A connection whose request is in and being worked on is never evicted.

Responses go out in one ``sendall`` (headers and body together) on sockets
with ``TCP_NODELAY``, so a keep-alive request does not wait for Nagle and the
peer's delayed ACK.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import hmac
import io
import logging
import math
import socket
import socketserver
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import TYPE_CHECKING, Any

import orjson
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from exporter.sources.otlp.body import (
    DECODE_FACTOR,
    GZIP_WBITS,
    ZLIB_WBITS,
    BadBody,
    BodyTooLarge,
    ByteBudget,
    LengthRequired,
    OverBudget,
    Reservation,
    declared_length,
    inflate_capped,
    read_body,
)
from exporter.sources.otlp.mapping import (
    BatchResult,
    UndecodableRequest,
    map_json,
    map_protobuf,
)

if TYPE_CHECKING:
    from exporter.sources.otlp.receiver import OtlpReceiver

try:  # google.rpc.Status is in googleapis-common-protos (pulled in by the OTLP exporter)
    from google.rpc.status_pb2 import Status as _RpcStatus
except ImportError:  # pragma: no cover - then protobuf error bodies are empty
    _RpcStatus = None

log = logging.getLogger(__name__)

TRACES_PATH = "/v1/traces"
CT_PROTOBUF = "application/x-protobuf"
CT_JSON = "application/json"

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

# HTTP status -> google.rpc.Code for error bodies.
_RPC_CODES = {400: 3, 401: 16, 404: 5, 405: 12, 411: 3, 413: 8, 415: 3, 429: 8, 503: 14}
_SKIP_BODY_BYTES = 1 << 20  # an early error still reads a body this small
_LINGER_SECONDS = 1.0
_LINGER_BYTES = 8 << 20
_READ_BUFFER = 1 << 16
_IDLE, _READING, _WORKING = "idle", "reading", "working"
_TRIM_AFTER_BYTES = 8 << 20  # after a request that held this much, freed heap goes back to the OS


def _load_malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to trim
        return None
    return trim


_MALLOC_TRIM = _load_malloc_trim()


def _trim_heap() -> None:
    """Give freed heap back to the OS (glibc keeps a big body's pages in per-thread arenas)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


@dataclass(eq=False)
class _Conn:
    """One connection's phase and deadline; guarded by ``TraceServer._lock``."""

    sock: socket.socket
    phase: str
    since: float  # when the phase began
    deadline: float
    received: int = 0  # bytes of the current request
    evicted: bool = False
    cut: str | None = None  # the refusal reason of a deadline that passed


class TraceServer(HTTPServer):
    """HTTPServer with one thread per connection, a connection cap and per-connection deadlines."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, receiver: OtlpReceiver, address: tuple[str, int]) -> None:
        self.receiver = receiver
        self.budget = ByteBudget(receiver.max_inflight_bytes)
        self._conns: dict[socket.socket, _Conn] = {}
        self._lock = threading.Lock()
        super().__init__(address, _Handler)

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
        victim: _Conn | None = None
        with self._lock:
            if len(self._conns) >= receiver.max_connections:
                victim = self._victim(now)
                if victim is not None:
                    victim.evicted = True
                    del self._conns[victim.sock]
            if victim is not None or len(self._conns) < receiver.max_connections:
                conn = _Conn(request, _IDLE, now, now + receiver.idle_timeout)
                self._conns[request] = conn
            else:
                conn = None
        if victim is not None:
            receiver.stats.refuse("evicted_idle" if victim.phase == _IDLE else "evicted_slow")
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

    def _victim(self, now: float) -> _Conn | None:
        """The longest-idle connection, else the slowest request arriving for a while."""
        idle = [c for c in self._conns.values() if c.phase == _IDLE]
        if idle:
            return min(idle, key=lambda c: c.since)
        slow = [
            c
            for c in self._conns.values()
            if c.phase == _READING and now - c.since >= SHED_AFTER_SECONDS
        ]
        if slow:
            return min(slow, key=lambda c: c.received / max(now - c.since, 1e-9))
        return None

    def conn(self, request: socket.socket) -> _Conn:
        with self._lock:
            found = self._conns.get(request)
        if found is None:  # evicted before its thread started
            now = self.receiver.clock()
            return _Conn(request, _IDLE, now, now, evicted=True)
        return found

    def phase(self, conn: _Conn, phase: str) -> None:
        """Enter ``phase``: idle and reading get their deadline, working none."""
        now = self.receiver.clock()
        with self._lock:
            conn.phase, conn.since, conn.received = phase, now, 0
            if phase == _IDLE:
                conn.deadline = now + self.receiver.idle_timeout
            elif phase == _READING:
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


class _DeadlineReader(io.RawIOBase):
    """The socket's reads, each bounded by the connection's deadline (and stall timeout).

    The first byte of a request moves the connection from idle to reading, so
    the request deadline runs from there; a deadline that has passed raises
    ``TimeoutError`` before any further read, however slowly the bytes trickle.
    """

    def __init__(self, server: TraceServer, conn: _Conn) -> None:
        super().__init__()
        self._server = server
        self._conn = conn
        self._sock = conn.sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        server, conn = self._server, self._conn
        remaining = conn.deadline - server.receiver.clock()
        if conn.phase == _READING:
            remaining = min(remaining, server.receiver.idle_timeout)
        if remaining <= 0 or conn.evicted:
            return self._expired()
        self._sock.settimeout(remaining)
        try:
            n = self._sock.recv_into(buffer)
        except TimeoutError:
            return self._expired()
        if n and conn.phase == _IDLE:
            server.phase(conn, _READING)
        conn.received += n
        return n

    def _expired(self) -> int:
        conn = self._conn
        if not conn.evicted:
            conn.cut = "idle_timeout" if conn.phase == _IDLE else "slow_sender"
        raise TimeoutError("connection deadline passed")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: TraceServer
    server_version = "llm-savings-exporter"
    sys_version = ""
    _headers_buffer: list[bytes]  # BaseHTTPRequestHandler's, joined with the body in _reply

    def setup(self) -> None:
        self.connection = self.request
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn = self.server.conn(self.request)
        self.rfile = io.BufferedReader(_DeadlineReader(self.server, self.conn), _READ_BUFFER)
        self.wfile = socketserver._SocketWriter(self.connection)  # type: ignore[attr-defined]

    def handle_one_request(self) -> None:
        self._linger = False
        self.server.phase(self.conn, _IDLE)
        try:
            super().handle_one_request()
            if self._linger:
                self._linger_close()
        except OSError:  # a deadline passed mid-body, or the peer went away
            self.close_connection = True
        finally:
            if self.conn.cut is not None:
                self.server.receiver.stats.refuse(self.conn.cut)
                self.conn.cut = None
                self.close_connection = True

    def handle_expect_100(self) -> bool:
        """Answer ``Expect: 100-continue`` with 413 at once when the declared body is too big."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
        if length > self.server.receiver.max_body_bytes:
            self.command = self.command or "POST"
            as_json = "json" in (self.headers.get("Content-Type") or "").lower()
            self._error(413, f"body exceeds {self.server.receiver.max_body_bytes} bytes", as_json)
            return False
        return bool(super().handle_expect_100())

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("otlp http: " + format, *args)

    # -- responses
    def _reply(
        self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None
    ) -> None:
        """Status line, headers and body in one ``sendall`` (no Nagle wait between them)."""
        self.server.receiver.stats.status(status)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        head = b"".join(self._headers_buffer) + b"\r\n"
        self._headers_buffer = []
        self.connection.settimeout(self.server.receiver.idle_timeout)
        self.wfile.write(head if self.command == "HEAD" else head + body)

    def _error(
        self,
        status: int,
        message: str,
        json_body: bool = True,
        close: bool = True,
        extra: dict[str, str] | None = None,
    ) -> None:
        if close:
            self.close_connection = True
        code = _RPC_CODES.get(status, 2)
        if json_body or _RpcStatus is None:
            self._reply(status, orjson.dumps({"code": code, "message": message}), CT_JSON, extra)
        else:
            body = _RpcStatus(code=code, message=message).SerializeToString()
            self._reply(status, body, CT_PROTOBUF, extra)

    def _drain(self, length: int) -> bool:
        """Read and drop ``length`` body bytes (a fixed buffer, never the body); False on EOF."""
        scratch = bytearray(_READ_BUFFER)
        view = memoryview(scratch)
        while length > 0:
            got = self.rfile.readinto(view[: min(length, _READ_BUFFER)])
            if not got:
                return False
            length -= got
        return True

    def _skip_body(self) -> None:
        """Before an early error: read a small unread body so the connection stays usable.

        A large, chunked or unframed one is not read; the connection closes with
        a short linger so the client still sees the response, not a reset.
        """
        length = declared_length(self.headers)
        if length is not None and length <= _SKIP_BODY_BYTES and self._drain(length):
            return
        self.close_connection = True
        self._linger = True

    def _linger_close(self) -> None:
        """Half-close, then drain briefly, so unread request bytes do not turn into a reset."""
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(_LINGER_SECONDS)
            deadline = self.server.receiver.clock() + _LINGER_SECONDS
            drained = 0
            while drained < _LINGER_BYTES and self.server.receiver.clock() < deadline:
                chunk = self.connection.recv(65536)
                if not chunk:
                    break
                drained += len(chunk)
        except OSError:
            pass

    def _not_allowed(self) -> None:
        self._skip_body()
        if self.path.split("?", 1)[0] == TRACES_PATH:
            self._error(405, "only POST is allowed", close=False, extra={"Allow": "POST"})
        else:
            self._error(404, "not found", close=False)

    do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _not_allowed

    def do_POST(self) -> None:
        receiver = self.server.receiver
        if self.path.split("?", 1)[0] != TRACES_PATH:
            self._skip_body()
            self._error(404, "not found", close=False)
            return
        if receiver.bearer_token is not None and not self._authorised(receiver.bearer_token):
            self._skip_body()
            self._error(
                401,
                "missing or wrong bearer token",
                close=False,
                extra={"WWW-Authenticate": "Bearer"},
            )
            return
        content_type = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if content_type not in (CT_PROTOBUF, CT_JSON):
            self._skip_body()
            self._error(
                415, "Content-Type must be application/x-protobuf or application/json", close=False
            )
            return
        as_json = content_type == CT_JSON
        encoding = (self.headers.get("Content-Encoding") or "identity").strip().lower()
        if encoding not in ("identity", "gzip", "x-gzip", "deflate"):
            self._skip_body()
            self._error(
                415, "Content-Encoding must be gzip, deflate or identity", as_json, close=False
            )
            return
        with self.server.budget.reservation() as reservation:
            self._receive(reservation, encoding, as_json)
            large = reservation.held >= _TRIM_AFTER_BYTES
        if large:
            _trim_heap()

    def _receive(self, reservation: Reservation, encoding: str, as_json: bool) -> None:
        """Reserve, read, inflate, decode, map and enqueue one request body."""
        receiver = self.server.receiver
        identity = encoding == "identity"
        length = declared_length(self.headers)
        if length is not None and length <= receiver.max_body_bytes:
            try:  # before reading: the body, and for identity its decode working set too
                reservation.grow(length * (1 + DECODE_FACTOR) if identity else length)
            except OverBudget:
                if not self._drain(length):
                    self.close_connection = True
                    return
                self._over_budget(as_json, close=False)
                return
        try:
            raw = read_body(self.headers, self.rfile, receiver.max_body_bytes, reservation)
        except OverBudget:  # a chunked body grew past the budget: stop reading it
            self._linger = True
            self._over_budget(as_json, close=True)
            return
        except BodyTooLarge:
            self._linger = True
            self._error(413, f"body exceeds {receiver.max_body_bytes} bytes", as_json)
            return
        except LengthRequired as exc:
            self._error(411, str(exc), as_json)
            return
        except BadBody as exc:
            self._error(400, str(exc), as_json)
            return
        if raw is None:  # the client went away mid-body
            self.close_connection = True
            return
        self.server.phase(self.conn, _WORKING)  # the request is in; the rest is our work
        receiver.stats.add("bytes_received", len(raw))
        try:
            if identity:
                body = raw
                if length is None:  # chunked: the decode working set is not reserved yet
                    reservation.grow(len(body) * DECODE_FACTOR)
            else:
                wbits = ZLIB_WBITS if encoding == "deflate" else GZIP_WBITS
                body = inflate_capped(raw, wbits, receiver.max_body_bytes, reservation)
                del raw
                reservation.grow(len(body) * DECODE_FACTOR)
        except OverBudget:
            self._over_budget(as_json, close=False)
            return
        except BodyTooLarge:
            self._error(413, f"decompressed body exceeds {receiver.max_body_bytes} bytes", as_json)
            return
        except BadBody as exc:
            self._error(400, str(exc), as_json, close=False)
            return
        receiver.stats.add("bytes_decoded", len(body))
        try:
            result, _ = (
                map_json(body, receiver.options)
                if as_json
                else map_protobuf(body, receiver.options)
            )
        except UndecodableRequest as exc:
            self._error(400, str(exc), as_json, close=False)
            return
        del body
        status = receiver.enqueue(result)
        if status != 200:
            retry = {"Retry-After": str(receiver.retry_after)}
            if status == 429:
                receiver.stats.refuse("queue_full")
                message = "receiver queue is full"
            else:
                receiver.stats.refuse("stopping")
                message = "receiver is shutting down"
            self._error(status, message, as_json, close=False, extra=retry)
            return
        self._reply(200, _success_body(result, as_json), CT_JSON if as_json else CT_PROTOBUF)

    def _over_budget(self, as_json: bool, close: bool) -> None:
        receiver = self.server.receiver
        receiver.stats.refuse("memory_budget")
        self._error(
            503,
            f"bodies in flight would exceed {receiver.max_inflight_bytes} bytes",
            as_json,
            close=close,
            extra={"Retry-After": str(receiver.retry_after)},
        )

    def _authorised(self, token: bytes) -> bool:
        header = self.headers.get("Authorization") or ""
        scheme, _, value = header.partition(" ")
        presented = value.strip().encode("utf-8", "surrogateescape")
        # compare even on a wrong scheme so timing does not tell which part was wrong
        match = hmac.compare_digest(presented, token)
        return match and scheme.lower() == "bearer"


def _success_body(result: BatchResult, as_json: bool) -> bytes:
    response = ExportTraceServiceResponse()
    if result.rejected:
        response.partial_success.rejected_spans = result.rejected_count
        response.partial_success.error_message = result.rejection_message()
    if as_json:
        return orjson.dumps(json_format.MessageToDict(response))
    return bytes(response.SerializeToString())


__all__ = [
    "CT_JSON",
    "CT_PROTOBUF",
    "REFUSAL_REASONS",
    "SHED_AFTER_SECONDS",
    "TRACES_PATH",
    "TraceServer",
]
