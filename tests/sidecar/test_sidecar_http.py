"""The sidecar's HTTP face: /metrics in both formats, /healthz, /readyz, the landing page, 404."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics

from exporter.sidecar.sidecar import Sidecar
from tests.support.processes import poll
from tests.support.sidecar import NOV, WALL, make_config, record_line, requests_counted


def _get(url: str, accept: str | None = None) -> tuple[int, str, bytes]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def test_endpoints(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_bytes(b"".join(record_line(i) for i in range(12)))
    sidecar = Sidecar(make_config(tmp_path), wall_clock=lambda: WALL)
    sidecar.start()
    base = f"http://127.0.0.1:{sidecar.port}"
    try:
        poll(lambda: requests_counted(sidecar) == 12 or None, 10, "12 requests counted")
        status, ctype, body = _get(base + "/metrics")
        assert status == 200 and ctype.startswith("text/plain; version=0.0.4")
        assert b'llm_savings_requests_total{month="2026-11"' in body
        status, ctype, body = _get(base + "/metrics", "application/openmetrics-text; version=1.0.0")
        assert status == 200 and ctype.startswith("application/openmetrics-text")
        families = {f.name: f for f in parse_openmetrics(body.decode())}
        created = [s for s in families["llm_savings_requests"].samples if s.name.endswith("_created")]
        assert created and all(s.value == NOV for s in created)  # the month's start
        assert _get(base + "/healthz")[0] == 200
        assert _get(base + "/readyz")[:1] == (200,)
        status, ctype, body = _get(base + "/")
        assert status == 200 and ctype.startswith("text/html") and b"/metrics" in body and b"2026-11" in body
        assert _get(base + "/nope")[0] == 404
    finally:
        sidecar.stop()
