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
- deadlines, enforced on every read (``DeadlineReader``), so trickling bytes
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

import hmac
import io
import logging
import socket
import socketserver
from http.server import BaseHTTPRequestHandler
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
    LengthRequired,
    OverBudget,
    Reservation,
    declared_length,
    inflate_capped,
    read_body,
)
from exporter.sources.otlp.limits import (
    IDLE,
    REFUSAL_REASONS,
    SHED_AFTER_SECONDS,
    TRIM_AFTER_BYTES,
    WORKING,
    ConnectionServer,
    DeadlineReader,
    trim_heap,
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

# HTTP status -> google.rpc.Code for error bodies.
_RPC_CODES = {400: 3, 401: 16, 404: 5, 405: 12, 411: 3, 413: 8, 415: 3, 429: 8, 503: 14}
_SKIP_BODY_BYTES = 1 << 20  # an early error still reads a body this small
_LINGER_SECONDS = 1.0
_LINGER_BYTES = 8 << 20
_READ_BUFFER = 1 << 16


class TraceServer(ConnectionServer):
    """The OTLP/HTTP server: ``ConnectionServer``'s limits with the ``/v1/traces`` handler."""

    def __init__(self, receiver: OtlpReceiver, address: tuple[str, int]) -> None:
        super().__init__(receiver, address, _Handler)


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
        self.rfile = io.BufferedReader(DeadlineReader(self.server, self.conn), _READ_BUFFER)
        self.wfile = socketserver._SocketWriter(self.connection)  # type: ignore[attr-defined]

    def handle_one_request(self) -> None:
        self._linger = False
        self.server.phase(self.conn, IDLE)
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
            large = reservation.held >= TRIM_AFTER_BYTES
        if large:
            trim_heap()

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
        self.server.phase(self.conn, WORKING)  # the request is in; the rest is our work
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
