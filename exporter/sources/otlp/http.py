"""OTLP/HTTP trace receiver: ``POST /v1/traces`` -> canonical records -> a sink.

Behaviour (OTLP/HTTP specification, trace signal only):

- ``application/x-protobuf`` or ``application/json`` bodies, ``Content-Encoding``
  ``gzip``, ``deflate`` or identity; the response is in the request's content
  type (protobuf ``ExportTraceServiceResponse`` / ``google.rpc.Status``, or their
  OTLP/JSON form).
- 200, with ``partial_success`` naming how many spans were rejected and why
  when some were (ignored non-model spans are not rejections);
- 400 undecodable body, bad framing or bad gzip (not retryable); 401 missing or
  wrong bearer token (constant-time compare); 404 other paths; 405 other
  methods on ``/v1/traces``; 411 neither ``Content-Length`` nor chunked;
  413 body over ``max_body_bytes`` - checked against ``Content-Length`` before
  reading and again while inflating, so a gzip bomb stops at the cap;
  415 other content types or encodings;
- 429 with ``Retry-After`` when the bounded queue to the pipeline thread is
  full, 503 with ``Retry-After`` while stopping or when every handler thread
  is busy.

Threads: HTTP handlers (at most ``max_threads``, each connection one thread)
decode and map; one dispatcher thread calls ``sink(records, source)`` and
``reject(reason, source, ts)`` so the pipeline sees a single caller. Slow clients:
every socket read times out after ``idle_timeout`` and a reaper closes any
connection whose request (headers and body) is not in after
``request_timeout``, so a client trickling one byte at a time cannot hold a
thread. Binds 127.0.0.1 by default; port 0 picks a free port (tests).

The receiver knows nothing of metrics: ``stats.snapshot()`` gives counters the
caller exports as self-metrics. No span content is logged.
"""

from __future__ import annotations

import contextlib
import hmac
import inspect
import logging
import queue
import socket
import socketserver
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import orjson
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from exporter.sources.otlp.mapping import (
    BatchResult,
    MappingOptions,
    UndecodableRequest,
    map_json,
    map_protobuf,
)

try:  # google.rpc.Status is in googleapis-common-protos (pulled in by the OTLP exporter)
    from google.rpc.status_pb2 import Status as _RpcStatus
except ImportError:  # pragma: no cover - then protobuf error bodies are empty
    _RpcStatus = None

log = logging.getLogger(__name__)

TRACES_PATH = "/v1/traces"
DEFAULT_PORT = 4318
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
CT_PROTOBUF = "application/x-protobuf"
CT_JSON = "application/json"

Sink = Callable[[list[dict[str, Any]], str], None]
# (reason, source, ts) like Pipeline.reject; a two-argument (reason, source) callable works too
RejectSink = Callable[..., None]

# HTTP status -> google.rpc.Code for error bodies.
_RPC_CODES = {400: 3, 401: 16, 404: 5, 405: 12, 411: 3, 413: 8, 415: 3, 429: 8, 503: 14}
_GZIP_WBITS = 16 + zlib.MAX_WBITS
_ZLIB_WBITS = zlib.MAX_WBITS
_INFLATE_STEP = 1 << 20
_SKIP_BODY_BYTES = 1 << 20  # an early error still reads a body this small
_LINGER_SECONDS = 1.0
_LINGER_BYTES = 8 << 20


class BodyTooLarge(Exception):
    """The (decompressed) body is over the cap: HTTP 413."""


class BadBody(Exception):
    """Bad framing or a corrupt compressed body: HTTP 400."""


class _LengthRequired(BadBody):
    """Neither Content-Length nor chunked framing: HTTP 411."""


@dataclass
class ReceiverStats:
    """Counters for self-metrics; every key is a bounded set."""

    requests: Counter[int] = field(default_factory=Counter)  # by HTTP status
    spans_accepted: int = 0
    spans_rejected: Counter[str] = field(default_factory=Counter)
    spans_ignored: Counter[str] = field(default_factory=Counter)
    bytes_received: int = 0  # request bodies as sent (compressed)
    bytes_decoded: int = 0  # after decompression
    queue_full: int = 0
    sink_errors: int = 0
    connections_refused: int = 0  # every handler thread busy
    connections_reaped: int = 0  # request not complete within request_timeout
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requests": dict(self.requests),
                "spans_accepted": self.spans_accepted,
                "spans_rejected": dict(self.spans_rejected),
                "spans_ignored": dict(self.spans_ignored),
                "bytes_received": self.bytes_received,
                "bytes_decoded": self.bytes_decoded,
                "queue_full": self.queue_full,
                "sink_errors": self.sink_errors,
                "connections_refused": self.connections_refused,
                "connections_reaped": self.connections_reaped,
            }

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + n)

    def status(self, code: int) -> None:
        with self._lock:
            self.requests[code] += 1


