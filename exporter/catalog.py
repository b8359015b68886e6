"""The one metric catalog.

Every metric the exporter serves is declared here, once: name, type, unit,
help and label names. The collector builds its families from these entries,
the README's metrics table is generated from them, and the tests of
``rules/`` and ``dashboards/`` check every metric they query against them, so
a name cannot drift between the exporter and what users import.

Names are the exposed names. Counters are declared with their ``_total``
suffix, as a scraper sees them; ``family_name`` gives the name
prometheus_client's families want (without the suffix).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PREFIX = "llm_savings_"

MetricType = Literal["counter", "gauge", "info"]
Group = Literal["savings", "provenance", "health"]


@dataclass(frozen=True, slots=True)
class MetricSpec:
    name: str
    type: MetricType
    unit: str  # "tokens", "usd", "requests", "seconds", "bytes", "lines", "" ...
    help: str
    labels: tuple[str, ...]
    group: Group

    @property
    def family_name(self) -> str:
        """Name without the ``_total``/``_info`` suffix prometheus_client appends."""
        if self.type == "counter" and self.name.endswith("_total"):
            return self.name[: -len("_total")]
        if self.type == "info" and self.name.endswith("_info"):
            return self.name[: -len("_info")]
        return self.name


def _c(name: str, unit: str, help: str, labels: tuple[str, ...], group: Group) -> MetricSpec:
    return MetricSpec(PREFIX + name, "counter", unit, help, labels, group)


def _g(name: str, unit: str, help: str, labels: tuple[str, ...], group: Group) -> MetricSpec:
    return MetricSpec(PREFIX + name, "gauge", unit, help, labels, group)


MONTH = "month"

# --- month-to-date savings and spend (month = the record's own month) ---
REQUESTS_TOTAL = _c(
    "requests_total", "requests", "Requests counted (unique request ids), by the month of their timestamp.",
    (MONTH, "model", "tenant"), "savings")
TOKENS_SAVED_TOTAL = _c(
    "tokens_saved_total", "tokens",
    "Input tokens removed by the proxy: max(0, tokens_before - tokens_after), by component and count method.",
    (MONTH, "model", "tenant", "component", "method"), "savings")
USD_SAVED_TOTAL = _c(
    "usd_saved_total", "usd",
    "Dollars saved by the proxy: tokens_saved x billed-token factor x the model's list input rate.",
    (MONTH, "model", "tenant", "method", "price_version", "factor_source"), "savings")
WOULD_HAVE_SAVED_TOKENS_TOTAL = _c(
    "would_have_saved_tokens_total", "tokens",
    "Tokens an optimisation would have removed in shadow/observe mode (not applied).",
    (MONTH, "model", "tenant", "method"), "savings")
WOULD_HAVE_SAVED_USD_TOTAL = _c(
    "would_have_saved_usd_total", "usd",
    "Dollars shadow-mode optimisations would have saved, at the list input rate and billed-token factor.",
    (MONTH, "model", "tenant", "method", "price_version", "factor_source"), "savings")
PROMPT_TOKENS_TOTAL = _c(
    "prompt_tokens_total", "tokens",
    "Provider-reported prompt tokens by billing tier (fresh, cache_read, cache_write_5m, cache_write_1h).",
    (MONTH, "model", "tenant", "tier"), "savings")
OUTPUT_TOKENS_TOTAL = _c(
    "output_tokens_total", "tokens", "Provider-reported output tokens (reasoning/thoughts included).",
    (MONTH, "model", "tenant"), "savings")
SPEND_USD_TOTAL = _c(
    "spend_usd_total", "usd", "Dollars spent at list prices of the record's price version.",
    (MONTH, "model", "tenant", "price_version"), "savings")
CACHE_READ_SAVINGS_USD_TOTAL = _c(
    "cache_read_savings_usd_total", "usd",
    "What the provider's prompt cache saved on reads: cache_read x (input - cache_read rate). "
    "Not the proxy's saving.",
    (MONTH, "model", "tenant", "price_version"), "savings")
CACHE_WRITE_PREMIUM_USD_TOTAL = _c(
    "cache_write_premium_usd_total", "usd",
    "What cache writes cost above the plain input rate. Net cache savings = read savings - write premium.",
    (MONTH, "model", "tenant", "price_version"), "savings")
BASELINE_INPUT_TOKENS_TOTAL = _c(
    "baseline_input_tokens_total", "tokens",
    "Input tokens before the proxy (tokens_before) of records carrying both tokens_before and tokens_after, "
    "by population (compacted: before > after, untouched: otherwise). Saved % = tokens_saved_total / this; "
    "tokens_saved_total = baseline - sent of the compacted population (untouched records save 0).",
    (MONTH, "model", "tenant", "method", "population"), "savings")
SENT_INPUT_TOKENS_TOTAL = _c(
    "sent_input_tokens_total", "tokens",
    "Input tokens sent after the proxy (tokens_after) of the same records; compression ratio = baseline / sent.",
    (MONTH, "model", "tenant", "method", "population"), "savings")
COMPONENT_USD_SAVED_TOTAL = _c(
    "component_usd_saved_total", "usd",
    "usd_saved_total split by component as tokens_saved_total splits tokens (remainder 'unattributed'); "
    "the components sum to usd_saved_total (to float rounding: each series is the nearest float). A saving "
    "whose counterfactual crossed a prompt tier prices its tokens at the counterfactual's input rate and puts "
    "the rest, the whole request repriced at the dearer tier, in component 'tier_jump' (dollars, no tokens; "
    "at most one series per month, model, tenant, method and price version, only where a tier was crossed).",
    (MONTH, "model", "tenant", "component", "method", "price_version", "factor_source"), "savings")
OPTIMIZER_SPEND_USD_TOTAL = _c(
    "optimizer_spend_usd_total", "usd",
    "Dollars the optimizer spent on its own model calls (record field optimizer), at list prices of the "
    "record's price version; model = the optimizer's model. Net savings = usd_saved_total - this.",
    (MONTH, "model", "tenant", "price_version"), "savings")
OPTIMIZER_TOKENS_TOTAL = _c(
    "optimizer_tokens_total", "tokens",
    "Tokens of the optimizer's own model calls by billing tier (fresh, cache_read, cache_write_5m, "
    "cache_write_1h, output); model = the optimizer's model.",
    (MONTH, "model", "tenant", "tier"), "savings")
RESPONSE_CACHE_HITS_TOTAL = _c(
    "response_cache_hits_total", "requests",
    "Requests the gateway answered from its own response cache (no provider call), by cache kind "
    "(exact, semantic, unspecified). Not in requests_total, which counts provider calls.",
    (MONTH, "model", "tenant", "kind"), "savings")
RESPONSE_CACHE_AVOIDED_USD_TOTAL = _c(
    "response_cache_avoided_usd_total", "usd",
    "Dollars response-cache hits avoided: the bill the original call (the cached response's usage) would have "
    "had at the hit's time and price version. Hits with unknown usage are in response_cache_unpriced_hits_total.",
    (MONTH, "model", "tenant", "kind", "price_version"), "savings")
RESPONSE_CACHE_UNPRICED_HITS_TOTAL = _c(
    "response_cache_unpriced_hits_total", "requests",
    "Response-cache hits whose avoided dollars are unknown (reason: unknown_usage, or the table's unpriced "
    "reasons): counted as hits, never priced at $0.",
    (MONTH, "model", "kind", "reason"), "provenance")
ROUTED_REQUESTS_TOTAL = _c(
    "routed_requests_total", "requests",
    "Requests a router sent to another model than the one asked for (requested_model != model).",
    (MONTH, "requested_model", "model", "tenant"), "savings")
ROUTING_SAVINGS_USD_TOTAL = _c(
    "routing_savings_usd_total", "usd",
    "Dollars routing saved on requests routed to a cheaper model: bill at requested_model - bill at model, "
    "same usage, same price version. Net routing savings = this - routing_extra_cost_usd_total.",
    (MONTH, "requested_model", "model", "tenant", "price_version"), "savings")
ROUTING_EXTRA_COST_USD_TOTAL = _c(
    "routing_extra_cost_usd_total", "usd",
    "Dollars routing cost on requests routed to a dearer model: bill at model - bill at requested_model (a "
    "negative saving, kept in its own counter so that both only grow).",
    (MONTH, "requested_model", "model", "tenant", "price_version"), "savings")
ROUTING_UNPRICED_REQUESTS_TOTAL = _c(
    "routing_unpriced_requests_total", "requests",
    "Routed requests whose routing saving could not be priced (either model unpriced, or unknown usage).",
    (MONTH, "requested_model", "model", "reason"), "provenance")
# --- provenance and data quality ---
UNPRICED_REQUESTS_TOTAL = _c(
    "unpriced_requests_total", "requests",
    "Requests whose model has no price in the version effective at their timestamp (no dollars invented).",
    (MONTH, "model", "reason"), "provenance")
OPTIMIZER_UNPRICED_REQUESTS_TOTAL = _c(
    "optimizer_unpriced_requests_total", "requests",
    "Records whose optimizer spend could not be priced (reason: the table's, as unpriced_requests_total, or "
    "unknown_usage_shape): that spend is not counted (never $0), so net savings are overstated by it.",
    (MONTH, "model", "reason"), "provenance")
DIVERGENCE_COUNTED_TOKENS_TOTAL = _c(
    "divergence_counted_tokens_total", "tokens",
    "Counted tokens_after of records that also carry provider usage, for the estimator divergence ratio.",
    (MONTH, "model", "method", "population"), "provenance")
DIVERGENCE_PROVIDER_TOKENS_TOTAL = _c(
    "divergence_provider_tokens_total", "tokens",
    "Provider prompt tokens of the same records; divergence = provider / counted, a level ratio.",
    (MONTH, "model", "method", "population"), "provenance")
DUPLICATES_TOTAL = _c(
    "duplicates_total", "records", "Records whose request_id was already counted inside the dedupe window.",
    (MONTH,), "provenance")
RECORDS_REJECTED_TOTAL = _c(
    "records_rejected_total", "records", "Records rejected, by bounded reason (month 'unknown' when unusable).",
    (MONTH, "reason"), "provenance")
PRICED_REQUESTS_TOTAL = _c(
    "priced_requests_total", "requests",
    "Requests priced by a v2 rate set other than the model's base rates: which prompt tier (tier, e.g. "
    "above_200000), service tier and time window priced their dollars; base, default and none where that part "
    "did not apply. Bounded by the price table; requests_total minus these were priced at base rates.",
    (MONTH, "model", "price_version", "tier", "service_tier", "window"), "provenance")
PRICED_SPEND_USD_TOTAL = _c(
    "priced_spend_usd_total", "usd",
    "spend_usd_total of the requests in priced_requests_total, by the same provenance (no tenant): the dollars "
    "a prompt tier, service tier or time window priced. spend_usd_total minus these were priced at base rates.",
    (MONTH, "model", "price_version", "tier", "service_tier", "window"), "provenance")
RECORDS_FLAGGED_TOTAL = _c(
    "records_flagged_total", "records",
    "Counted records with a caveat: no_id, incomplete_savings, unknown_usage_shape, components_exceed_saving.",
    (MONTH, "flag"), "provenance")
PRICE_TABLE_INFO = MetricSpec(
    PREFIX + "price_table_info", "info", "",
           "Price versions of the loaded table (value 1), with the table file's sha256.",
           ("version", "effective_from", "sha256"), "provenance")
PRICE_TABLE_NEWEST_EFFECTIVE_TIMESTAMP_SECONDS = _g(
    "price_table_newest_effective_timestamp_seconds", "seconds",
    "effective_from of the newest version in the loaded price table, for a staleness alert.", (), "provenance")
BUILD_INFO = MetricSpec(
    PREFIX + "build_info", "info", "", "Build information (value 1).",
           ("version", "python_version"), "health")
# --- exporter health ---
SOURCE_LINES_READ_TOTAL = _c(
    "source_lines_read_total", "lines", "Complete lines (or OTLP spans) read from a source.", ("source",), "health")
SOURCE_BYTES_READ_TOTAL = _c(
    "source_bytes_read_total", "bytes", "Bytes read from a source.", ("source",), "health")
SOURCE_BYTES_BEHIND = _g(
    "source_bytes_behind", "bytes", "Bytes written to a source's files and not yet read.", ("source",), "health")
SOURCE_UP = _g(
    "source_up", "", "1 when the source is being followed without error.", ("source",), "health")
SOURCE_LAST_EVENT_TIMESTAMP_SECONDS = _g(
    "source_last_event_timestamp_seconds", "seconds", "Wall-clock time the source last produced a record.",
    ("source",), "health")
SOURCE_BYTES_LOST_TOTAL = _c(
    "source_bytes_lost_total", "bytes",
    "Bytes known never read, by bounded reason (gone_while_stopped, truncated_unread, deleted_unread, "
    "unterminated); persisted across restarts by the checkpoint.", ("source", "reason"), "health")
SOURCE_OPEN_FILES = _g(
    "source_open_files", "", "File descriptors a source holds (at most its max_open_files).", ("source",),
    "health")
SOURCE_FILES = _g(
    "source_files", "", "Regular files a source's globs matched at its last poll (0: the globs match nothing).",
    ("source",), "health")
LAST_RECORD_TIMESTAMP_SECONDS = _g(
    "last_record_timestamp_seconds", "seconds", "Timestamp (ts) of the newest record counted.", (), "health")
CHECKPOINT_WRITES_TOTAL = _c(
    "checkpoint_writes_total", "", "Checkpoints committed.", (), "health")
CHECKPOINT_FAILURES_TOTAL = _c(
    "checkpoint_failures_total", "", "Checkpoint writes that failed.", (), "health")
CHECKPOINT_AGE_SECONDS = _g(
    "checkpoint_age_seconds", "seconds", "Seconds since the last committed checkpoint.", (), "health")
PRICE_TABLE_RELOADS_TOTAL = _c(
    "price_table_reloads_total", "", "Price table reloads, by result (success, error).", ("result",), "health")
LABEL_OVERFLOW_TOTAL = _c(
    "label_overflow_total", "", "Label values folded into 'other' because a label cap was reached.",
    ("label",), "health")
DEDUPE_LEDGER_IDS = _g(
    "dedupe_ledger_ids", "", "Request ids currently held in the dedupe ledger.", (), "health")
DEDUPE_EVICTED_IDS_TOTAL = _c(
    "dedupe_evicted_ids_total", "",
    "Request ids forgotten before the end of the dedupe window because dedupe_max_ids was reached.",
    (), "health")
TOKEN_COUNT_FALLBACKS_TOTAL = _c(
    "token_count_fallbacks_total", "", "Texts counted by the chars/4 estimate because an encoding failed.",
    ("reason",), "health")
OTLP_REQUESTS_TOTAL = _c(
    "otlp_requests_total", "requests", "OTLP/HTTP export requests, by HTTP status code.", ("code",), "health")
OTLP_SPANS_TOTAL = _c(
    "otlp_spans_total", "", "OTLP spans received, by outcome (accepted, rejected, ignored).", ("outcome",),
    "health")
OTLP_REFUSED_TOTAL = _c(
    "otlp_refused_total", "requests",
    "OTLP/HTTP requests refused and connections cut by the receiver's limits, by reason (memory_budget, "
    "queue_full, stopping, connections, evicted_idle, evicted_slow, slow_sender, idle_timeout).",
    ("reason",), "health")
OTLP_CORRELATION_EVICTED_TOTAL = _c(
    "otlp_correlation_evicted_total", "entries",
    "Entries of the OTLP receiver's memory of recent spans forgotten because otlp.correlation_max_entries was "
    "reached before their 120 s ended; a later span of the same call may then be counted as a call of its "
    "own. Raise otlp.correlation_max_entries.",
    (), "health")
OTLP_INFLIGHT_BYTES = _g(
    "otlp_inflight_bytes", "bytes",
    "Bytes reserved by OTLP/HTTP requests being read, inflated or decoded (limit otlp.max_inflight_bytes).",
    (), "health")
OTLP_CONNECTIONS = _g(
    "otlp_connections", "", "Open OTLP/HTTP connections (limit otlp.max_connections).", (), "health")

# Catalog order is exposition order.
CATALOG: tuple[MetricSpec, ...] = (
    REQUESTS_TOTAL,
    TOKENS_SAVED_TOTAL,
    USD_SAVED_TOTAL,
    WOULD_HAVE_SAVED_TOKENS_TOTAL,
    WOULD_HAVE_SAVED_USD_TOTAL,
    PROMPT_TOKENS_TOTAL,
    OUTPUT_TOKENS_TOTAL,
    SPEND_USD_TOTAL,
    CACHE_READ_SAVINGS_USD_TOTAL,
    CACHE_WRITE_PREMIUM_USD_TOTAL,
    BASELINE_INPUT_TOKENS_TOTAL,
    SENT_INPUT_TOKENS_TOTAL,
    COMPONENT_USD_SAVED_TOTAL,
    OPTIMIZER_SPEND_USD_TOTAL,
    OPTIMIZER_TOKENS_TOTAL,
    RESPONSE_CACHE_HITS_TOTAL,
    RESPONSE_CACHE_AVOIDED_USD_TOTAL,
    RESPONSE_CACHE_UNPRICED_HITS_TOTAL,
    ROUTED_REQUESTS_TOTAL,
    ROUTING_SAVINGS_USD_TOTAL,
    ROUTING_EXTRA_COST_USD_TOTAL,
    ROUTING_UNPRICED_REQUESTS_TOTAL,
    UNPRICED_REQUESTS_TOTAL,
    OPTIMIZER_UNPRICED_REQUESTS_TOTAL,
    DIVERGENCE_COUNTED_TOKENS_TOTAL,
    DIVERGENCE_PROVIDER_TOKENS_TOTAL,
    DUPLICATES_TOTAL,
    RECORDS_REJECTED_TOTAL,
    RECORDS_FLAGGED_TOTAL,
    PRICED_REQUESTS_TOTAL,
    PRICED_SPEND_USD_TOTAL,
    PRICE_TABLE_INFO,
    PRICE_TABLE_NEWEST_EFFECTIVE_TIMESTAMP_SECONDS,
    BUILD_INFO,
    SOURCE_LINES_READ_TOTAL,
    SOURCE_BYTES_READ_TOTAL,
    SOURCE_BYTES_BEHIND,
    SOURCE_UP,
    SOURCE_LAST_EVENT_TIMESTAMP_SECONDS,
    SOURCE_BYTES_LOST_TOTAL,
    SOURCE_OPEN_FILES,
    SOURCE_FILES,
    LAST_RECORD_TIMESTAMP_SECONDS,
    CHECKPOINT_WRITES_TOTAL,
    CHECKPOINT_FAILURES_TOTAL,
    CHECKPOINT_AGE_SECONDS,
    PRICE_TABLE_RELOADS_TOTAL,
    LABEL_OVERFLOW_TOTAL,
    DEDUPE_LEDGER_IDS,
    DEDUPE_EVICTED_IDS_TOTAL,
    TOKEN_COUNT_FALLBACKS_TOTAL,
    OTLP_REQUESTS_TOTAL,
    OTLP_SPANS_TOTAL,
    OTLP_REFUSED_TOTAL,
    OTLP_CORRELATION_EVICTED_TOTAL,
    OTLP_INFLIGHT_BYTES,
    OTLP_CONNECTIONS,
)

BY_NAME: dict[str, MetricSpec] = {spec.name: spec for spec in CATALOG}


def spec(name: str) -> MetricSpec:
    """Look a metric up by its exposed name (with or without the prefix)."""
    full = name if name.startswith(PREFIX) else PREFIX + name
    return BY_NAME[full]


def exposed_series_names(metric: MetricSpec) -> tuple[str, ...]:
    """Sample names a scraper sees for this metric (``_created`` for counters)."""
    if metric.type == "counter":
        return (metric.name, metric.family_name + "_created")
    return (metric.name,)
