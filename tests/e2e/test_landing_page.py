"""The landing page ``/`` in a real browser: a real sidecar tailing the demo simulator's log.

Headless Chromium loads ``/`` from the running ``python -m exporter run`` process; the
screenshots at phone (375 px) and desktop (1280 px) width are kept in the test's tmp
directory and must be real renderings (the asked width, many colours, not one colour);
the figures of the rendered DOM (exact values in data attributes) must be the sums of
the same sidecar's /metrics, scraped when both had counted the whole log. Over the
DevTools protocol (``tests/support/cdp.py``) the laid-out page is measured at both
widths: nothing wider than the screen, no table scrolling sideways, no small text, and
no network request but the page itself.
``LLM_SAVINGS_TEST_ARTIFACTS=DIR`` keeps a copy of the screenshots and the page in DIR.
"""

from __future__ import annotations

import json
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from exporter import catalog
from exporter.demo.simulator import Simulator
from tests.support.browser import dump_dom, keep, screenshot
from tests.support.cdp import DevTools
from tests.support.landing_dom import LAYOUT, PageData, assert_not_blank
from tests.support.png import read_png
from tests.support.processes import Process, Samples, poll, replay_json, samples, scrape, total

WIDTHS = (375, 1280)
REL = 1e-9  # a page sums cells in another order than /metrics sums its series