def inflate_capped(data: bytes, wbits: int, cap: int) -> bytes:
    """Decompress at most ``cap`` bytes; ``BodyTooLarge`` beyond, ``BadBody`` if corrupt."""
    inflater = zlib.decompressobj(wbits)
    out = bytearray()
    pending = data
    try:
        while pending:
            room = cap + 1 - len(out)
            out += inflater.decompress(pending, min(room, _INFLATE_STEP))
            if len(out) > cap:
                raise BodyTooLarge
            pending = inflater.unconsumed_tail
            if inflater.eof:
                break
        if not inflater.eof:
            out += inflater.flush()
            if len(out) > cap:
                raise BodyTooLarge
            if not inflater.eof:
                raise BadBody("truncated compressed body")
    except zlib.error:
        raise BadBody("corrupt compressed body") from None
    if inflater.unused_data.strip(b"\x00"):
        raise BadBody("trailing data after the compressed body")
    return bytes(out)


class _Server(HTTPServer):
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
    server: _Server
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
            raw = self._read_body(receiver.max_body_bytes)
        except BodyTooLarge:
            self._linger = True
            self._error(413, f"body exceeds {receiver.max_body_bytes} bytes", as_json)
            return
        except _LengthRequired as exc:
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
                body = inflate_capped(raw, _GZIP_WBITS, receiver.max_body_bytes)
            elif encoding == "deflate":
                body = inflate_capped(raw, _ZLIB_WBITS, receiver.max_body_bytes)
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

    def _read_body(self, cap: int) -> bytes | None:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._read_chunked(cap)
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            self.close_connection = True
            raise _LengthRequired("Content-Length or chunked Transfer-Encoding is required")
        try:
            length = int(length_header)
        except ValueError:
            raise BadBody("Content-Length is not a number") from None
        if length < 0:
            raise BadBody("Content-Length is negative")
        if length > cap:
            raise BodyTooLarge
        data = self.rfile.read(length)
        return data if len(data) == length else None

    def _read_chunked(self, cap: int) -> bytes | None:
        out = bytearray()
        while True:
            line = self.rfile.readline(1024)
            if not line:
                return None
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                self.close_connection = True
                raise BadBody("bad chunk size") from None
            if size < 0:
                self.close_connection = True
                raise BadBody("bad chunk size")
            if size == 0:
                while True:  # trailers up to the blank line
                    trailer = self.rfile.readline(8192)
                    if not trailer:
                        return None
                    if trailer in (b"\r\n", b"\n"):
                        return bytes(out)
            if len(out) + size > cap:
                self.close_connection = True
                raise BodyTooLarge
            chunk = self.rfile.read(size)
            if len(chunk) != size:
                return None
            out += chunk
            if self.rfile.readline(8) not in (b"\r\n", b"\n"):
                self.close_connection = True
                raise BadBody("bad chunk framing")


def _accepts_three_args(func: Callable[..., Any]) -> bool:
    """Whether ``func(reason, source, ts)`` is a valid call (else it is called with two)."""
    try:
        inspect.signature(func).bind("reason", "source", None)
    except TypeError:
        return False
    except ValueError:  # no signature (a builtin): assume the Pipeline.reject shape
        return True
    return True


def _success_body(result: BatchResult, as_json: bool) -> bytes:
    response = ExportTraceServiceResponse()
    if result.rejected:
        response.partial_success.rejected_spans = result.rejected_count
        response.partial_success.error_message = result.rejection_message()
    if as_json:
        return orjson.dumps(json_format.MessageToDict(response))
    return bytes(response.SerializeToString())


