"""End to end with a real Prometheus: two sidecars, the rules, every dashboard query.

Two `llm-savings-exporter run` processes each tail their own deterministic
gateway log (written in two halves, the second while everything runs, so the
rate panels see traffic); a real Prometheus (Debian's /usr/bin/prometheus)
scrapes both every second and evaluates rules/ every second. Then:

* every dashboard query, variables substituted the way Grafana does, returns data;
* the month-to-date totals across both replicas, read through the dashboards'
  own queries and through the recording rules, equal `replay --json` of both
  logs together.

Nothing sleeps to wait for an event: every wait polls a condition with a deadline.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.catalog import BY_NAME as CATALOG_BY_NAME
from tests.support.prometheus import (
    ROOT,
    RULES_DIR,
    Fatal,
    analyse,
    dashboard_exprs,
    free_port,
    grafana_regex_value,
    http_get,
    load_dashboards,
    poll,
    prom_query,
    scalar,
    substitute,
    variable_queries,
)

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(PROMETHEUS).exists(),
        reason="prometheus not installed (apt-get install prometheus)",
    ),
]

JOB = "llm-savings-exporter"
MAX_TENANTS = 3  # five tenants in the logs: two fold into `other` (label overflow)
TENANTS = ["acme", "globex", "initech", "umbrella", "hooli"]
METHODS = ["provider", "tiktoken:o200k_base", "estimate:chars/4"]
COMPONENTS = ["dedupe", "summarise", "tool_trim"]
UNPRICED_MODEL = "acme-llm-1"


# --- deterministic gateway logs ---------------------------------------------------


def record_month(now: datetime) -> tuple[datetime, str]:
    """Start of the month the records go in: the current one (retention keeps it)."""
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    # records are a minute apart from the month's start, replica b's from its second day; every
    # one must be in the past (a record dated ahead of the clock is refused as future_ts), so
    # early in a month use the previous one
    if now - start < timedelta(days=1, hours=12):
        start = (start - timedelta(days=1)).replace(day=1)
    return start, start.strftime("%Y-%m")


def usage_block(model: str, rng: random.Random, prompt: int) -> dict[str, Any]:
    """The provider's own usage, in the model's native shape (docs/record-format.md)."""
    output = rng.randint(20, 800)
    if model.startswith("claude"):
        read = rng.choice([0, prompt // 2, prompt - 10])
        w5 = rng.choice([0, 0, 120])
        w1h = rng.choice([0, 64])
        fresh = max(0, prompt - read - w5 - w1h)
        return {
            "input_tokens": fresh,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": w5 + w1h,
            "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1h},
            "output_tokens": output,
        }
    if model.startswith("gemini"):
        cached = rng.choice([0, prompt // 3])
        return {
            "promptTokenCount": prompt,
            "cachedContentTokenCount": cached,
            "candidatesTokenCount": output,
            "thoughtsTokenCount": rng.choice([0, 50]),
        }
    cached = rng.choice([0, 0, (prompt // 128) * 64])
    return {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def gateway_log(seed: int, prefix: str, month_start: datetime, count: int) -> list[bytes]:
    """A fixed log: priced and unpriced models, compacted and untouched requests,
    shadow-mode estimates, components, duplicates, records without id, rejects."""
    rng = random.Random(seed)
    models = ["gpt-4o", "claude-sonnet-4-5", "gemini-2.5-pro", UNPRICED_MODEL]
    lines: list[bytes] = []
    for i in range(count):
        ts = month_start + timedelta(minutes=i, seconds=rng.randint(0, 59))
        model = models[i % len(models)]
        after = rng.randint(200, 6000)
        compacted = i % 3 != 0
        saved = rng.randint(50, 3000) if compacted else 0
        record: dict[str, Any] = {
            "ts": ts.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "request_id": f"{prefix}-{i:05d}",
            "model": model,
            "tenant": TENANTS[i % len(TENANTS)],
            "tokens_before": after + saved,
            "tokens_after": after,
            "count_method": METHODS[(i // 2) % len(METHODS)],
            "usage": usage_block(model, rng, int(after * rng.uniform(0.95, 1.3))),
        }
        if i % 4 == 0:
            record["would_have_saved"] = rng.randint(10, 900)
        if compacted and i % 2 == 0:
            first = rng.randint(0, saved)
            record["components"] = [{"name": COMPONENTS[i % 3], "tokens_saved": first}]
        if i % 5 == 1:  # the optimizer called a model of its own (record v1 extension `optimizer`)
            record["optimizer"] = {
                "model": UNPRICED_MODEL if i % 3 == 0 else "gpt-4o-mini",  # some spend has no price
                "usage": {"prompt_tokens": 300 + i, "completion_tokens": 40},
            }
        if i % 17 == 5:
            del record["tokens_before"], record["tokens_after"]  # incomplete for savings
        if i % 29 == 7:
            del record["request_id"]  # counted, flagged no_id
        lines.append(json.dumps(record, separators=(",", ":")).encode() + b"\n")
        if i % 11 == 3:  # the gateway logged the same request twice
            lines.append(lines[-1])
    lines.insert(len(lines) // 3, b"this is not json\n")
    bad = {
        "ts": month_start.strftime("%Y-%m-%dT00:00:01Z"),
        "request_id": f"{prefix}-bad",
        "model": "gpt-4o",
        "tokens_before": -5,
        "tokens_after": 3,
    }
    lines.insert(2 * len(lines) // 3, json.dumps(bad).encode() + b"\n")
    return lines


# --- processes --------------------------------------------------------------------


@dataclass
class Exporter:
    name: str
    port: int
    otlp_port: int | None
    log: Path
    lines: list[bytes]
    process: subprocess.Popen[bytes]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def start_exporter(tmp: Path, name: str, lines: list[bytes], otlp: bool) -> Exporter:
    home = tmp / name
    (home / "state").mkdir(parents=True)
    log = home / "gateway.jsonl"
    half = len(lines) // 2
    log.write_bytes(b"".join(lines[:half]))  # the rest arrives while it runs
    port = free_port()
    otlp_port = free_port() if otlp else None
    config = {
        "schema": "llm-savings-config/v1",
        "listen": f"127.0.0.1:{port}",
        "state_dir": str(home / "state"),
        "timezone": "UTC",
        "checkpoint_interval_seconds": 1,
        "labels": {"max_tenants": MAX_TENANTS},
        "sources": [
            {
                "name": "gateway",
                "type": "jsonl",
                "paths": [str(log)],
                "format": "canonical",
                "poll_interval_seconds": 0.2,
                "watch": False,
            }
        ],
        "otlp": {"enabled": otlp, "listen": f"127.0.0.1:{otlp_port}"}
        if otlp
        else {"enabled": False},
    }
    path = home / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LLM_SAVINGS_LOG_LEVEL": "WARNING"}
    process = subprocess.Popen(
        [sys.executable, "-m", "exporter", "run", "--config", str(path)],
        cwd=home,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(home / "stderr.log", "wb"),  # noqa: SIM115
    )
    return Exporter(name, port, otlp_port, log, lines, process)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def metric_value(text: str, name: str, labels: str = "") -> float | None:
    """Value of one sample in a text exposition (labels as written, e.g. 'source="gateway"')."""
    wanted = f"{name}{{{labels}}}" if labels else name
    for line in text.splitlines():
        if line.startswith(wanted + " "):
            return float(line[len(wanted) + 1 :].split()[0])
    return None


def lines_read(exporter: Exporter) -> float | None:
    text = http_get(exporter.base + "/metrics").decode()
    return metric_value(text, "llm_savings_source_lines_read_total", 'source="gateway"')


def start_prometheus(tmp: Path, targets: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    home = tmp / "prometheus"
    (home / "data").mkdir(parents=True)
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(p) for p in sorted(RULES_DIR.glob("*.yaml"))],
        "scrape_configs": [{"job_name": JOB, "static_configs": [{"targets": targets}]}],
    }
    (home / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    port = free_port()
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={home / 'prometheus.yml'}",
            f"--storage.tsdb.path={home / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        cwd=home,
        stdout=subprocess.DEVNULL,
        stderr=open(home / "stderr.log", "wb"),  # noqa: SIM115
    )
    return process, f"http://127.0.0.1:{port}"


@dataclass
class Stack:
    prometheus: str
    exporters: list[Exporter]
    month: str
    replay: dict[str, Any]
    tmp: Path


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("e2e")
    month_start, month = record_month(datetime.now(UTC))
    processes: list[subprocess.Popen[bytes]] = []
    try:
        exporters = [
            start_exporter(tmp, "a", gateway_log(11, "a", month_start, 240), otlp=True),
            start_exporter(
                tmp, "b", gateway_log(22, "b", month_start + timedelta(days=1), 180), otlp=False
            ),
        ]
        processes += [e.process for e in exporters]
        for e in exporters:
            poll(partial(_ready, e), 60, f"{e.name} ready")
        prometheus, base = start_prometheus(tmp, [f"127.0.0.1:{e.port}" for e in exporters])
        processes.append(prometheus)
        poll(lambda: http_get(base + "/-/ready"), 60, "prometheus ready")
        poll(
            lambda: scalar(prom_query(base, f'count(up{{job="{JOB}"}} == 1)')) == 2,
            60,
            "both targets up",
        )
        # The first half is in Prometheus; now the gateway writes the rest.
        poll(lambda: prom_query(base, "llm_savings_requests_total"), 60, "first half scraped")
        for e in exporters:
            with e.log.open("ab") as handle:
                handle.write(b"".join(e.lines[len(e.lines) // 2 :]))
        for e in exporters:
            poll(partial(_read_all, e), 60, f"{e.name} read its whole log")
        # An OTLP export with no spans: the receiver counts the request, no record changes.
        otlp = exporters[0]
        request = urllib.request.Request(
            f"http://127.0.0.1:{otlp.otlp_port}/v1/traces",
            method="POST",
            data=b'{"resourceSpans":[]}',
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.status == 200
        replayed = subprocess.run(
            [
                sys.executable,
                "-m",
                "exporter",
                "replay",
                str(exporters[0].log),
                str(exporters[1].log),
                "--json",
            ],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            check=True,
        )
        result = json.loads(replayed.stdout)
        expected = result["months"][month]

        def settled() -> bool:
            got = scalar(prom_query(base, f'sum(llm_savings_requests_total{{month="{month}"}})'))
            recorded = prom_query(base, f'month:llm_savings_requests:sum{{month="{month}"}}')
            # rate() needs two samples of every series, the newest ones included
            series = prom_query(base, f'{{__name__=~"llm_savings_.+", job="{JOB}"}}[1m]')
            otlp_seen = prom_query(base, "llm_savings_otlp_requests_total")
            return (
                got == expected["requests"]
                and bool(recorded)
                and bool(otlp_seen)
                and scalar(recorded) == expected["requests"]
                and min(len(r["values"]) for r in series) >= 3
            )

        poll(settled, 90, "month-to-date totals and recording rules in Prometheus")
        yield Stack(base, exporters, month, result, tmp)
    finally:
        for process in reversed(processes):
            stop(process)


def _ready(exporter: Exporter) -> bool:
    return _alive(exporter) and http_get(exporter.base + "/readyz") is not None


def _read_all(exporter: Exporter) -> bool:
    return _alive(exporter) and lines_read(exporter) == len(exporter.lines)


def _alive(exporter: Exporter) -> bool:
    if exporter.process.poll() is not None:
        stderr = (exporter.log.parent / "stderr.log").read_text(errors="replace")
        raise Fatal(
            f"exporter {exporter.name} exited {exporter.process.returncode}: {stderr[-2000:]}"
        )
    return True


# --- the checks ---------------------------------------------------------------------


def variables_for(board: dict[str, Any], month: str, base: str) -> dict[str, str]:
    """Grafana's substitution with every multi-value variable on All.

    All is the variable's allValue when it has one; without, Grafana puts the
    values the variable's own query finds (the job variable: the jobs the
    mixin's job selector matches), so that query runs here too.
    """
    values: dict[str, str] = {}
    queries = {name: (expr, label) for name, expr, label in variable_queries(board)}
    for var in board["templating"]["list"]:
        if var["name"] == "month":
            values["month"] = month
        elif var.get("multi") and var.get("allValue") is None:
            expr, label = queries[var["name"]]
            assert expr is not None, var["name"]
            found = label_values(base, label, substitute(expr, values))
            assert found, f"variable {var['name']} finds no values"
            values[var["name"]] = grafana_regex_value(found, None, selected_all=False)
        elif var.get("multi"):
            values[var["name"]] = grafana_regex_value([], var.get("allValue"), selected_all=True)
    return values


def label_values(base: str, label: str, match: str) -> list[str]:
    url = f"{base}/api/v1/label/{label}/values?" + urllib.parse.urlencode({"match[]": match})
    return list(json.loads(http_get(url))["data"])


def test_month_variable_defaults_to_the_latest_month(stack: Stack) -> None:
    months = label_values(stack.prometheus, "month", "llm_savings_requests_total")
    assert sorted(months, reverse=True)[0] == stack.month  # sort 2: alphabetical descending
    assert "unknown" not in months
    tenants = label_values(
        stack.prometheus, "tenant", f'llm_savings_requests_total{{month="{stack.month}"}}'
    )
    assert len(tenants) == MAX_TENANTS + 1 and "other" in tenants  # the cap, seen from Grafana


def served_metrics(stack: Stack) -> set[str]:
    """The llm_savings_ metric names the sidecars expose samples of."""
    result = prom_query(stack.prometheus, 'count by (__name__) ({__name__=~"llm_savings_.+"})')
    return {r["metric"]["__name__"] for r in result}


def test_every_dashboard_query_returns_data(stack: Stack) -> None:
    """Every query has data; a panel may be empty only while the sidecars under test serve
    none of its catalog metric at all (a counter of the catalog that this build's engine does
    not fill yet), and those panels are printed."""
    served = served_metrics(stack)
    empty = []
    unserved = []
    count = 0
    for name, board in load_dashboards().items():
        values = variables_for(board, stack.month, stack.prometheus)
        for title, expr in dashboard_exprs(board):
            count += 1
            if prom_query(stack.prometheus, substitute(expr, values)):
                continue
            missing = sorted(set(analyse(expr).metrics) & set(CATALOG_BY_NAME) - served)
            (unserved if missing else empty).append(f"{name}: {title}: {missing or expr}")
    assert count > 50
    assert empty == []
    print("panels whose metrics the sidecars do not serve:", *unserved, sep="\n  ")


def panel_series(stack: Stack, board: str, title: str) -> list[dict[str, Any]]:
    dash = load_dashboards()[board]
    exprs = [expr for t, expr in dashboard_exprs(dash) if t == title]
    assert len(exprs) == 1, f"{board}: no single query in panel {title!r}"
    values = variables_for(dash, stack.month, stack.prometheus)
    return prom_query(stack.prometheus, substitute(exprs[0], values))


def panel_value(stack: Stack, board: str, title: str) -> float:
    return scalar(panel_series(stack, board, title))


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


# Overview stat panel -> replay key.
OVERVIEW_TOTALS = {
    "Requests": "requests",
    "Dollars saved by the proxy": "usd_saved",
    "Would have saved (shadow mode)": "would_have_saved_usd",
    "Spend": "spend_usd",
    "Provider cache savings, net (not the proxy's)": "cache_savings_usd",
    "Cache hit rate": "cache_hit_rate",
    "Unpriced requests": "unpriced",
}


def test_dashboard_totals_equal_replay(stack: Stack) -> None:
    expected = stack.replay["months"][stack.month]
    got = {
        key: panel_value(stack, "llm-savings-overview.json", title)
        for title, key in OVERVIEW_TOTALS.items()
    }
    want = {key: float(expected[key]) for key in OVERVIEW_TOTALS.values()}
    assert all(close(got[k], want[k]) for k in want), (got, want)
    # Token stats show one figure per count method (estimators are not added up); together
    # they are replay's total.
    for title, key in (("Tokens saved", "tokens_saved"), ("Would-have-saved tokens", "would_have_saved_tokens")):
        series = panel_series(stack, "llm-savings-overview.json", title)
        assert {r["metric"]["method"] for r in series} <= set(METHODS) and len(series) > 1, title
        assert close(sum(float(r["value"][1]) for r in series), float(expected[key])), title
    assert panel_value(stack, "llm-savings-provenance.json", "Duplicates") == expected["duplicates"]
    unknown = stack.replay["months"].get("unknown", {}).get("rejected", 0)
    assert (
        panel_value(stack, "llm-savings-provenance.json", "Rejected records")
        == expected["rejected"] + unknown
    )
    # The logs exercise what the panels show.
    for key in (
        "duplicates",
        "rejected",
        "unpriced",
        "tokens_saved",
        "would_have_saved_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
    ):
        assert expected[key] > 0, key
    assert unknown > 0


def test_recording_rules_equal_replay(stack: Stack) -> None:
    expected = stack.replay["months"][stack.month]
    month = stack.month

    def q(expr: str) -> float:
        return scalar(prom_query(stack.prometheus, expr))

    mm = f'month="{month}"'

    def mtd(name: str, extra: str = "") -> str:
        return f"sum(month_model_tenant:llm_savings_{name}:sum{{{mm}{extra}}})"

    checks = {
        "requests": f"month:llm_savings_requests:sum{{{mm}}}",
        "tokens_saved": f"month:llm_savings_tokens_saved:sum{{{mm}}}",
        "usd_saved": f"month:llm_savings_usd_saved:sum{{{mm}}}",
        "spend_usd": f"month:llm_savings_spend_usd:sum{{{mm}}}",
        "cache_savings_usd": f"month:llm_savings_cache_savings_usd:net{{{mm}}}",
        "cache_hit_rate": f"month:llm_savings_cache_hit:ratio{{{mm}}}",
        "would_have_saved_usd": mtd("would_have_saved_usd"),
        "output_tokens": mtd("output_tokens"),
        "fresh_input_tokens": mtd("prompt_tokens", ', tier="fresh"'),
        "cache_read_tokens": mtd("prompt_tokens", ', tier="cache_read"'),
        "cache_write_tokens": mtd("prompt_tokens", ', tier=~"cache_write_5m|cache_write_1h"'),
    }
    got = {key: q(expr) for key, expr in checks.items()}
    want = {key: float(expected[key]) for key in checks}
    assert all(close(got[k], want[k]) for k in want), (got, want)
    # The default-factor share: the bundled table ships no billed_token_factor, so
    # every dollar saved on a non-provider count rests on the default factor.
    share = q(f'month:llm_savings_usd_saved_default_factor:ratio{{month="{month}"}}')
    assert 0 < share < 1
    # Divergence per population: the logs' provider prompts are 0.95-1.3x the counts.
    divergence = prom_query(
        stack.prometheus,
        f"month_model_method_population:llm_savings_estimator_divergence:ratio{{{mm}}}",
    )
    assert {r["metric"]["population"] for r in divergence} == {"compacted", "untouched"}
    assert all(0.9 < float(r["value"][1]) < 1.5 for r in divergence)
    # The 5m rates see the second half of the logs.
    for rule in ("usd_saved", "spend_usd", "requests", "tokens_saved"):
        assert q(f"sum(model_tenant:llm_savings_{rule}:rate5m)") > 0, rule


def test_replicas_sum_without_instance(stack: Stack) -> None:
    """Each replica holds only its own log; the rules add them, the instance label goes."""
    per_instance = prom_query(
        stack.prometheus, f'sum by (instance) (llm_savings_requests_total{{month="{stack.month}"}})'
    )
    assert len(per_instance) == 2 and all(float(r["value"][1]) > 0 for r in per_instance)
    recorded = prom_query(
        stack.prometheus, f'month_model_tenant:llm_savings_requests:sum{{month="{stack.month}"}}'
    )
    assert recorded and all(
        "instance" not in r["metric"] and "job" not in r["metric"] for r in recorded
    )


def test_multi_value_model_selection_is_escaped_like_grafana(stack: Stack) -> None:
    """`gemini-2.5-pro` has a regex dot; Grafana escapes it in `(a|b)`."""
    board = load_dashboards()["llm-savings-overview.json"]
    values = variables_for(board, stack.month, stack.prometheus)
    values["model"] = grafana_regex_value(
        ["claude-sonnet-4-5", "gemini-2.5-pro"], ".*", selected_all=False
    )
    assert values["model"] == "(claude-sonnet-4-5|gemini-2\\\\.5-pro)"
    [expr] = [e for t, e in dashboard_exprs(board) if t == "Dollars saved by the proxy"]
    selected = scalar(prom_query(stack.prometheus, substitute(expr, values)))
    by_model = {
        r["metric"]["model"]: float(r["value"][1])
        for r in prom_query(
            stack.prometheus,
            f'sum by (model) (llm_savings_usd_saved_total{{month="{stack.month}"}})',
        )
    }
    assert close(selected, by_model["claude-sonnet-4-5"] + by_model["gemini-2.5-pro"])
    assert 0 < selected < sum(by_model.values())


def test_alerts_evaluate_and_the_scenario_s_conditions_go_pending(stack: Stack) -> None:
    """Every alert evaluates without error; none fires (all have a `for:` longer than
    the test); the conditions this scenario creates hold, so their alerts are pending."""
    body = json.loads(http_get(stack.prometheus + "/api/v1/rules?type=alert"))
    rules = [r for g in body["data"]["groups"] for r in g["rules"]]
    assert len(rules) >= 10
    assert all(r["health"] == "ok" for r in rules), [r for r in rules if r["health"] != "ok"]
    firing = [r["name"] for r in rules if r["state"] == "firing"]
    assert firing == []
    pending = {r["name"] for r in rules if r["state"] == "pending"}
    expected = {
        "LlmSavingsLabelOverflow",  # five tenants, a cap of three
        "LlmSavingsUnpricedModel",  # acme-llm-1 is in no price version
    }
    # The bundled table is stale when its newest version took effect over 90 days ago.
    stale = prom_query(
        stack.prometheus,
        "time() - max(llm_savings_price_table_newest_effective_timestamp_seconds) > 90 * 86400",
    )
    if stale:
        expected.add("LlmSavingsPriceTableStale")
    # Replica b rejects about 1% of its records: on either side of the threshold.
    assert expected <= pending <= expected | {"LlmSavingsRecordsRejected"}


# What Prometheus 2.42 sends: OpenMetrics first.
PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                     "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


def test_prometheus_scrapes_openmetrics_with_info_families(stack: Stack) -> None:
    """The sidecars answer Prometheus with OpenMetrics, `_info` families typed info, and Prometheus
    ingests them: both targets healthy, each with its price table and build info."""
    for exporter in stack.exporters:
        request = urllib.request.Request(exporter.base + "/metrics", headers={"Accept": PROMETHEUS_ACCEPT})
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.headers["Content-Type"].startswith("application/openmetrics-text")
            text = response.read().decode()
        assert "# TYPE llm_savings_price_table info\n" in text and "# TYPE llm_savings_build info\n" in text
        assert text.endswith("# EOF\n")
    targets = json.loads(http_get(stack.prometheus + "/api/v1/targets"))["data"]["activeTargets"]
    assert len(targets) == 2 and all(t["health"] == "up" and not t["lastError"] for t in targets), targets
    for name in ("llm_savings_price_table_info", "llm_savings_build_info"):
        by_instance = prom_query(stack.prometheus, f"count by (instance) ({name} == 1)")
        assert len(by_instance) == 2, (name, by_instance)
