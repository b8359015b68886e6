"""The Exporter health dashboard: the sidecars themselves."""

from __future__ import annotations

from typing import Any

from exporter.mixin.config import Values
from exporter.mixin.dashboards.common import Panel, Row, Target, dashboard, health_vars

FILE = "llm-savings-health.json"


def build(cfg: Values) -> dict[str, Any]:
    top = [
        Panel("stat", "Targets up",
              "Sidecars Prometheus scrapes successfully (targets of the chosen jobs, which the mixin's job "
              "selector finds).",
              [Target('sum(up{%(jobSelector)s, %(instances)s})')], w=4, unit="short"),
        Panel("stat", "Targets down",
              "Sidecars Prometheus fails to scrape.",
              [Target('count(up{%(jobSelector)s, %(instances)s} == 0) or vector(0)')], w=4, unit="short"),
        Panel("stat", "Sources not followed",
              "Sources whose follower reports an error (llm_savings_source_up == 0).",
              [Target('count(llm_savings_source_up{%(instances)s} == 0) or vector(0)')],
              w=4, unit_of="llm_savings_source_up"),
        Panel("stat", "Oldest checkpoint",
              "Largest time since a replica last committed its checkpoint.",
              [Target('max(llm_savings_checkpoint_age_seconds{%(instances)s})')],
              w=4, unit_of="llm_savings_checkpoint_age_seconds"),
        Panel("stat", "Most bytes behind",
              "Largest amount of written and not yet read log data on any source.",
              [Target('max(llm_savings_source_bytes_behind{%(instances)s})')],
              w=4, unit_of="llm_savings_source_bytes_behind"),
        Panel("stat", "Request ids in the dedupe ledger",
              "All replicas together.",
              [Target('sum(llm_savings_dedupe_ledger_ids{%(instances)s})')],
              w=4, unit_of="llm_savings_dedupe_ledger_ids"),
    ]
    sources = [
        Panel("timeseries", "Source up",
              "1 while the source is followed without error.",
              [Target('min by (instance, source) (llm_savings_source_up{%(instances)s})',
                      "{{instance}} {{source}}")],
              w=8, h=8, unit_of="llm_savings_source_up"),
        Panel("timeseries", "Bytes behind",
              "Written to the source's files and not yet read.",
              [Target('max by (instance, source) (llm_savings_source_bytes_behind{%(instances)s})',
                      "{{instance}} {{source}}")],
              w=8, h=8, unit_of="llm_savings_source_bytes_behind"),
        Panel("timeseries", "Time since the last record",
              "Wall clock since the source last produced a record (an idle gateway also grows this).",
              [Target('time() - max by (instance, source) (llm_savings_source_last_event_timestamp_seconds'
                      '{%(instances)s})', "{{instance}} {{source}}")],
              w=8, h=8, unit_of="llm_savings_source_last_event_timestamp_seconds"),
        Panel("timeseries", "Lines read per second",
              "Complete lines (or OTLP spans) read, per source.",
              [Target('sum by (instance, source) (rate(llm_savings_source_lines_read_total'
                      '{%(instances)s}[$__rate_interval]))', "{{instance}} {{source}}")],
              w=8, h=8, unit_of="llm_savings_source_lines_read_total"),
        Panel("timeseries", "Bytes read per second",
              "Per source.",
              [Target('sum by (instance, source) (rate(llm_savings_source_bytes_read_total'
                      '{%(instances)s}[$__rate_interval]))', "{{instance}} {{source}}")],
              w=8, h=8, unit="Bps"),
        Panel("timeseries", "Newest record's timestamp, age",
              "Wall clock minus the ts of the newest record counted: how far the counters trail the "
              "gateway (or how long it has been idle).",
              [Target('time() - max by (instance) (llm_savings_last_record_timestamp_seconds'
                      '{%(instances)s})', "{{instance}}")],
              w=8, h=8, unit_of="llm_savings_last_record_timestamp_seconds"),
    ]
    state = [
        Panel("timeseries", "Checkpoint age",
              "Seconds since the last committed checkpoint; normally below the checkpoint interval.",
              [Target('max by (instance) (llm_savings_checkpoint_age_seconds{%(instances)s})',
                      "{{instance}}")],
              w=8, h=8, unit_of="llm_savings_checkpoint_age_seconds"),
        Panel("timeseries", "Checkpoint writes and failures per minute",
              "Committed and failed checkpoint writes.",
              [Target('60 * sum by (instance) (rate(llm_savings_checkpoint_writes_total{%(instances)s}'
                      '[$__rate_interval]))', "{{instance}} written"),
               Target('60 * sum by (instance) (rate(llm_savings_checkpoint_failures_total'
                      '{%(instances)s}[$__rate_interval]))', "{{instance}} failed")],
              w=8, h=8, unit_of="llm_savings_checkpoint_writes_total"),
        Panel("timeseries", "Price table reloads",
              "Reloads since start, by result; an error keeps the previous table in use.",
              [Target('sum by (instance, result) (llm_savings_price_table_reloads_total{%(instances)s})',
                      "{{instance}} {{result}}")],
              w=8, h=8, unit_of="llm_savings_price_table_reloads_total"),
        Panel("timeseries", "Label values folded into 'other'",
              "Since start, by label: a cap (labels.max_models, labels.max_tenants ...) was reached.",
              [Target('sum by (instance, label) (llm_savings_label_overflow_total{%(instances)s})',
                      "{{instance}} {{label}}")],
              w=8, h=8, unit_of="llm_savings_label_overflow_total"),
        Panel("timeseries", "Token count fallbacks",
              "Texts counted by the chars/4 estimate because an encoding failed, by reason.",
              [Target('sum by (instance, reason) (llm_savings_token_count_fallbacks_total'
                      '{%(instances)s})', "{{instance}} {{reason}}")],
              w=8, h=8, unit_of="llm_savings_token_count_fallbacks_total"),
        Panel("timeseries", "OTLP receiver",
              "OTLP/HTTP export requests per second by status code, spans per second by outcome.",
              [Target('sum by (code) (rate(llm_savings_otlp_requests_total{%(instances)s}'
                      '[$__rate_interval]))', "requests {{code}}"),
               Target('sum by (outcome) (rate(llm_savings_otlp_spans_total{%(instances)s}'
                      '[$__rate_interval]))', "spans {{outcome}}")],
              w=8, h=8, unit_of="llm_savings_otlp_requests_total"),
    ]
    limits = [
        Panel("timeseries", "Bytes lost (1h)",
              "Log bytes known lost, by source and reason (gone_while_stopped: a file deleted while the "
              "sidecar was down with unread bytes; truncated_unread, deleted_unread, unterminated). "
              "Zero in a healthy deployment.",
              [Target('sum by (instance, source, reason) (increase(llm_savings_source_bytes_lost_total'
                      '{%(instances)s}[1h]))', "{{instance}} {{source}} {{reason}}")],
              w=8, h=8, unit_of="llm_savings_source_bytes_lost_total"),
        Panel("timeseries", "Files matched and open",
              "Files the source's globs match, and how many are held open (capped by max_open_files: "
              "idle rotated files are closed and reopened by identity).",
              [Target('max by (instance, source) (llm_savings_source_files{%(instances)s})',
                      "{{instance}} {{source}} matched"),
               Target('max by (instance, source) (llm_savings_source_open_files{%(instances)s})',
                      "{{instance}} {{source}} open")],
              w=8, h=8, unit_of="llm_savings_source_files"),
        Panel("timeseries", "OTLP exports refused, and in flight",
              "Exports answered with a retryable 429/503 by reason (memory budget, queue, connection cap, "
              "deadlines), and the body bytes and connections the receiver holds now.",
              [Target('sum by (reason) (rate(llm_savings_otlp_refused_total{%(instances)s}'
                      '[$__rate_interval]))', "refused {{reason}}"),
               Target('sum(llm_savings_otlp_inflight_bytes{%(instances)s})', "bytes in flight"),
               Target('sum(llm_savings_otlp_connections{%(instances)s})', "connections")],
              w=8, h=8, unit_of="llm_savings_otlp_refused_total"),
    ]
    info = [
        Panel("bargauge", "Versions running",
              "Replicas per exporter and Python version.",
              [Target('count by (version, python_version) (llm_savings_build_info{%(instances)s})',
                      "{{version}} (Python {{python_version}})")],
              w=8, h=5, unit="short"),
        Panel("stat", "Ids evicted by the dedupe cap (1h)",
              "Request ids forgotten before the end of the window because dedupe_max_ids was reached: "
              "duplicates older than the remaining ids would be counted again. Raise dedupe_max_ids "
              "(about 20 bytes each) if this is not zero.",
              [Target('sum(increase(llm_savings_dedupe_evicted_ids_total{%(instances)s}[1h]))')],
              w=8, h=5, unit_of="llm_savings_dedupe_evicted_ids_total"),
        Panel("stat", "OTLP correlation entries forgotten early (1h)",
              "Entries of the OTLP receiver's memory of recent spans forgotten inside their 120 s because "
              "otlp.correlation_max_entries was reached: a later span of a call another instrumentation "
              "already reported may then be counted as a call of its own. Raise the setting (about 480 "
              "bytes an entry) if this is not zero.",
              [Target('sum(increase(llm_savings_otlp_correlation_evicted_total{%(instances)s}[1h]))')],
              w=8, h=5, unit_of="llm_savings_otlp_correlation_evicted_total"),
    ]
    return dashboard(
        cfg, cfg["healthDashboardUid"], "LLM savings / Exporter health",
        "The sidecars themselves: scrape status, sources, lag, checkpoints, reloads, label caps. "
        "Generated by scripts/gen_mixin.py; do not edit.",
        health_vars(cfg),
        [Row("Targets", [top]), Row("Sources", [sources[:3], sources[3:]]),
         Row("State and reloads", [state[:3], state[3:]]), Row("Limits", [limits]), Row("Versions", [info])],
        "now-6h",
    )
