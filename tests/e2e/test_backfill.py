"""Backfill end to end: a past month's log -> OpenMetrics -> promtool blocks -> a real Prometheus.

The demo's simulator writes a gateway log across the boundary between the two
months before the current one; `llm-savings-exporter backfill` turns it into
timestamped OpenMetrics; Debian's `promtool tsdb create-blocks-from openmetrics`
builds blocks; a real Prometheus starts on them (no scrape target at all). Then
the dashboards' own stat queries, read from dashboards/*.json with `$month` set
to each past month and evaluated at the backfill's last step, return
`replay --json`'s totals. (At the older month's end they may be a little lower:
the simulator logs retried lines late, so a duplicate of an October record can
arrive in November, as it would have for a live sidecar.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.demo.simulator import Simulator
from tests.e2e.test_prometheus_e2e import OVERVIEW_TOTALS, PROMETHEUS, close, stop, variables_for
from tests.support.prometheus import (
    ROOT,
    analyse,
    dashboard_exprs,
    free_port,
    http_get,
    load_dashboards,
    poll,
    substitute,
)

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
pytestmark = pytest.mark.skipif(not (Path(PROMETHEUS).exists() and Path(PROMTOOL).exists()),
                                reason="prometheus/promtool not installed (apt-get install prometheus)")
JOB = "llm-savings-exporter"
RECORDS = 1500


@dataclass
class Backfilled:
    prometheus: str
    months: dict[str, float]  # month -> its end
    replay: dict[str, Any]
    until: float
    summary: str


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "exporter", *args], cwd=ROOT, env=env(), capture_output=True,
                          text=True, check=True, timeout=300)


def query_at(base: str, expr: str, at: float) -> list[dict[str, Any]]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"})
    body = json.loads(http_get(url))
    assert body["status"] == "success", body
    if body["data"]["resultType"] == "scalar":
        return [{"metric": {}, "value": body["data"]["result"]}]
    return list(body["data"]["result"])


def one(result: list[dict[str, Any]]) -> float:
    assert len(result) == 1, result
    return float(result[0]["value"][1])


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backfilled]:
    tmp = tmp_path_factory.mktemp("backfill")
    now = datetime.now(UTC)
    newer = (now.replace(day=1, hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)).replace(day=1)
    older = (newer - timedelta(days=1)).replace(day=1)
    start = newer - timedelta(days=2)
    log = tmp / "gateway.jsonl"
    Simulator(18, start.timestamp(), rate_per_s=RECORDS / (4 * 86400)).write(log, RECORDS)
    until = (newer + timedelta(days=5)).timestamp()  # after the last record: the live sidecar took over then
    out = tmp / "backfill.om"
    made = cli("backfill", str(log), "--out", str(out), "--label", f"job={JOB}", "--label", "instance=backfill",
               "--until", datetime.fromtimestamp(until, UTC).isoformat())
    replay = json.loads(cli("replay", str(log), "--json").stdout)
    data = tmp / "data"
    subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=744h",
                    str(out), str(data)], check=True, capture_output=True, timeout=600)
    config = tmp / "prometheus.yml"
    config.write_text(yaml.safe_dump({"global": {"scrape_interval": "1m"}}), encoding="utf-8")
    port = free_port()
    process = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={data}",
         "--storage.tsdb.retention.time=3650d", f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        cwd=tmp, stdout=subprocess.DEVNULL, stderr=open(tmp / "prometheus.log", "wb"))  # noqa: SIM115
    base = f"http://127.0.0.1:{port}"
    try:
        poll(lambda: http_get(base + "/-/ready"), 60, "prometheus ready")
        months = {older.strftime("%Y-%m"): newer.timestamp(), newer.strftime("%Y-%m"): until}
        poll(lambda: query_at(base, "count(llm_savings_requests_total)", until), 60, "the blocks loaded")
        yield Backfilled(base, months, replay, until, made.stderr)
    finally:
        stop(process)


def stat(backfilled: Backfilled, board: str, title: str, month: str) -> float:
    dash = load_dashboards()[board]
    [expr] = [expr for t, expr in dashboard_exprs(dash) if t == title]
    values = variables_for(dash, month, backfilled.prometheus)
    return one(query_at(backfilled.prometheus, substitute(expr, values), backfilled.until))


def test_both_past_months_are_in_the_log(backfilled: Backfilled) -> None:
    assert set(backfilled.months) <= set(backfilled.replay["months"])
    for month in backfilled.months:
        assert backfilled.replay["months"][month]["requests"] > 100, month
    assert "samples of" in backfilled.summary


def test_dashboard_totals_of_each_past_month_equal_replay(backfilled: Backfilled) -> None:
    for month in backfilled.months:
        expected = backfilled.replay["months"][month]
        got = {key: stat(backfilled, "llm-savings-overview.json", title, month)
               for title, key in OVERVIEW_TOTALS.items()}
        want = {key: float(expected[key]) for key in OVERVIEW_TOTALS.values()}
        assert all(close(got[k], want[k]) for k in want), (month, got, want)
        assert stat(backfilled, "llm-savings-provenance.json", "Duplicates", month) == expected["duplicates"]
    newest = max(backfilled.months)
    unknown = backfilled.replay["months"].get("unknown", {}).get("rejected", 0)
    rejected = stat(backfilled, "llm-savings-provenance.json", "Rejected records", newest)
    assert rejected == backfilled.replay["months"][newest]["rejected"] + unknown


def test_the_month_variable_lists_the_backfilled_months(backfilled: Backfilled) -> None:
    start = min(backfilled.months.values()) - 40 * 86400
    url = (f"{backfilled.prometheus}/api/v1/label/month/values?"
           + urllib.parse.urlencode({"match[]": "llm_savings_requests_total", "start": start,
                                     "end": backfilled.until}))
    assert set(backfilled.months) <= set(json.loads(http_get(url))["data"])


def test_every_backfilled_series_is_marked_and_ends_at_until(backfilled: Backfilled) -> None:
    base, until = backfilled.prometheus, backfilled.until
    marked = query_at(base, 'count({__name__=~"llm_savings_.+", backfill="true", job="llm-savings-exporter"})', until)
    everything = query_at(base, 'count({__name__=~"llm_savings_.+"})', until)
    assert one(marked) == one(everything) > 100
    # a live sidecar's series start where these end: no instant sees both
    assert query_at(base, 'count({__name__=~"llm_savings_.+"})', until + 600) == []
    # the older month is sampled at its end (a step whatever --step is), then goes on
    older = min(backfilled.months)
    requests = f'sum(llm_savings_requests_total{{month="{older}"}})'
    at_end = one(query_at(base, requests, backfilled.months[older]))
    assert 0.99 * backfilled.replay["months"][older]["requests"] <= at_end
    assert at_end <= one(query_at(base, requests, until)) == backfilled.replay["months"][older]["requests"]


def test_every_month_panel_returns_data_for_each_backfilled_month(backfilled: Backfilled) -> None:
    """Every dashboard query that reads `$month` answers for a backfilled month (no live series at all)."""
    empty, count = [], 0
    for name, board in load_dashboards().items():
        if not any("$month" in expr for _, expr in dashboard_exprs(board)):
            continue  # the health board: live targets only (its variables read `up`)
        for month in backfilled.months:
            values = variables_for(board, month, backfilled.prometheus)
            for title, expr in dashboard_exprs(board):
                if "$month" not in expr:
                    continue  # rates and health: they need a live sidecar
                count += 1
                if query_at(backfilled.prometheus, substitute(expr, values), backfilled.until):
                    continue
                # empty only where the log has nothing of that kind (the simulator flags no record)
                if any(query_at(backfilled.prometheus, f"count({metric})", backfilled.until)
                       for metric in analyse(expr).metrics):
                    empty.append(f"{name}: {title} ({month})")
    assert count > 40 and empty == []