class OtlpReceiver:
    """OTLP/HTTP trace receiver feeding ``sink(records, source)`` from one dispatcher thread.

    ``reject(reason, source, ts)``, when given (``Pipeline.reject`` fits), is
    called once per rejected span (bounded reasons of
    ``exporter.engine.records.REJECTION_REASONS``; ``ts`` the span's end time when
    readable, else None) so the pipeline counts them with every other rejection.
    """

    def __init__(
        self,
        sink: Sink,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        queue_size: int = 64,
        bearer_token: str | None = None,
        reject: RejectSink | None = None,
        source: str = "otlp",
        max_threads: int = 16,
        idle_timeout: float = 10.0,
        request_timeout: float = 30.0,
        retry_after: int = 1,
        options: MappingOptions | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_body_bytes <= 0 or queue_size <= 0 or max_threads <= 0:
            raise ValueError("max_body_bytes, queue_size and max_threads must be positive")
        if idle_timeout <= 0 or request_timeout <= 0:
            raise ValueError("idle_timeout and request_timeout must be positive")
        self.sink = sink
        self.reject = reject
        self._reject_takes_ts = reject is not None and _accepts_three_args(reject)
        self.host = host
        self._requested_port = port
        self.max_body_bytes = max_body_bytes
        self.bearer_token = bearer_token.encode("utf-8") if bearer_token else None
        self.source = source
        self.max_threads = max_threads
        self.idle_timeout = idle_timeout
        self.request_timeout = request_timeout
        self.retry_after = retry_after
        self.options = options or MappingOptions()
        self.clock = clock
        self.stats = ReceiverStats()
        self._queue: queue.Queue[BatchResult | None] = queue.Queue(maxsize=queue_size)
        self._server: _Server | None = None
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._accepting = False
        self._accept_lock = threading.Lock()  # no batch can be queued behind stop()'s sentinel

    @property
    def port(self) -> int:
        if self._server is None:
            return self._requested_port
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{TRACES_PATH}"

    def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("receiver already started")
        self._stopping.clear()
        self._server = _Server(self, (self.host, self._requested_port))
        self._accepting = True
        self._threads = [
            threading.Thread(
                target=self._server.serve_forever, args=(0.2,), name="otlp-http", daemon=True
            ),
            threading.Thread(target=self._dispatch, name="otlp-dispatch", daemon=True),
            threading.Thread(target=self._reap_loop, name="otlp-reaper", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        log.info("OTLP/HTTP receiver listening on %s", self.url)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, deliver what is queued, then return."""
        server = self._server
        if server is None:
            return
        with self._accept_lock:
            self._accepting = False
        server.shutdown()
        server.server_close()
        self._stopping.set()
        try:
            self._queue.put(None, timeout=timeout)  # behind what is queued
        except queue.Full:
            log.warning("OTLP dispatcher did not drain its queue within %.1f s", timeout)
        for thread in self._threads:
            thread.join(timeout)
        self._server = None
        self._threads = []

    def enqueue(self, result: BatchResult) -> int:
        """Hand a mapped request to the dispatcher; the HTTP status to answer."""
        with self._accept_lock:
            if not self._accepting:
                return 503
            if result.records or result.rejected:
                try:
                    self._queue.put_nowait(result)
                except queue.Full:
                    self.stats.add("queue_full")
                    return 429
        with self.stats._lock:
            self.stats.spans_accepted += len(result.records)
            self.stats.spans_rejected.update(result.rejected)
            self.stats.spans_ignored.update(result.ignored)
        return 200

    def _dispatch(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                if item.records:
                    self.sink(item.records, self.source)
                if self.reject is not None:
                    for reason, ts in item.rejections:
                        if self._reject_takes_ts:
                            self.reject(reason, self.source, ts)
                        else:
                            self.reject(reason, self.source)
            except Exception:
                self.stats.add("sink_errors")
                log.exception("OTLP sink failed on a batch of %d records", len(item.records))

    def _reap_loop(self) -> None:
        while not self._stopping.wait(0.25):
            server = self._server
            if server is not None:
                reaped = server.reap()
                if reaped:
                    self.stats.add("connections_reaped", reaped)


__all__ = [
    "CT_JSON",
    "CT_PROTOBUF",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_PORT",
    "TRACES_PATH",
    "BadBody",
    "BodyTooLarge",
    "OtlpReceiver",
    "ReceiverStats",
    "inflate_capped",
]
