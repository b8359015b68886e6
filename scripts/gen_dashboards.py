#!/usr/bin/env python3
"""Generate the Grafana dashboards in dashboards/ from the metric catalog.

Run from anywhere: ``python scripts/gen_dashboards.py`` rewrites
``dashboards/*.json``; ``--check`` writes nothing and exits 1 when the committed
files differ from what this script produces (the tests run it too).

Why generated: every panel's unit comes from the catalog entry of the metric it
shows (``unit_of``), a metric missing from the catalog stops the generation,
and the three dashboards share one set of template variables. The PromQL is
written out in full in each panel, so a reviewer reads the exact query Grafana
runs. The queries read the exporter's own counters (not the recording rules)
so the dashboards work on a Prometheus without ``rules/`` loaded.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from exporter.catalog import BY_NAME, MetricSpec  # noqa: E402

OUT_DIR = ROOT / "dashboards"
SCHEMA_VERSION = 39
TAG = "llm-savings"
DS = {"type": "prometheus", "uid": "${datasource}"}

# Catalog unit -> Grafana unit id. A counter of tokens shown as a rate is still
# "short"; panels that change the dimension (a ratio, dollars per hour) name
# their unit explicitly.
GRAFANA_UNIT = {
    "usd": "currencyUSD",
    "tokens": "short",
    "requests": "short",
    "records": "short",
    "lines": "short",
    "seconds": "s",
    "bytes": "bytes",
    "": "short",
}


def catalog_unit(name: str) -> str:
    """Grafana unit of a catalog metric; KeyError if the metric is not in the catalog."""
    metric: MetricSpec = BY_NAME[name]
    return GRAFANA_UNIT[metric.unit]


@dataclass(frozen=True)
class Target:
    expr: str
    legend: str = ""


@dataclass
class Panel:
    """One data panel; ``unit`` or ``unit_of`` (a catalog metric) decides the unit."""

    kind: str  # stat | timeseries | bargauge
    title: str
    description: str
    targets: list[Target]
    w: int = 6
    h: int = 4
    unit: str | None = None
    unit_of: str | None = None
    decimals: int | None = None
    stack: bool = False
    extra_defaults: dict[str, Any] = field(default_factory=dict)

    def resolved_unit(self) -> str:
        if self.unit is not None:
            return self.unit
        if self.unit_of is None:
            raise ValueError(f"panel {self.title!r} has neither unit nor unit_of")
        return catalog_unit(self.unit_of)


# --- template variables ---------------------------------------------------

def datasource_var() -> dict[str, Any]:
    return {
        "name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
        "current": {}, "hide": 0, "includeAll": False, "multi": False, "options": [],
        "refresh": 1, "regex": "", "skipUrlSync": False,
    }


def query_var(name: str, label: str, query: str, *, multi: bool, sort: int,
              all_value: str | None = None) -> dict[str, Any]:
    """A Prometheus label_values variable. sort 2 = alphabetical descending."""
    var: dict[str, Any] = {
        "name": name, "label": label, "type": "query", "datasource": DS,
        "definition": query,
        "query": {"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
        "current": {}, "hide": 0, "includeAll": multi, "multi": multi, "options": [],
        "refresh": 2, "regex": "", "skipUrlSync": False, "sort": sort,
    }
    if multi:
        var["allValue"] = all_value
    return var


SAVINGS_VARS = [
    datasource_var(),
    # YYYY-MM sorts as text; descending puts the latest month first, and
    # Grafana selects the first value by default.
    query_var("month", "Month", "label_values(llm_savings_requests_total, month)", multi=False, sort=2),
    # All = ".*" (not a list of every value): it also matches series whose
    # tenant is empty and stays short with many tenants.
    query_var("tenant", "Tenant", 'label_values(llm_savings_requests_total{month="$month"}, tenant)',
              multi=True, sort=1, all_value=".*"),
    query_var("model", "Model",
              'label_values(llm_savings_requests_total{month="$month", tenant=~"$tenant"}, model)',
              multi=True, sort=1, all_value=".*"),
]

HEALTH_VARS = [
    datasource_var(),
    query_var("instance", "Instance", "label_values(llm_savings_build_info, instance)",
              multi=True, sort=1, all_value=".*"),
]


# --- panel JSON -------------------------------------------------------------

def panel_json(panel: Panel, panel_id: int, x: int, y: int) -> dict[str, Any]:
    defaults: dict[str, Any] = {"unit": panel.resolved_unit(), "color": {"mode": "palette-classic"}}
    if panel.decimals is not None:
        defaults["decimals"] = panel.decimals
    defaults.update(panel.extra_defaults)
    options: dict[str, Any]
    instant = panel.kind in ("stat", "bargauge")
    if panel.kind == "stat":
        defaults["color"] = {"mode": "fixed", "fixedColor": "green"}
        options = {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "value", "graphMode": "none", "justifyMode": "auto",
            "orientation": "auto", "textMode": "auto",
        }
    elif panel.kind == "bargauge":
        options = {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "displayMode": "basic", "orientation": "horizontal", "showUnfilled": True,
            "minVizHeight": 10, "minVizWidth": 0, "valueMode": "color",
        }
    elif panel.kind == "timeseries":
        defaults["custom"] = {
            "drawStyle": "line", "lineWidth": 1, "fillOpacity": 10, "showPoints": "never",
            "spanNulls": False, "axisPlacement": "auto",
            "stacking": {"mode": "normal" if panel.stack else "none", "group": "A"},
        }
        options = {
            "legend": {"displayMode": "table", "placement": "bottom", "showLegend": True,
                       "calcs": ["lastNotNull"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        }
    else:
        raise ValueError(f"unknown panel kind {panel.kind}")
    targets = [
        {
            "refId": chr(ord("A") + i), "datasource": DS, "expr": t.expr,
            "legendFormat": t.legend or "__auto", "instant": instant, "range": not instant,
            "editorMode": "code",
        }
        for i, t in enumerate(panel.targets)
    ]
    return {
        "id": panel_id, "type": panel.kind, "title": panel.title, "description": panel.description,
        "datasource": DS, "gridPos": {"h": panel.h, "w": panel.w, "x": x, "y": y},
        "fieldConfig": {"defaults": defaults, "overrides": []}, "options": options,
        "targets": targets,
    }


def layout(rows: list[list[Panel]]) -> list[dict[str, Any]]:
    """Place rows of panels on the 24-column grid, top to bottom."""
    out: list[dict[str, Any]] = []
    y = 0
    panel_id = 1
    for row in rows:
        x = 0
        height = 0
        for panel in row:
            if x + panel.w > 24:
                raise ValueError(f"row overflows 24 columns at {panel.title!r}")
            out.append(panel_json(panel, panel_id, x, y))
            panel_id += 1
            x += panel.w
            height = max(height, panel.h)
        y += height
    return out


def dashboard(uid: str, title: str, description: str, variables: list[dict[str, Any]],
              rows: list[list[Panel]], time_from: str) -> dict[str, Any]:
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": [TAG],
        "timezone": "utc",
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "editable": True,
        "graphTooltip": 1,
        "liveNow": False,
        "refresh": "1m",
        "time": {"from": time_from, "to": "now"},
        "timepicker": {},
        "fiscalYearStartMonth": 0,
        "weekStart": "",
        "annotations": {"list": [{
            "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True,
            "hide": True, "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts",
            "type": "dashboard",
        }]},
        "links": [{
            "asDropdown": False, "icon": "external link", "includeVars": False, "keepTime": True,
            "tags": [TAG], "targetBlank": False, "title": "LLM savings", "type": "dashboards",
        }],
        "templating": {"list": variables},
        "panels": layout(rows),
    }


# --- Savings overview ---------------------------------------------------------

PROMPT_TIERS = 'tier=~"fresh|cache_read|cache_write_5m|cache_write_1h"'


def overview() -> dict[str, Any]:
    mtd = [
        Panel("stat", "Dollars saved by the proxy",
              "Month-to-date: tokens removed x billed-token factor x the model's list input rate of the "
              "record's price version. The provider's cache savings are not in this figure.",
              [Target('sum(llm_savings_usd_saved_total{month="$month", tenant=~"$tenant", model=~"$model"})')],
              w=4, unit_of="llm_savings_usd_saved_total", decimals=2),
        Panel("stat", "Tokens saved",
              "Month-to-date input tokens removed by the proxy: max(0, tokens_before - tokens_after), "
              "in each record's own count method.",
              [Target('sum(llm_savings_tokens_saved_total{month="$month", tenant=~"$tenant", model=~"$model"})')],
              w=4, unit_of="llm_savings_tokens_saved_total"),
        Panel("stat", "Would have saved (shadow mode)",
              "Month-to-date dollars that optimisations running in observe mode would have saved had they "
              "been applied. Not a saving.",
              [Target('sum(llm_savings_would_have_saved_usd_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"})')],
              w=4, unit_of="llm_savings_would_have_saved_usd_total", decimals=2),
        Panel("stat", "Would-have-saved tokens",
              "Month-to-date tokens shadow-mode optimisations would have removed.",
              [Target('sum(llm_savings_would_have_saved_tokens_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"})')],
              w=4, unit_of="llm_savings_would_have_saved_tokens_total"),
        Panel("stat", "Spend",
              "Month-to-date spend at list prices of each record's price version (fresh input, cache "
              "reads and writes, output).",
              [Target('sum(llm_savings_spend_usd_total{month="$month", tenant=~"$tenant", model=~"$model"})')],
              w=4, unit_of="llm_savings_spend_usd_total", decimals=2),
        Panel("stat", "Requests",
              "Month-to-date requests counted (unique request ids).",
              [Target('sum(llm_savings_requests_total{month="$month", tenant=~"$tenant", model=~"$model"})')],
              w=4, unit_of="llm_savings_requests_total"),
    ]
    cache = [
        Panel("stat", "Provider cache savings, net (not the proxy's)",
              "Month-to-date: what the provider's prompt cache saved on reads minus what cache writes "
              "cost above the input rate. The provider's saving, shown apart from the proxy's.",
              [Target('(sum(llm_savings_cache_read_savings_usd_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"}) or vector(0))\n- (sum(llm_savings_cache_write_premium_usd_total'
                      '{month="$month", tenant=~"$tenant", model=~"$model"}) or vector(0))')],
              w=5, unit_of="llm_savings_cache_read_savings_usd_total", decimals=2),
        Panel("stat", "Cache read savings",
              "Month-to-date: cache_read tokens x (input rate - cache read rate).",
              [Target('sum(llm_savings_cache_read_savings_usd_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"})')],
              w=4, unit_of="llm_savings_cache_read_savings_usd_total", decimals=2),
        Panel("stat", "Cache write premium",
              "Month-to-date: what cache writes (5m and 1h) cost above the plain input rate.",
              [Target('sum(llm_savings_cache_write_premium_usd_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"}) or vector(0)')],
              w=4, unit_of="llm_savings_cache_write_premium_usd_total", decimals=2),
        Panel("stat", "Cache hit rate",
              "Month-to-date provider prompt tokens read from cache / all prompt tokens (fresh + cache "
              "read + cache writes).",
              [Target(f'(sum(llm_savings_prompt_tokens_total{{tier="cache_read", month="$month", '
                      f'tenant=~"$tenant", model=~"$model"}}) or vector(0))\n/ sum(llm_savings_prompt_tokens_total'
                      f'{{{PROMPT_TIERS}, month="$month", tenant=~"$tenant", model=~"$model"}})')],
              w=4, unit="percentunit", decimals=1),
        Panel("stat", "Saved / (spend + saved)",
              "Month-to-date share of the would-be bill the proxy removed: dollars saved / (spend + "
              "dollars saved), both at list prices.",
              [Target('sum(llm_savings_usd_saved_total{month="$month", tenant=~"$tenant", model=~"$model"})\n'
                      '/ (sum(llm_savings_spend_usd_total{month="$month", tenant=~"$tenant", model=~"$model"})'
                      '\n + sum(llm_savings_usd_saved_total{month="$month", tenant=~"$tenant", model=~"$model"}))')],
              w=4, unit="percentunit", decimals=1),
        Panel("stat", "Unpriced requests",
              "Month-to-date requests whose model has no price in its version: tokens counted, no dollars "
              "invented. See the Provenance dashboard.",
              [Target('sum(llm_savings_unpriced_requests_total{month="$month", model=~"$model"}) or vector(0)')],
              w=3, unit_of="llm_savings_unpriced_requests_total"),
    ]
    trends = [
        Panel("timeseries", "Dollars saved per hour, by model",
              "Proxy savings rate (all months), in dollars per hour.",
              [Target('3600 * sum by (model) (rate(llm_savings_usd_saved_total{tenant=~"$tenant", '
                      'model=~"$model"}[$__rate_interval]))', "{{model}}")],
              w=12, h=8, unit="currencyUSD", stack=True),
        Panel("timeseries", "Spend per hour, by model",
              "Spend rate at list prices (all months), in dollars per hour.",
              [Target('3600 * sum by (model) (rate(llm_savings_spend_usd_total{tenant=~"$tenant", '
                      'model=~"$model"}[$__rate_interval]))', "{{model}}")],
              w=12, h=8, unit="currencyUSD", stack=True),
        Panel("timeseries", "Month to date: saved, spend, provider cache (net)",
              "The month's counters over time; each restarts from zero only when a new month begins.",
              [Target('sum(llm_savings_usd_saved_total{month="$month", tenant=~"$tenant", model=~"$model"})',
                      "saved by the proxy"),
               Target('sum(llm_savings_would_have_saved_usd_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"})', "would have saved (shadow)"),
               Target('sum(llm_savings_spend_usd_total{month="$month", tenant=~"$tenant", model=~"$model"})',
                      "spend"),
               Target('(sum(llm_savings_cache_read_savings_usd_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"}) or vector(0))\n- (sum(llm_savings_cache_write_premium_usd_total'
                      '{month="$month", tenant=~"$tenant", model=~"$model"}) or vector(0))',
                      "provider cache savings (net)")],
              w=12, h=8, unit_of="llm_savings_usd_saved_total"),
        Panel("timeseries", "Cache hit rate over time",
              "Provider prompt tokens read from cache / all prompt tokens, over the rate interval.",
              [Target(f'sum(rate(llm_savings_prompt_tokens_total{{tier="cache_read", tenant=~"$tenant", '
                      f'model=~"$model"}}[$__rate_interval]))\n/ sum(rate(llm_savings_prompt_tokens_total'
                      f'{{{PROMPT_TIERS}, tenant=~"$tenant", model=~"$model"}}[$__rate_interval]))',
                      "cache hit rate")],
              w=12, h=8, unit="percentunit"),
        Panel("timeseries", "Tokens saved per second, by component",
              "Which optimisation removes the tokens (unattributed = the part no component claimed).",
              [Target('sum by (component) (rate(llm_savings_tokens_saved_total{tenant=~"$tenant", '
                      'model=~"$model"}[$__rate_interval]))', "{{component}}")],
              w=12, h=8, unit_of="llm_savings_tokens_saved_total", stack=True),
        Panel("timeseries", "Requests per second, by tenant",
              "Counted requests (unique ids), all months.",
              [Target('sum by (tenant) (rate(llm_savings_requests_total{tenant=~"$tenant", '
                      'model=~"$model"}[$__rate_interval]))', "{{tenant}}")],
              w=12, h=8, unit_of="llm_savings_requests_total", stack=True),
    ]
    breakdown = [
        Panel("bargauge", "Dollars saved by model",
              "Month to date.",
              [Target('sum by (model) (llm_savings_usd_saved_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"})', "{{model}}")],
              w=8, h=8, unit_of="llm_savings_usd_saved_total", decimals=2),
        Panel("bargauge", "Dollars saved by tenant",
              "Month to date.",
              [Target('sum by (tenant) (llm_savings_usd_saved_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"})', "{{tenant}}")],
              w=8, h=8, unit_of="llm_savings_usd_saved_total", decimals=2),
        Panel("bargauge", "Tokens saved by component",
              "Month to date.",
              [Target('sum by (component) (llm_savings_tokens_saved_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"})', "{{component}}")],
              w=8, h=8, unit_of="llm_savings_tokens_saved_total"),
        Panel("bargauge", "Prompt tokens by tier",
              "Month-to-date provider-reported prompt tokens by billing tier.",
              [Target('sum by (tier) (llm_savings_prompt_tokens_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"})', "{{tier}}")],
              w=12, h=6, unit_of="llm_savings_prompt_tokens_total"),
        Panel("bargauge", "Output tokens by model",
              "Month-to-date provider-reported output tokens (reasoning included).",
              [Target('sum by (model) (llm_savings_output_tokens_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"})', "{{model}}")],
              w=12, h=6, unit_of="llm_savings_output_tokens_total"),
    ]
    return dashboard(
        "llm-savings-overview", "LLM savings / Overview",
        "What the proxy saves (tokens, dollars at list prices), month to date, with the provider's "
        "cache savings kept apart. Generated by scripts/gen_dashboards.py; do not edit.",
        SAVINGS_VARS, [mtd, cache, trends[:2], trends[2:4], trends[4:], breakdown[:3], breakdown[3:]],
        "now-7d",
    )


# --- Provenance -----------------------------------------------------------------

def provenance() -> dict[str, Any]:
    factor = [
        Panel("stat", "Dollars saved on the default factor",
              "Share of month-to-date dollars saved computed with billed-token factor 1.0 because the "
              "price table has no factor for the count method (factor_source=default).",
              [Target('(sum(llm_savings_usd_saved_total{factor_source="default", month="$month", '
                      'tenant=~"$tenant", model=~"$model"}) or vector(0))\n/ sum(llm_savings_usd_saved_total'
                      '{month="$month", tenant=~"$tenant", model=~"$model"})')],
              w=6, unit="percentunit", decimals=1),
        Panel("stat", "Duplicates",
              "Month-to-date records whose request_id was already counted inside the dedupe window "
              "(counted once; all tenants and models).",
              [Target('sum(llm_savings_duplicates_total{month="$month"}) or vector(0)')],
              w=6, unit_of="llm_savings_duplicates_total"),
        Panel("stat", "Rejected records",
              "Records rejected this month, plus those without a usable month (month=unknown).",
              [Target('sum(llm_savings_records_rejected_total{month=~"$month|unknown"}) or vector(0)')],
              w=6, unit_of="llm_savings_records_rejected_total"),
        Panel("stat", "Newest price version takes effect",
              "effective_from of the newest version in the loaded price table (oldest across replicas).",
              [Target("min(llm_savings_price_table_newest_effective_timestamp_seconds) * 1000")],
              w=6, unit="dateTimeAsIso"),
    ]
    by_label = [
        Panel("bargauge", "Dollars saved by count method",
              "How the tokens behind the dollars were counted (provider, tiktoken:*, estimate:*).",
              [Target('sum by (method) (llm_savings_usd_saved_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"})', "{{method}}")],
              w=8, h=7, unit_of="llm_savings_usd_saved_total", decimals=2),
        Panel("bargauge", "Dollars saved by factor source",
              "table = billed-token factor from the price table; default = 1.0, no factor known.",
              [Target('sum by (factor_source) (llm_savings_usd_saved_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"})', "{{factor_source}}")],
              w=8, h=7, unit_of="llm_savings_usd_saved_total", decimals=2),
        Panel("bargauge", "Dollars saved by price version",
              "The price version each record was priced with (by its timestamp); never repriced.",
              [Target('sum by (price_version) (llm_savings_usd_saved_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"})', "{{price_version}}")],
              w=8, h=7, unit_of="llm_savings_usd_saved_total", decimals=2),
        Panel("bargauge", "Tokens saved by count method",
              "Month to date.",
              [Target('sum by (method) (llm_savings_tokens_saved_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"})', "{{method}}")],
              w=8, h=7, unit_of="llm_savings_tokens_saved_total"),
        Panel("bargauge", "Spend by price version",
              "Month to date.",
              [Target('sum by (price_version) (llm_savings_spend_usd_total{month="$month", tenant=~"$tenant", '
                      'model=~"$model"})', "{{price_version}}")],
              w=8, h=7, unit_of="llm_savings_spend_usd_total", decimals=2),
        Panel("bargauge", "Would-have-saved dollars by count method",
              "Shadow-mode estimates, month to date.",
              [Target('sum by (method) (llm_savings_would_have_saved_usd_total{month="$month", '
                      'tenant=~"$tenant", model=~"$model"})', "{{method}}")],
              w=8, h=7, unit_of="llm_savings_would_have_saved_usd_total", decimals=2),
    ]
    divergence = [
        Panel("bargauge", "Estimator divergence: provider / counted, compacted vs untouched",
              "Month to date, per model and count method: provider prompt tokens / the proxy's counted "
              "tokens_after, for compacted (before > after) and untouched requests. A level ratio to "
              "read, never applied as a correction.",
              [Target('sum by (model, method, population) (llm_savings_divergence_provider_tokens_total'
                      '{month="$month", model=~"$model"})\n/ sum by (model, method, population) '
                      '(llm_savings_divergence_counted_tokens_total{month="$month", model=~"$model"})',
                      "{{model}} {{method}} {{population}}")],
              w=12, h=8, unit="short", decimals=3),
        Panel("timeseries", "Estimator divergence over time",
              "provider / counted over the rate interval, by population and count method.",
              [Target('sum by (method, population) (rate(llm_savings_divergence_provider_tokens_total'
                      '{model=~"$model"}[$__rate_interval]))\n/ sum by (method, population) '
                      '(rate(llm_savings_divergence_counted_tokens_total{model=~"$model"}[$__rate_interval]))',
                      "{{method}} {{population}}")],
              w=12, h=8, unit="short"),
    ]
    quality = [
        Panel("bargauge", "Unpriced requests by model and reason",
              "Month to date. Their tokens are counted; no dollars are invented for them.",
              [Target('sum by (model, reason) (llm_savings_unpriced_requests_total{month="$month", '
                      'model=~"$model"})', "{{model}} ({{reason}})")],
              w=8, h=8, unit_of="llm_savings_unpriced_requests_total"),
        Panel("bargauge", "Rejected records by reason",
              "This month and month=unknown (records without a usable timestamp).",
              [Target('sum by (reason) (llm_savings_records_rejected_total{month=~"$month|unknown"})',
                      "{{reason}}")],
              w=8, h=8, unit_of="llm_savings_records_rejected_total"),
        Panel("bargauge", "Counted records with a caveat",
              "Month to date, by flag: no_id, incomplete_savings, unknown_usage_shape, "
              "components_exceed_saving.",
              [Target('sum by (flag) (llm_savings_records_flagged_total{month="$month"})', "{{flag}}")],
              w=8, h=8, unit_of="llm_savings_records_flagged_total"),
        Panel("timeseries", "Duplicates and rejects per second",
              "All months.",
              [Target("sum(rate(llm_savings_duplicates_total[$__rate_interval]))", "duplicates"),
               Target("sum by (reason) (rate(llm_savings_records_rejected_total[$__rate_interval]))",
                      "rejected: {{reason}}")],
              w=12, h=8, unit_of="llm_savings_records_rejected_total"),
        Panel("bargauge", "Price table versions loaded (replicas per version and file hash)",
              "Replicas serving each price version; two hashes for one version means the replicas "
              "loaded different files.",
              [Target("count by (version, effective_from, sha256) (llm_savings_price_table_info)",
                      "{{version}} from {{effective_from}} ({{sha256}})")],
              w=12, h=8, unit="short"),
    ]
    return dashboard(
        "llm-savings-provenance", "LLM savings / Provenance",
        "Where the figures come from: count methods, billed-token factors, price versions, estimator "
        "divergence, unpriced models, duplicates and rejects. Generated by scripts/gen_dashboards.py; "
        "do not edit.",
        SAVINGS_VARS, [factor, by_label[:3], by_label[3:], divergence, quality[:3], quality[3:]], "now-7d",
    )


# --- Exporter health ------------------------------------------------------------

UP_JOB = 'job=~".*llm-savings-exporter.*"'


def health() -> dict[str, Any]:
    top = [
        Panel("stat", "Targets up",
              "Sidecars Prometheus scrapes successfully (job matching llm-savings-exporter).",
              [Target(f'sum(up{{{UP_JOB}, instance=~"$instance"}})')], w=4, unit="short"),
        Panel("stat", "Targets down",
              "Sidecars Prometheus fails to scrape.",
              [Target(f'count(up{{{UP_JOB}, instance=~"$instance"}} == 0) or vector(0)')], w=4, unit="short"),
        Panel("stat", "Sources not followed",
              "Sources whose follower reports an error (llm_savings_source_up == 0).",
              [Target('count(llm_savings_source_up{instance=~"$instance"} == 0) or vector(0)')],
              w=4, unit_of="llm_savings_source_up"),
        Panel("stat", "Oldest checkpoint",
              "Largest time since a replica last committed its checkpoint.",
              [Target('max(llm_savings_checkpoint_age_seconds{instance=~"$instance"})')],
              w=4, unit_of="llm_savings_checkpoint_age_seconds"),
        Panel("stat", "Most bytes behind",
              "Largest amount of written and not yet read log data on any source.",
              [Target('max(llm_savings_source_bytes_behind{instance=~"$instance"})')],
              w=4, unit_of="llm_savings_source_bytes_behind"),
        Panel("stat", "Request ids in the dedupe ledger",
              "All replicas together.",
              [Target('sum(llm_savings_dedupe_ledger_ids{instance=~"$instance"})')],
              w=4, unit_of="llm_savings_dedupe_ledger_ids"),
    ]
    sources = [
        Panel("timeseries", "Source up",
              "1 while the source is followed without error.",
              [Target('min by (instance, source) (llm_savings_source_up{instance=~"$instance"})',
                      "{{instance}} {{source}}")],
              w=8, h=8, unit_of="llm_savings_source_up"),
        Panel("timeseries", "Bytes behind",
              "Written to the source's files and not yet read.",
              [Target('max by (instance, source) (llm_savings_source_bytes_behind{instance=~"$instance"})',
                      "{{instance}} {{source}}")],
              w=8, h=8, unit_of="llm_savings_source_bytes_behind"),
        Panel("timeseries", "Time since the last record",
              "Wall clock since the source last produced a record (an idle gateway also grows this).",
              [Target('time() - max by (instance, source) (llm_savings_source_last_event_timestamp_seconds'
                      '{instance=~"$instance"})', "{{instance}} {{source}}")],
              w=8, h=8, unit_of="llm_savings_source_last_event_timestamp_seconds"),
        Panel("timeseries", "Lines read per second",
              "Complete lines (or OTLP spans) read, per source.",
              [Target('sum by (instance, source) (rate(llm_savings_source_lines_read_total'
                      '{instance=~"$instance"}[$__rate_interval]))', "{{instance}} {{source}}")],
              w=8, h=8, unit_of="llm_savings_source_lines_read_total"),
        Panel("timeseries", "Bytes read per second",
              "Per source.",
              [Target('sum by (instance, source) (rate(llm_savings_source_bytes_read_total'
                      '{instance=~"$instance"}[$__rate_interval]))', "{{instance}} {{source}}")],
              w=8, h=8, unit="Bps"),
        Panel("timeseries", "Newest record's timestamp, age",
              "Wall clock minus the ts of the newest record counted: how far the counters trail the "
              "gateway (or how long it has been idle).",
              [Target('time() - max by (instance) (llm_savings_last_record_timestamp_seconds'
                      '{instance=~"$instance"})', "{{instance}}")],
              w=8, h=8, unit_of="llm_savings_last_record_timestamp_seconds"),
    ]
    state = [
        Panel("timeseries", "Checkpoint age",
              "Seconds since the last committed checkpoint; normally below the checkpoint interval.",
              [Target('max by (instance) (llm_savings_checkpoint_age_seconds{instance=~"$instance"})',
                      "{{instance}}")],
              w=8, h=8, unit_of="llm_savings_checkpoint_age_seconds"),
        Panel("timeseries", "Checkpoint writes and failures per minute",
              "Committed and failed checkpoint writes.",
              [Target('60 * sum by (instance) (rate(llm_savings_checkpoint_writes_total{instance=~"$instance"}'
                      '[$__rate_interval]))', "{{instance}} written"),
               Target('60 * sum by (instance) (rate(llm_savings_checkpoint_failures_total'
                      '{instance=~"$instance"}[$__rate_interval]))', "{{instance}} failed")],
              w=8, h=8, unit_of="llm_savings_checkpoint_writes_total"),
        Panel("timeseries", "Price table reloads",
              "Reloads since start, by result; an error keeps the previous table in use.",
              [Target('sum by (instance, result) (llm_savings_price_table_reloads_total{instance=~"$instance"})',
                      "{{instance}} {{result}}")],
              w=8, h=8, unit_of="llm_savings_price_table_reloads_total"),
        Panel("timeseries", "Label values folded into 'other'",
              "Since start, by label: a cap (labels.max_models, labels.max_tenants ...) was reached.",
              [Target('sum by (instance, label) (llm_savings_label_overflow_total{instance=~"$instance"})',
                      "{{instance}} {{label}}")],
              w=8, h=8, unit_of="llm_savings_label_overflow_total"),
        Panel("timeseries", "Token count fallbacks",
              "Texts counted by the chars/4 estimate because an encoding failed, by reason.",
              [Target('sum by (instance, reason) (llm_savings_token_count_fallbacks_total'
                      '{instance=~"$instance"})', "{{instance}} {{reason}}")],
              w=8, h=8, unit_of="llm_savings_token_count_fallbacks_total"),
        Panel("timeseries", "OTLP receiver",
              "OTLP/HTTP export requests per second by status code, spans per second by outcome.",
              [Target('sum by (code) (rate(llm_savings_otlp_requests_total{instance=~"$instance"}'
                      '[$__rate_interval]))', "requests {{code}}"),
               Target('sum by (outcome) (rate(llm_savings_otlp_spans_total{instance=~"$instance"}'
                      '[$__rate_interval]))', "spans {{outcome}}")],
              w=8, h=8, unit_of="llm_savings_otlp_requests_total"),
    ]
    limits = [
        Panel("timeseries", "Bytes lost (1h)",
              "Log bytes known lost, by source and reason (gone_while_stopped: a file deleted while the "
              "sidecar was down with unread bytes; truncated_unread, deleted_unread, unterminated). "
              "Zero in a healthy deployment.",
              [Target('sum by (instance, source, reason) (increase(llm_savings_source_bytes_lost_total'
                      '{instance=~"$instance"}[1h]))', "{{instance}} {{source}} {{reason}}")],
              w=8, h=8, unit_of="llm_savings_source_bytes_lost_total"),
        Panel("timeseries", "Files matched and open",
              "Files the source's globs match, and how many are held open (capped by max_open_files: "
              "idle rotated files are closed and reopened by identity).",
              [Target('max by (instance, source) (llm_savings_source_files{instance=~"$instance"})',
                      "{{instance}} {{source}} matched"),
               Target('max by (instance, source) (llm_savings_source_open_files{instance=~"$instance"})',
                      "{{instance}} {{source}} open")],
              w=8, h=8, unit_of="llm_savings_source_files"),
        Panel("timeseries", "OTLP exports refused, and in flight",
              "Exports answered with a retryable 429/503 by reason (memory budget, queue, connection cap, "
              "deadlines), and the body bytes and connections the receiver holds now.",
              [Target('sum by (reason) (rate(llm_savings_otlp_refused_total{instance=~"$instance"}'
                      '[$__rate_interval]))', "refused {{reason}}"),
               Target('sum(llm_savings_otlp_inflight_bytes{instance=~"$instance"})', "bytes in flight"),
               Target('sum(llm_savings_otlp_connections{instance=~"$instance"})', "connections")],
              w=8, h=8, unit_of="llm_savings_otlp_refused_total"),
    ]
    info = [
        Panel("bargauge", "Versions running",
              "Replicas per exporter and Python version.",
              [Target('count by (version, python_version) (llm_savings_build_info{instance=~"$instance"})',
                      "{{version}} (Python {{python_version}})")],
              w=16, h=5, unit="short"),
        Panel("stat", "Ids evicted by the dedupe cap (1h)",
              "Request ids forgotten before the end of the window because dedupe_max_ids was reached: "
              "duplicates older than the remaining ids would be counted again. Raise dedupe_max_ids "
              "(about 90 bytes each) if this is not zero.",
              [Target('sum(increase(llm_savings_dedupe_evicted_ids_total{instance=~"$instance"}[1h]))')],
              w=8, h=5, unit_of="llm_savings_dedupe_evicted_ids_total"),
    ]
    return dashboard(
        "llm-savings-health", "LLM savings / Exporter health",
        "The sidecars themselves: scrape status, sources, lag, checkpoints, reloads, label caps. "
        "Generated by scripts/gen_dashboards.py; do not edit.",
        HEALTH_VARS, [top, sources[:3], sources[3:], state[:3], state[3:], limits, info], "now-6h",
    )


DASHBOARDS = {
    "llm-savings-overview.json": overview,
    "llm-savings-provenance.json": provenance,
    "llm-savings-health.json": health,
}


def render() -> dict[str, str]:
    """File name -> exact file content."""
    return {name: json.dumps(build(), indent=2, sort_keys=True) + "\n" for name, build in DASHBOARDS.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if dashboards/ differs; write nothing")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output directory (default dashboards/)")
    args = parser.parse_args(argv)
    drift = []
    for name, content in render().items():
        path = args.out / name
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != content:
                drift.append(name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
    if drift:
        print("out of date (run python scripts/gen_dashboards.py): " + ", ".join(drift), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
