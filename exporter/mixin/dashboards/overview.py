"""The Savings overview dashboard: what the proxy saves, month to date, the provider's cache kept apart."""

from __future__ import annotations

from typing import Any

from exporter.mixin.config import Values
from exporter.mixin.dashboards import compression, kinds
from exporter.mixin.dashboards.common import Panel, Row, Target, dashboard, savings_vars

FILE = "llm-savings-overview.json"


def build(cfg: Values) -> dict[str, Any]:
    mtd = [
        Panel("stat", "Dollars saved by the proxy",
              "Month-to-date: tokens removed x billed-token factor x the model's list input rate of the "
              "record's price version. The provider's cache savings are not in this figure.",
              [Target('sum(llm_savings_usd_saved_total{%(mtd)s})')],
              w=4, unit_of="llm_savings_usd_saved_total", decimals=2),
        Panel("stat", "Tokens saved",
              "Month-to-date input tokens removed by the proxy: max(0, tokens_before - tokens_after), "
              "one figure per count method: tokens counted by different estimators are not added up.",
              [Target('sum by (method) (llm_savings_tokens_saved_total{%(mtd)s})', "{{method}}")],
              w=4, unit_of="llm_savings_tokens_saved_total"),
        Panel("stat", "Would have saved (shadow mode)",
              "Month-to-date dollars that optimisations running in observe mode would have saved had they "
              "been applied. Not a saving.",
              [Target('sum(llm_savings_would_have_saved_usd_total{%(mtd)s'
                      '})')],
              w=4, unit_of="llm_savings_would_have_saved_usd_total", decimals=2),
        Panel("stat", "Would-have-saved tokens",
              "Month-to-date tokens shadow-mode optimisations would have removed, per count method.",
              [Target('sum by (method) (llm_savings_would_have_saved_tokens_total{%(mtd)s})', "{{method}}")],
              w=4, unit_of="llm_savings_would_have_saved_tokens_total"),
        Panel("stat", "Spend",
              "Month-to-date spend at list prices of each record's price version (fresh input, cache "
              "reads and writes, output).",
              [Target('sum(llm_savings_spend_usd_total{%(mtd)s})')],
              w=4, unit_of="llm_savings_spend_usd_total", decimals=2),
        Panel("stat", "Requests",
              "Month-to-date requests counted (unique request ids).",
              [Target('sum(llm_savings_requests_total{%(mtd)s})')],
              w=4, unit_of="llm_savings_requests_total"),
    ]
    cache = [
        Panel("stat", "Provider cache savings, net (not the proxy's)",
              "Month-to-date: what the provider's prompt cache saved on reads minus what cache writes "
              "cost above the input rate. The provider's saving, shown apart from the proxy's.",
              [Target('(sum(llm_savings_cache_read_savings_usd_total{%(mtd)s'
                      '}) or vector(0))\n- (sum(llm_savings_cache_write_premium_usd_total'
                      '{%(mtd)s}) or vector(0))')],
              w=5, unit_of="llm_savings_cache_read_savings_usd_total", decimals=2),
        Panel("stat", "Cache read savings",
              "Month-to-date: cache_read tokens x (input rate - cache read rate).",
              [Target('sum(llm_savings_cache_read_savings_usd_total{%(mtd)s'
                      '})')],
              w=4, unit_of="llm_savings_cache_read_savings_usd_total", decimals=2),
        Panel("stat", "Cache write premium",
              "Month-to-date: what cache writes (5m and 1h) cost above the plain input rate.",
              [Target('sum(llm_savings_cache_write_premium_usd_total{%(mtd)s'
                      '}) or vector(0)')],
              w=4, unit_of="llm_savings_cache_write_premium_usd_total", decimals=2),
        Panel("stat", "Cache hit rate",
              "Month-to-date provider prompt tokens read from cache / all prompt tokens (fresh + cache "
              "read + cache writes).",
              [Target('(sum(llm_savings_prompt_tokens_total{tier="cache_read", %(mtd)s}) or vector(0))\n'
                      '/ sum(llm_savings_prompt_tokens_total{%(prompt_tiers)s, %(mtd)s})')],
              w=4, unit="percentunit", decimals=1),
        Panel("stat", "Saved / (spend + saved)",
              "Month-to-date share of the would-be bill the proxy removed: dollars saved / (spend + "
              "dollars saved), both at list prices.",
              [Target('sum(llm_savings_usd_saved_total{%(mtd)s})\n'
                      '/ (sum(llm_savings_spend_usd_total{%(mtd)s})'
                      '\n + sum(llm_savings_usd_saved_total{%(mtd)s}))')],
              w=4, unit="percentunit", decimals=1),
        Panel("stat", "Unpriced requests",
              "Month-to-date requests whose model has no price in its version: tokens counted, no dollars "
              "invented. See the Provenance dashboard.",
              [Target('sum(llm_savings_unpriced_requests_total{%(mtd_model)s}) or vector(0)')],
              w=3, unit_of="llm_savings_unpriced_requests_total"),
    ]
    trends = [
        Panel("timeseries", "Dollars saved per hour, by model",
              "Proxy savings rate (all months), in dollars per hour.",
              [Target('3600 * sum by (model) (rate(llm_savings_usd_saved_total{%(all_months)s'
                      '}[$__rate_interval]))', "{{model}}")],
              w=12, h=8, unit="currencyUSD", stack=True),
        Panel("timeseries", "Spend per hour, by model",
              "Spend rate at list prices (all months), in dollars per hour.",
              [Target('3600 * sum by (model) (rate(llm_savings_spend_usd_total{%(all_months)s'
                      '}[$__rate_interval]))', "{{model}}")],
              w=12, h=8, unit="currencyUSD", stack=True),
        Panel("timeseries", "Month to date: saved, spend, provider cache (net)",
              "The month's counters over time; each restarts from zero only when a new month begins.",
              [Target('sum(llm_savings_usd_saved_total{%(mtd)s})',
                      "saved by the proxy"),
               Target('sum(llm_savings_would_have_saved_usd_total{%(mtd)s'
                      '})', "would have saved (shadow)"),
               Target('sum(llm_savings_spend_usd_total{%(mtd)s})',
                      "spend"),
               Target('(sum(llm_savings_cache_read_savings_usd_total{%(mtd)s'
                      '}) or vector(0))\n- (sum(llm_savings_cache_write_premium_usd_total'
                      '{%(mtd)s}) or vector(0))',
                      "provider cache savings (net)")],
              w=12, h=8, unit_of="llm_savings_usd_saved_total"),
        Panel("timeseries", "Cache hit rate over time",
              "Provider prompt tokens read from cache / all prompt tokens, over the rate interval.",
              [Target('sum(rate(llm_savings_prompt_tokens_total{tier="cache_read", %(all_months)s}'
                      '[$__rate_interval]))\n'
                      '/ sum(rate(llm_savings_prompt_tokens_total{%(prompt_tiers)s, %(all_months)s}'
                      '[$__rate_interval]))',
                      "cache hit rate")],
              w=12, h=8, unit="percentunit"),
        Panel("timeseries", "Tokens saved per second, by component",
              "Which optimisation removes the tokens (unattributed = the part no component claimed), "
              "per count method.",
              [Target('sum by (component, method) (rate(llm_savings_tokens_saved_total{%(all_months)s'
                      '}[$__rate_interval]))', "{{component}} ({{method}})")],
              w=12, h=8, unit_of="llm_savings_tokens_saved_total", stack=True),
        Panel("timeseries", "Requests per second, by tenant",
              "Counted requests (unique ids), all months.",
              [Target('sum by (tenant) (rate(llm_savings_requests_total{%(all_months)s'
                      '}[$__rate_interval]))', "{{tenant}}")],
              w=12, h=8, unit_of="llm_savings_requests_total", stack=True),
    ]
    breakdown = [
        Panel("bargauge", "Dollars saved by model",
              "Month to date.",
              [Target('sum by (model) (llm_savings_usd_saved_total{%(mtd)s'
                      '})', "{{model}}")],
              w=8, h=8, unit_of="llm_savings_usd_saved_total", decimals=2),
        Panel("bargauge", "Dollars saved by tenant",
              "Month to date.",
              [Target('sum by (tenant) (llm_savings_usd_saved_total{%(mtd)s'
                      '})', "{{tenant}}")],
              w=8, h=8, unit_of="llm_savings_usd_saved_total", decimals=2),
        Panel("bargauge", "Tokens saved by component",
              "Month to date, per count method.",
              [Target('sum by (component, method) (llm_savings_tokens_saved_total{%(mtd)s})',
                      "{{component}} ({{method}})")],
              w=8, h=8, unit_of="llm_savings_tokens_saved_total"),
        Panel("bargauge", "Prompt tokens by tier",
              "Month-to-date provider-reported prompt tokens by billing tier.",
              [Target('sum by (tier) (llm_savings_prompt_tokens_total{%(mtd)s'
                      '})', "{{tier}}")],
              w=12, h=6, unit_of="llm_savings_prompt_tokens_total"),
        Panel("bargauge", "Output tokens by model",
              "Month-to-date provider-reported output tokens (reasoning included).",
              [Target('sum by (model) (llm_savings_output_tokens_total{%(mtd)s'
                      '})', "{{model}}")],
              w=12, h=6, unit_of="llm_savings_output_tokens_total"),
    ]
    return dashboard(
        cfg, cfg["overviewDashboardUid"], "LLM savings / Overview",
        "What the proxy saves (tokens, dollars at list prices), month to date, with the provider's "
        "cache savings kept apart. Generated by scripts/gen_mixin.py; do not edit.",
        savings_vars(cfg),
        [Row("Month to date", [mtd]), *kinds.rows(), *compression.rows(),
         Row("Provider prompt cache (not the proxy's saving)", [cache]),
         Row("Over time", [trends[:2], trends[2:4], trends[4:]]),
         Row("Breakdown, month to date", [breakdown[:3], breakdown[3:]])],
        "now-7d",
    )
