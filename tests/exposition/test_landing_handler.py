"""The server's ``/``: whatever HTML the sidecar's callable makes, served with a policy that forbids fetching."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable, Iterator

import pytest

from exporter.exposition.server import LANDING_CSP, Endpoints, MetricsServer


def _serve(landing: Callable[[], bytes]) -> Iterator[str]:
    server = MetricsServer("127.0.0.1", 0, Endpoints(lambda _accept: (b"", "text/plain"), lambda: (True, "ok"),
                                                      landing))
    server.start()
    try:
        yield f"http://127.0.0.1:{server.port}/"
    finally:
        server.stop()


@pytest.fixture
def page_url() -> Iterator[str]:
    yield from _serve(lambda: "<!doctype html><p>ünïcode</p>".encode())


@pytest.fixture
def failing_url() -> Iterator[str]:
    def broken() -> bytes:
        raise RuntimeError("boom")

    yield from _serve(broken)


def test_landing_is_served_with_a_no_fetch_policy(page_url: str) -> None:
    with urllib.request.urlopen(page_url, timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
        assert response.headers["Content-Security-Policy"] == LANDING_CSP
        assert "default-src 'none'" in LANDING_CSP and "script-src" not in LANDING_CSP
        assert response.headers["Cache-Control"] == "no-cache"
        assert response.read().decode() == "<!doctype html><p>ünïcode</p>"
    with urllib.request.urlopen(page_url + "?refresh=1", timeout=10) as response:  # a query string is the page
        assert response.status == 200


def test_a_failing_page_is_a_500_and_the_server_lives_on(failing_url: str) -> None:
    for _ in range(2):
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(failing_url, timeout=10)
        assert failed.value.code == 500 and failed.value.read() == b"internal error\n"
