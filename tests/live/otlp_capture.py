"""A stdlib OTLP/HTTP endpoint that keeps the raw body of every POST it receives.

It answers ``POST .../v1/traces`` (any prefix, e.g. Langfuse's ``/api/public/otel/v1/traces``) with an
empty ``ExportTraceServiceResponse`` (an empty protobuf message is zero bytes) and any other request
with ``{}``, so SDKs that also call other routes of their backend keep going.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _reply(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._reply(b"{}", "application/json")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?", 1)[0]
        ctype = self.headers.get("Content-Type", "")
        if path.endswith("/v1/traces"):
            encoding = self.headers.get("Content-Encoding")
            with self.server.lock:
                self.server.requests.append(
                    {"content_type": ctype, "content_encoding": encoding, "body": body, "path": path}
                )
            self._reply(b"", ctype.split(";")[0] or "application/x-protobuf")
        else:
            with self.server.lock:
                self.server.other.append(path)
            self._reply(b"{}", "application/json")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.other: list[str] = []


class CaptureEndpoint:
    def __init__(self) -> None:
        self._server = _Server()
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-capture", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def traces_url(self) -> str:
        return self.base_url + "/v1/traces"

    def count(self) -> int:
        with self._server.lock:
            return len(self._server.requests)

    def take(self) -> list[dict[str, Any]]:
        with self._server.lock:
            out, self._server.requests = self._server.requests, []
        return out

    def settle(self, quiet: float = 0.4, timeout: float = 10.0) -> None:
        """Wait until no request has arrived for ``quiet`` seconds (or ``timeout`` passed)."""
        end = time.monotonic() + timeout
        last, since = self.count(), time.monotonic()
        while time.monotonic() < end:
            time.sleep(0.05)
            now = self.count()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return

    def __enter__(self) -> CaptureEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