def _config(tmp: Path) -> Path:
    lines = ["schema: llm-savings-config/v1", 'listen: "127.0.0.1:0"',
             f"state_dir: {json.dumps(str(tmp / 'state'))}", "checkpoint_interval_seconds: 0.2", "sources:",
             "  - name: gw", f"    paths: [{json.dumps(str(tmp / 'logs' / '*.jsonl'))}]", "    watch: false",
             "    poll_interval_seconds: 0.05"]
    path = tmp / "config.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A sidecar that has counted the whole log: its port, its /metrics, and what replay says of the log."""
    tmp = tmp_path_factory.mktemp("landing")
    (tmp / "logs").mkdir()
    log, previous = tmp / "logs" / "gateway.jsonl", tmp / "logs" / "previous.jsonl"
    # about 17 hours of traffic ending an hour ago (never in the future), and some of last month
    Simulator(5, time.time() - 18 * 3600, rate_per_s=0.05).write(log, 3000)
    month_start = datetime.now(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp()
    Simulator(6, month_start - 9 * 86_400, rate_per_s=0.01).write(previous, 1500)
    expected = replay_json([previous, log])
    requests = sum(month["requests"] for month in expected["months"].values())
    process = Process(_config(tmp), tmp / "sidecar.log")
    try:
        port = process.port()
        poll(lambda: total(samples(scrape(port)), catalog.REQUESTS_TOTAL.name) == requests or None, 60,
             "the sidecar to count the whole log")
        yield port, tmp, expected
    finally:
        process.proc.terminate()
        process.wait()


def _by(parsed: dict[str, Samples], spec: catalog.MetricSpec, label: str, **match: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in parsed.get(spec.name, {}).items():
        labels = dict(key)
        if all(labels.get(k) == v for k, v in match.items()):
            out[labels[label]] = out.get(labels[label], 0.0) + value
    return out


def test_landing_page_in_chromium_matches_metrics(landing: Any) -> None:
    port, tmp, expected = landing
    url = f"http://127.0.0.1:{port}/"
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/html")
        assert "default-src 'none'" in response.headers["Content-Security-Policy"]
        (tmp / "landing.html").write_bytes(response.read())
    keep(tmp / "landing.html", "landing.html")
    page = PageData(dump_dom(url, tmp / "profile-dom"))
    parsed = samples(scrape(port))
    for width in WIDTHS:
        shot = screenshot(url, tmp / f"landing-{width}.png", width, 1800, tmp / f"profile-{width}")
        keep(shot, shot.name)
        assert_not_blank(read_png(shot), width)
    assert page.external == []
    month = page.focus
    assert month in expected["months"], (month, list(expected["months"]))
    m = {"month": month}

    def close(figure: str, value: float) -> None:
        assert float(page.figures[figure]) == pytest.approx(value, rel=REL, abs=1e-12), figure

    close("usd_saved", total(parsed, catalog.USD_SAVED_TOTAL.name, **m))
    close("spend_usd", total(parsed, catalog.SPEND_USD_TOTAL.name, **m))
    close("would_have_saved_usd", total(parsed, catalog.WOULD_HAVE_SAVED_USD_TOTAL.name, **m))
    close("cache_savings_usd", total(parsed, catalog.CACHE_READ_SAVINGS_USD_TOTAL.name, **m)
          - total(parsed, catalog.CACHE_WRITE_PREMIUM_USD_TOTAL.name, **m))
    assert int(page.figures["tokens_saved"]) == total(parsed, catalog.TOKENS_SAVED_TOTAL.name, **m)
    baseline = catalog.BY_NAME.get(catalog.PREFIX + "baseline_input_tokens_total")  # counted by newer engines
    if baseline is None:
        assert page.figures["saved_pct"] == ""  # not counted: no value, never 0%
    else:
        close("saved_pct", total(parsed, catalog.TOKENS_SAVED_TOTAL.name, **m) / total(parsed, baseline.name, **m))

    for kind in ("model", "tenant"):
        requests = _by(parsed, catalog.REQUESTS_TOTAL, kind, **m)
        usd = _by(parsed, catalog.USD_SAVED_TOTAL, kind, **m)
        spend = _by(parsed, catalog.SPEND_USD_TOTAL, kind, **m)
        saved = _by(parsed, catalog.TOKENS_SAVED_TOTAL, kind, **m)
        rows = page.rows[kind]
        assert rows and set(rows) <= set(requests)
        assert len(rows) == min(10, len(requests))  # the top ten, the rest summed in one line
        for name, row in rows.items():
            assert int(row["data-requests"]) == requests[name], (kind, name)
            assert int(row["data-tokens-saved"]) == saved.get(name, 0), (kind, name)
            assert float(row["data-usd-saved"]) == pytest.approx(usd.get(name, 0.0), rel=REL, abs=1e-12)
            assert float(row["data-spend-usd"]) == pytest.approx(spend.get(name, 0.0), rel=REL, abs=1e-12)
    components = _by(parsed, catalog.TOKENS_SAVED_TOTAL, "component", **m)
    assert {name: int(row["data-tokens-saved"]) for name, row in page.rows["component"].items()} == components

    flagged = _by(parsed, catalog.RECORDS_FLAGGED_TOTAL, "flag", **m)
    assert {n: int(r["data-count"]) for n, r in page.provenance.get("flagged", {}).items()} == flagged
    rejected = _by(parsed, catalog.RECORDS_REJECTED_TOTAL, "reason", **m)
    assert {n: int(r["data-count"]) for n, r in page.provenance.get("rejected", {}).items()} == rejected
    versions = _by(parsed, catalog.SPEND_USD_TOTAL, "price_version", **m)
    assert set(page.provenance["price_version"]) == set(versions)
    sources = _by(parsed, catalog.USD_SAVED_TOTAL, "factor_source", **m)
    for name, tag in page.provenance["factor_source"].items():
        assert float(tag["data-usd-saved"]) == pytest.approx(sources[name], rel=REL, abs=1e-12)
    assert int(page.provenance["duplicates"][""]["data-count"]) == total(parsed, catalog.DUPLICATES_TOTAL.name, **m)

    # every month of the log, with replay's numbers
    assert set(page.months) == set(expected["months"])
    assert len([name for name in page.months if name != "unknown"]) >= 2
    for name, row in page.months.items():
        assert int(row["data-requests"]) == expected["months"][name]["requests"]
        assert float(row["data-usd-saved"]) == pytest.approx(expected["months"][name]["usd_saved"], rel=REL)
        assert int(row["data-requests"]) == total(parsed, catalog.REQUESTS_TOTAL.name, month=name)


@pytest.mark.parametrize("width", WIDTHS)
def test_landing_page_reads_at_phone_and_desktop_width(landing: Any, width: int) -> None:
    """Laid out by the browser: nothing wider than the screen, every table without sideways scrolling,
    text at least 11 px (charts' labels at least 8 px high), and no request but the page itself."""
    port, tmp, _expected = landing
    url = f"http://127.0.0.1:{port}/"
    with DevTools(tmp / f"profile-cdp-{width}") as browser:
        browser.open(url, width, 900)
        layout = browser.evaluate(LAYOUT)
        assert browser.requested() == [url]
    page_width, viewport = layout["page"]
    assert page_width <= viewport, layout
    assert all(scroll <= client for scroll, client in layout["tables"]), layout["tables"]
    assert layout["smallestText"] >= 11, layout
    assert layout["smallestChartText"] >= 8, layout
    assert layout["charts"] >= 5, layout
