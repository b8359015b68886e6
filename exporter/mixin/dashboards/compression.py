"""The Overview's rows of saved %, compression ratio, dollars by component and net savings.

Token ratios are per count method (tokens of different estimators are not
one quantity). The optimizer's counters carry the optimizer's own model, so
their panels, and net savings, follow the tenant variable but not the model
one: net savings are those of every model of the chosen tenants.
"""

from __future__ import annotations

from exporter.mixin.dashboards.common import Panel, Row, Target


def rows() -> list[Row]:
    headline = [
        Panel("stat", "Saved % of input tokens",
              "Month to date, per count method: tokens saved / input tokens before the proxy, over the records "
              "that carry both counts (untouched requests save nothing and count in the denominator).",
              [Target('sum by (method) (llm_savings_tokens_saved_total{%(mtd)s})\n'
                      '/ sum by (method) (llm_savings_baseline_input_tokens_total{%(mtd)s})', "{{method}}")],
              w=6, unit="percentunit", decimals=1),
        Panel("stat", "Compression ratio (baseline / sent)",
              "Month to date, per count method: input tokens before the proxy / input tokens sent, over the "
              "same records.",
              [Target('sum by (method) (llm_savings_baseline_input_tokens_total{%(mtd)s})\n'
                      '/ sum by (method) (llm_savings_sent_input_tokens_total{%(mtd)s})', "{{method}}")],
              w=6, unit="short", decimals=2),
        Panel("stat", "Net savings (saved - optimizer spend)",
              "Month to date: dollars saved by the proxy minus what the optimizer spent on its own model calls "
              "(a compressor that calls a model costs money too). All models of the chosen tenants.",
              [Target('(sum(llm_savings_usd_saved_total{%(mtd_tenant)s}) or vector(0))\n'
                      '- (sum(llm_savings_optimizer_spend_usd_total{%(mtd_tenant)s}) or vector(0))')],
              w=6, unit="currencyUSD", decimals=2),
        Panel("stat", "Optimizer spend",
              "Month to date: the optimizer's own model calls at list prices of each record's price version. "
              "Optimizer calls whose model has no price are not in it (see the Provenance dashboard).",
              [Target("sum(llm_savings_optimizer_spend_usd_total{%(mtd_tenant)s}) or vector(0)")],
              w=6, unit_of="llm_savings_optimizer_spend_usd_total", decimals=2),
    ]
    populations = [
        Panel("bargauge", "Saved % by population",
              "Month to date: (baseline - sent) / baseline, per count method and population (compacted: the "
              "proxy made the prompt shorter; untouched: it did not, 0 or below 0 where prompts grew).",
              [Target('(sum by (method, population) (llm_savings_baseline_input_tokens_total{%(mtd)s})\n'
                      ' - sum by (method, population) (llm_savings_sent_input_tokens_total{%(mtd)s}))\n'
                      '/ sum by (method, population) (llm_savings_baseline_input_tokens_total{%(mtd)s})',
                      "{{method}} {{population}}")],
              w=8, h=7, unit="percentunit", decimals=1),
        Panel("bargauge", "Compression ratio by population",
              "Month to date: baseline / sent input tokens, per count method and population.",
              [Target('sum by (method, population) (llm_savings_baseline_input_tokens_total{%(mtd)s})\n'
                      '/ sum by (method, population) (llm_savings_sent_input_tokens_total{%(mtd)s})',
                      "{{method}} {{population}}")],
              w=8, h=7, unit="short", decimals=2),
        Panel("bargauge", "Dollars saved by component",
              "Month to date: dollars saved split by component as the tokens are (unattributed = the part no "
              "component claimed); the components add up to the dollars saved.",
              [Target("sum by (component) (llm_savings_component_usd_saved_total{%(mtd)s})", "{{component}}")],
              w=8, h=7, unit_of="llm_savings_component_usd_saved_total", decimals=2),
    ]
    trends = [
        Panel("timeseries", "Saved % over time, by count method",
              "Tokens saved / baseline input tokens over the rate interval (all months).",
              [Target('sum by (method) (rate(llm_savings_tokens_saved_total{%(all_months)s}[$__rate_interval]))\n'
                      '/ sum by (method) (rate(llm_savings_baseline_input_tokens_total{%(all_months)s}'
                      '[$__rate_interval]))', "{{method}}")],
              w=12, h=8, unit="percentunit"),
        Panel("bargauge", "Optimizer spend by optimizer model",
              "Month to date, by the model the optimizer called (not the request's model).",
              [Target("sum by (model) (llm_savings_optimizer_spend_usd_total{%(mtd_tenant)s})", "{{model}}")],
              w=6, h=8, unit_of="llm_savings_optimizer_spend_usd_total", decimals=2),
        Panel("bargauge", "Optimizer tokens by tier",
              "Month to date: the optimizer's own tokens by billing tier (fresh, cache reads and writes, output).",
              [Target("sum by (tier) (llm_savings_optimizer_tokens_total{%(mtd_tenant)s})", "{{tier}}")],
              w=6, h=8, unit_of="llm_savings_optimizer_tokens_total"),
    ]
    return [Row("Saved % and compression", [headline, populations]),
            Row("Over time and the optimizer's own spend", [trends])]
