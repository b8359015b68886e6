"""The Provenance dashboard: where the figures come from and what was left out."""

from __future__ import annotations

from typing import Any

from exporter.mixin.config import Values
from exporter.mixin.dashboards.common import Panel, Row, Target, dashboard, savings_vars
from exporter.mixin.rules.provenance import BY, REQUESTS, SPEND, share

FILE = "llm-savings-provenance.json"
# a month with requests but none at a prompt or service tier shows 0, not an empty panel (on (): only when empty)
NONE_IS_ZERO = "\nor on () vector(0)"


def _shares(counters: tuple[str, str], cfg: Values) -> list[Target]:
    """One target per label of ``BY``: the rules' ``SHARE`` over the dashboard's selectors."""
    return [Target(share(counters, by, default, "%(mtd_model)s", "%(mtd_model)s", cfg) + NONE_IS_ZERO,
                   f"{by} {{{{{by}}}}}") for by, default in BY]


def build(cfg: Values) -> dict[str, Any]:
    factor = [
        Panel("stat", "Dollars saved on the default factor",
              "Share of month-to-date dollars saved computed with billed-token factor 1.0 because the "
              "price table has no factor for the count method (factor_source=default).",
              [Target('(sum(llm_savings_usd_saved_total{factor_source="default", %(mtd)s'
                      '}) or vector(0))\n/ sum(llm_savings_usd_saved_total'
                      '{%(mtd)s})')],
              w=6, unit="percentunit", decimals=1),
        Panel("stat", "Duplicates",
              "Month-to-date records whose request_id was already counted inside the dedupe window "
              "(counted once; all tenants and models).",
              [Target('sum(llm_savings_duplicates_total{%(mtd_month)s}) or vector(0)')],
              w=6, unit_of="llm_savings_duplicates_total"),
        Panel("stat", "Rejected records",
              "Records rejected this month, plus those without a usable month (month=unknown).",
              [Target('sum(llm_savings_records_rejected_total{%(scope)s, month=~"$month|unknown"}) or vector(0)')],
              w=6, unit_of="llm_savings_records_rejected_total"),
        Panel("stat", "Newest price version takes effect",
              "effective_from of the newest version in the loaded price table (oldest across replicas).",
              [Target("min(llm_savings_price_table_newest_effective_timestamp_seconds{%(scope)s}) * 1000")],
              w=6, unit="dateTimeAsIso"),
    ]
    by_label = [
        Panel("bargauge", "Dollars saved by count method",
              "How the tokens behind the dollars were counted (provider, tiktoken:*, estimate:*).",
              [Target('sum by (method) (llm_savings_usd_saved_total{%(mtd)s'
                      '})', "{{method}}")],
              w=8, h=7, unit_of="llm_savings_usd_saved_total", decimals=2),
        Panel("bargauge", "Dollars saved by factor source",
              "table = billed-token factor from the price table; default = 1.0, no factor known.",
              [Target('sum by (factor_source) (llm_savings_usd_saved_total{%(mtd)s'
                      '})', "{{factor_source}}")],
              w=8, h=7, unit_of="llm_savings_usd_saved_total", decimals=2),
        Panel("bargauge", "Dollars saved by price version",
              "The price version each record was priced with (by its timestamp); never repriced.",
              [Target('sum by (price_version) (llm_savings_usd_saved_total{%(mtd)s'
                      '})', "{{price_version}}")],
              w=8, h=7, unit_of="llm_savings_usd_saved_total", decimals=2),
        Panel("bargauge", "Tokens saved by count method",
              "Month to date.",
              [Target('sum by (method) (llm_savings_tokens_saved_total{%(mtd)s'
                      '})', "{{method}}")],
              w=8, h=7, unit_of="llm_savings_tokens_saved_total"),
        Panel("bargauge", "Spend by price version",
              "Month to date.",
              [Target('sum by (price_version) (llm_savings_spend_usd_total{%(mtd)s'
                      '})', "{{price_version}}")],
              w=8, h=7, unit_of="llm_savings_spend_usd_total", decimals=2),
        Panel("bargauge", "Would-have-saved dollars by count method",
              "Shadow-mode estimates, month to date.",
              [Target('sum by (method) (llm_savings_would_have_saved_usd_total{%(mtd)s'
                      '})', "{{method}}")],
              w=8, h=7, unit_of="llm_savings_would_have_saved_usd_total", decimals=2),
    ]
    tiers = [
        Panel("bargauge", "Requests priced by a tier, service tier or time window",
              "Month to date: requests a price table v2 priced at rates other than the model's base rates (prompt "
              "tier above a threshold, a service tier such as batch or flex, a time-of-day window); base, default "
              "and none where that part did not apply. Empty with a table without such rates.",
              [Target('sum by (model, tier, service_tier, window) (llm_savings_priced_requests_total{%(mtd_model)s'
                      '})', "{{model}} {{tier}} {{service_tier}} {{window}}")],
              w=8, h=7, unit_of="llm_savings_priced_requests_total"),
        Panel("bargauge", "Share of requests priced at a prompt tier or service tier",
              "Month to date, of the chosen models' requests (all tenants): the share priced at a prompt tier "
              "other than base, per tier, and at a service tier other than default, per service tier (unknown: a "
              "tier the price table does not list for the model, priced at base rates). As the rules "
              "month_tier:llm_savings_priced_requests:ratio and month_service_tier:...:ratio.",
              _shares(REQUESTS, cfg), w=8, h=7, unit="percentunit", decimals=1),
        Panel("bargauge", "Share of spend priced at a prompt tier or service tier",
              "Month to date, of the chosen models' spend (all tenants; llm_savings_priced_spend_usd_total): the "
              "dollars a prompt tier other than base, or a service tier other than default, priced. As the rules "
              "month_tier:llm_savings_priced_spend_usd:ratio and month_service_tier:...:ratio.",
              _shares(SPEND, cfg), w=8, h=7, unit="percentunit", decimals=1),
    ]
    divergence = [
        Panel("bargauge", "Estimator divergence: provider / counted, compacted vs untouched",
              "Month to date, per model and count method: provider prompt tokens / the proxy's counted "
              "tokens_after, for compacted (before > after) and untouched requests. A level ratio to "
              "read, never applied as a correction.",
              [Target('sum by (model, method, population) (llm_savings_divergence_provider_tokens_total'
                      '{%(mtd_model)s})\n/ sum by (model, method, population) '
                      '(llm_savings_divergence_counted_tokens_total{%(mtd_model)s})',
                      "{{model}} {{method}} {{population}}")],
              w=12, h=8, unit="short", decimals=3),
        Panel("timeseries", "Estimator divergence over time",
              "provider / counted over the rate interval, by population and count method.",
              [Target('sum by (method, population) (rate(llm_savings_divergence_provider_tokens_total'
                      '{%(all_months_model)s}[$__rate_interval]))\n/ sum by (method, population) '
                      '(rate(llm_savings_divergence_counted_tokens_total{%(all_months_model)s}[$__rate_interval]))',
                      "{{method}} {{population}}")],
              w=12, h=8, unit="short"),
    ]
    quality = [
        Panel("bargauge", "Unpriced requests by model and reason",
              "Month to date. Their tokens are counted; no dollars are invented for them.",
              [Target('sum by (model, reason) (llm_savings_unpriced_requests_total{%(mtd_model)s'
                      '})', "{{model}} ({{reason}})")],
              w=8, h=8, unit_of="llm_savings_unpriced_requests_total"),
        Panel("bargauge", "Rejected records by reason",
              "This month and month=unknown (records without a usable timestamp).",
              [Target('sum by (reason) (llm_savings_records_rejected_total{%(scope)s, month=~"$month|unknown"})',
                      "{{reason}}")],
              w=8, h=8, unit_of="llm_savings_records_rejected_total"),
        Panel("bargauge", "Counted records with a caveat",
              "Month to date, by flag: no_id, incomplete_savings, unknown_usage_shape, "
              "components_exceed_saving, unknown_service_tier (priced at base rates), ...",
              [Target('sum by (flag) (llm_savings_records_flagged_total{%(mtd_month)s})', "{{flag}}")],
              w=8, h=8, unit_of="llm_savings_records_flagged_total"),
        Panel("timeseries", "Duplicates and rejects per second",
              "All months.",
              [Target("sum(rate(llm_savings_duplicates_total{%(scope)s}[$__rate_interval]))", "duplicates"),
               Target("sum by (reason) (rate(llm_savings_records_rejected_total{%(scope)s}[$__rate_interval]))",
                      "rejected: {{reason}}")],
              w=12, h=8, unit_of="llm_savings_records_rejected_total"),
        Panel("bargauge", "Price table versions loaded (replicas per version and file hash)",
              "Replicas serving each price version; two hashes for one version means the replicas "
              "loaded different files.",
              [Target("count by (version, effective_from, sha256) (llm_savings_price_table_info{%(scope)s})",
                      "{{version}} from {{effective_from}} ({{sha256}})")],
              w=12, h=8, unit="short"),
    ]
    optimizer_unpriced = Panel(
        "bargauge", "Optimizer calls without a price, by optimizer model and reason",
        "Month to date: records whose optimizer block names a model (or a usage shape) the effective price "
        "version cannot price. That spend is not counted (never $0), so net savings are overstated by it.",
        [Target("sum by (model, reason) (llm_savings_optimizer_unpriced_requests_total{%(mtd_month)s})",
                "{{model}} ({{reason}})")],
        w=12, h=8, unit_of="llm_savings_optimizer_unpriced_requests_total")
    return dashboard(
        cfg, cfg["provenanceDashboardUid"], "LLM savings / Provenance",
        "Where the figures come from: count methods, billed-token factors, price versions, prompt and "
        "service tiers, estimator divergence, unpriced models, duplicates and rejects. Generated by "
        "scripts/gen_mixin.py; do not edit.",
        savings_vars(cfg),
        [Row("Factors and data quality", [factor]),
         Row("By provenance label", [by_label[:3], by_label[3:6]]),
         Row("Prompt and service tiers", [tiers]),
         Row("Estimator divergence", [divergence]),
         Row("Left out or flagged", [quality[:3], quality[3:], [optimizer_unpriced]])],
        "now-7d",
    )
