"""``report --format html`` in a real browser: the page replay's numbers make, offline, at phone width.

The real CLI writes the page from the demo simulator's log; headless Chromium opens it
as a file (no server: the page needs nothing else) and its rendered DOM must carry
exactly ``replay --json``'s month figures; a screenshot at 375 px must be a real rendering.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from exporter.demo.simulator import Simulator
from tests.support.browser import dump_dom, keep, screenshot
from tests.support.cdp import DevTools
from tests.support.landing_dom import LAYOUT, PageData, assert_not_blank
from tests.support.png import read_png
from tests.support.processes import ROOT, replay_json

NOV = 1_793_491_200  # 2026-11-01T00:00:00Z


def test_report_html_in_chromium_shows_replays_numbers(tmp_path: Path) -> None:
    log = tmp_path / "gateway.jsonl"
    Simulator(9, NOV - 2 * 86_400, rate_per_s=0.02).write(log, 3000)
    page_path = tmp_path / "report.html"
    result = subprocess.run([sys.executable, "-m", "exporter", "report", str(log), "--format", "html",
                             "-o", str(page_path)], capture_output=True, cwd=ROOT, timeout=120, check=False,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr.decode()
    keep(page_path, "report.html")
    expected = replay_json([log])["months"]
    url = page_path.as_uri()
    page = PageData(dump_dom(url, tmp_path / "profile-dom"))
    assert page.external == []
    focus = max(name for name in expected if name != "unknown")
    assert page.focus == focus
    for key in ("usd_saved", "spend_usd", "cache_savings_usd", "would_have_saved_usd", "tokens_saved"):
        assert float(page.figures[key]) == expected[focus][key], key  # the same float, not a rounding of it
    assert set(page.months) == set(expected)
    for name, row in page.months.items():
        for key in ("requests", "tokens_saved", "usd_saved", "spend_usd", "cache_savings_usd", "rejected"):
            assert float(row[f"data-{key.replace('_', '-')}"]) == expected[name][key], (name, key)
    shot = screenshot(url, tmp_path / "report-375.png", 375, 1600, tmp_path / "profile-shot")
    keep(shot, shot.name)
    assert_not_blank(read_png(shot), 375)
    with DevTools(tmp_path / "profile-cdp") as browser:  # offline: the file asks for nothing else
        browser.open(url, 375, 900)
        layout = browser.evaluate(LAYOUT)
        assert browser.requested() == [url]
    assert layout["page"][0] <= layout["page"][1] and layout["smallestText"] >= 11, layout
