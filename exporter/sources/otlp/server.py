"""The OTLP/HTTP server: one thread per connection, bounded, with a slow-client reaper.

``POST /v1/traces`` only; the status codes it answers are the package's
contract (``exporter.sources.otlp``). Handlers (at most ``max_threads``, each
connection one thread) read the body (``exporter.sources.otlp.body``), decode
and map it, and hand the result to the receiver's queue
(``OtlpReceiver.enqueue``). Slow clients: every socket read times out after
``idle_timeout`` and a reaper closes any connection whose request (headers
and body) is not in after ``request_timeout``, so a client trickling one byte
at a time cannot hold a thread. No span content is logged.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import socket
import socketserver
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import TYPE_CHECKING, Any

import orjson
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from exporter.sources.otlp.body import (
    GZIP_WBITS,
    ZLIB_WBITS,
    BadBody,
    BodyTooLarge,
    LengthRequired,
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

# HTTP status -> google.rpc.Code for error bodies.
_RPC_CODES = {400: 3, 401: 16, 404: 5, 405: 12, 411: 3, 413: 8, 415: 3, 429: 8, 503: 14}
_SKIP_BODY_BYTES = 1 << 20  # an early error still reads a body this small
_LINGER_SECONDS = 1.0
_LINGER_BYTES = 8 << 20


class TraceServer(HTTPServer):
    """HTTPServer with a bounded thread pool per connection and a slow-client reaper."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, receiver: OtlpReceiver, address: tuple[str, int]) -> None:
        self.receiver = receiver
        self._slots = threading.BoundedSemaphore(receiver.max_threads)
        self._deadlines: dict[socket.socket, float] = {}
        self._deadlines_lock = threading.Lock()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        """Like HTTPServer.server_bind without the reverse DNS lookup of getfqdn."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    # -- bounded threads
    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(timeout=0.01):
            self.receiver.stats.add("connections_refused")
            self.receiver.stats.status(503)
            try:
                request.settimeout(1.0)
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: "
                    + str(self.receiver.retry_after).encode()
                    + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
            except OSError:
                pass
            self.shutdown_request(request)
            return
        thread = threading.Thread(target=self._work, args=(request, client_address), daemon=True)
        thread.start()

    def _work(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # a handler bug must not kill the slot
            log.exception("OTLP handler failed")
        finally:
            self.shutdown_request(request)
            self._slots.release()

    # -- deadlines
    def watch(self, conn: socket.socket, seconds: float) -> None:
        with self._deadlines_lock:
            self._deadlines[conn] = self.receiver.clock() + seconds

    def unwatch(self, conn: socket.socket) -> None:
        with self._deadlines_lock:
            self._deadlines.pop(conn, None)

    def reap(self) -> int:
        """Close connections past their deadline; returns how many."""
        now = self.receiver.clock()
        with self._deadlines_lock:
            overdue = [conn for conn, deadline in self._deadlines.items() if deadline <= now]
            for conn in overdue:
                del self._deadlines[conn]
        for conn in overdue:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        return len(overdue)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: TraceServer
    server_version = "llm-savings-exporter"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.receiver.idle_timeout)

    def handle_one_request(self) -> None:
        self._linger = False
        self.server.watch(self.connection, self.server.receiver.request_timeout)
        try:
            super().handle_one_request()
            if self._linger:
                self._linger_close()
        finally:
            self.server.unwatch(self.connection)

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
        self.server.receiver.stats.status(status)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

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

    def _skip_body(self) -> None:
        """Before an early error: read a small unread body so the connection stays usable.

        A large, chunked or unframed one is not read; the connection closes with
        a short linger so the client still sees the response, not a reset.
        """
        length_header = self.headers.get("Content-Length")
        chunked = "chunked" in (self.headers.get("Transfer-Encoding") or "").lower()
        try:
            length = int(length_header) if length_header is not None and not chunked else -1
        except ValueError:
            length = -1
        if 0 <= length <= _SKIP_BODY_BYTES and len(self.rfile.read(length)) == length:
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
        try:
            raw = read_body(self.headers, self.rfile, receiver.max_body_bytes)
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
        self.server.unwatch(self.connection)  # the request is in; the rest is our work
        receiver.stats.add("bytes_received", len(raw))
        try:
            if encoding in ("gzip", "x-gzip"):
                body = inflate_capped(raw, GZIP_WBITS, receiver.max_body_bytes)
            elif encoding == "deflate":
                body = inflate_capped(raw, ZLIB_WBITS, receiver.max_body_bytes)
            else:
                body = raw
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
        status = receiver.enqueue(result)
        if status != 200:
            retry = {"Retry-After": str(receiver.retry_after)}
            message = "receiver queue is full" if status == 429 else "receiver is shutting down"
            self._error(status, message, as_json, close=False, extra=retry)
            return
        self._reply(200, _success_body(result, as_json), CT_JSON if as_json else CT_PROTOBUF)

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


__all__ = ["CT_JSON", "CT_PROTOBUF", "TRACES_PATH", "TraceServer"]
