"""A response is one write (headers + body) on a TCP_NODELAY socket: no Nagle/delayed-ACK stall."""

from __future__ import annotations

import http.client
import socket
from typing import Any

import pytest

from exporter.sources.otlp import server
from tests.sources.otlp.test_otlp_receiver import PB, pb_body, spans, start, wait_until

__all__ = ["spans", "start"]  # fixtures


class RecordingWriter:
    def __init__(self, inner: Any, writes: list[bytes]) -> None:
        self.inner, self.writes = inner, writes

    def write(self, data: bytes) -> int:
        self.writes.append(bytes(data))
        return int(self.inner.write(data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_each_response_is_written_in_one_send(
    start: Any, spans: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[bytes] = []
    setup = server._Handler.setup

    def recording_setup(self: Any) -> None:
        setup(self)
        self.wfile = RecordingWriter(self.wfile, writes)

    monkeypatch.setattr(server._Handler, "setup", recording_setup)
    rx = start()
    conn = http.client.HTTPConnection("127.0.0.1", rx.port, timeout=5)
    try:
        for path in ("/v1/traces", "/v1/traces", "/nope"):  # two 200s, then a 404, keep-alive
            conn.request("POST", path, body=pb_body(spans), headers={"Content-Type": PB})
            response = conn.getresponse()
            response.read()
    finally:
        conn.close()
    assert len(writes) == 3
    for write, status in zip(writes, (b"200", b"200", b"404"), strict=True):
        head, _, body = write.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 " + status)
        length = next(
            int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        assert len(body) == length  # the whole body went with the headers


def test_raw_socket_gets_headers_and_body_in_one_recv(start: Any, spans: dict[str, Any]) -> None:
    rx = start()
    body = pb_body(spans)
    request = (
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body) + body
    )
    with socket.create_connection(("127.0.0.1", rx.port), timeout=5) as sock:
        for _ in range(3):  # keep-alive: the same connection each time
            sock.sendall(request)
            data = sock.recv(65536)
            assert data.startswith(b"HTTP/1.1 200") and b"Content-Length: 0" in data
            assert data.endswith(b"\r\n\r\n")  # the (empty protobuf) body is complete


def test_accepted_sockets_have_tcp_nodelay(start: Any) -> None:
    rx = start()
    with socket.create_connection(("127.0.0.1", rx.port), timeout=5):
        wait_until(lambda: len(rx._server.sockets()) == 1)
        (accepted,) = rx._server.sockets()
        wait_until(
            lambda: accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        )
