"""The HTTP face of the sidecar: /metrics, /healthz, /readyz and the landing page ``/``.

A small ThreadingHTTPServer: scrapes are rare and cheap (see
``exporter.exposition.render``), so a thread per request is plenty, and it keeps the
dependency list short. Each connection gets a socket timeout so a slow client
cannot hold a thread forever. /metrics is gzipped when the request's
Accept-Encoding allows it (Prometheus always sends ``gzip``), with
``Content-Encoding: gzip``; every /metrics answer carries ``Vary: Accept-Encoding``.
Each response is one write on a TCP_NODELAY socket (no delayed-ACK stall on keep-alive).
"""

from __future__ import annotations

import gzip
import logging
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger(__name__)


GZIP_LEVEL = 1  # metric text compresses ~10x even at level 1, at a fraction of level 6's CPU
# The landing page is one self-contained document: no script, and nothing fetched from anywhere.
LANDING_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


def accepts_gzip(header: str | None) -> bool:
    """Whether an Accept-Encoding header allows gzip (``gzip`` or ``*`` with a non-zero q)."""
    if not header:
        return False
    allowed: dict[str, bool] = {}
    for item in header.split(","):
        coding, _, params = item.strip().partition(";")
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        allowed[coding.strip().lower()] = q > 0
    if "gzip" in allowed:
        return allowed["gzip"]
    return allowed.get("x-gzip", allowed.get("*", False))


class Endpoints:
    """What the server asks of the sidecar; plain callables so tests can drive them.

    ``landing`` returns the HTML of ``/`` (the sidecar renders it with ``exporter.report``:
    this layer only serves it).
    """

    def __init__(
        self,
        metrics: Callable[[str | None], tuple[bytes, str]],
        ready: Callable[[], tuple[bool, str]],
        landing: Callable[[], bytes],
    ) -> None:
        self.metrics = metrics
        self.ready = ready
        self.landing = landing


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    _headers_buffer: list[bytes]

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.client_timeout)
        # headers and body leave in one write (below), so Nagle has nothing to hold back
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http %s", format % args)

    def _send(self, code: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        # one write for headers and body: two small writes on a keep-alive connection meet the
        # peer's delayed ACK and Nagle (~40 ms per request)
        head = b"".join(self._headers_buffer) + b"\r\n"
        self._headers_buffer = []
        self.wfile.write(head if self.command == "HEAD" else head + body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        endpoints = self.server.endpoints
        try:
            if path == "/metrics":
                body, content_type = endpoints.metrics(self.headers.get("Accept"))
                extra = {"Vary": "Accept-Encoding"}
                if accepts_gzip(self.headers.get("Accept-Encoding")):
                    body = gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0)
                    extra["Content-Encoding"] = "gzip"
                self._send(200, body, content_type, extra)
            elif path == "/healthz":
                self._send(200, b"ok\n", "text/plain; charset=utf-8")
            elif path == "/readyz":
                ready, why = endpoints.ready()
                self._send(200 if ready else 503, (why + "\n").encode(), "text/plain; charset=utf-8")
            elif path == "/":
                self._send(200, endpoints.landing(), "text/html; charset=utf-8",
                           {"Cache-Control": "no-cache", "Content-Security-Policy": LANDING_CSP})
            else:
                self._send(404, b"not found\n", "text/plain; charset=utf-8")
        except Exception:  # a failing scrape must not kill the server thread
            log.exception("error serving %s", path)
            self._send(500, b"internal error\n", "text/plain; charset=utf-8")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], endpoints: Endpoints, client_timeout: float) -> None:
        self.endpoints = endpoints
        self.client_timeout = client_timeout
        super().__init__(address, _Handler)


class MetricsServer:
    def __init__(self, host: str, port: int, endpoints: Endpoints, client_timeout: float = 10.0) -> None:
        if ":" in host:
            _Server.address_family = socket.AF_INET6
        self._server = _Server((host, port), endpoints, client_timeout)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.2,), name="metrics-http",
                                        daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():  # shutdown() waits for a serve loop that must be running
            self._server.shutdown()
        self._server.server_close()
