"""Group ``llm-savings.alerts.ingest``: the sidecar keeps up with its sources and its state."""

from __future__ import annotations

from exporter.mixin.config import Values
from exporter.mixin.model import Alert, Group, fill

STALLED = """\
(llm_savings_source_bytes_behind{%(jobSelector)s} > 0)
and on (%(clusterLabel)s, job, instance, source)
(time() - llm_savings_source_last_event_timestamp_seconds{%(jobSelector)s} > %(ingestStalledMinutes)s * 60)"""


def group(cfg: Values) -> Group:
    return Group("llm-savings.alerts.ingest", (
        Alert(
            "LlmSavingsSourceDown", fill("llm_savings_source_up{%(jobSelector)s} == 0", cfg),
            cfg["sourceDownFor"], "warning",
            "Source {{ $labels.source }} of {{ $labels.instance }} is not being followed",
            "The exporter reports an error following source {{ $labels.source }} (missing directory, "
            "permissions, unreadable file). Nothing from it is counted.",
        ),
        Alert(
            "LlmSavingsIngestLag",
            fill("llm_savings_source_bytes_behind{%(jobSelector)s} > %(ingestLagMiB)s * 1024 * 1024", cfg),
            cfg["ingestLagFor"], "warning",
            "{{ $labels.instance }} is {{ $value | humanize1024 }}B behind on source {{ $labels.source }}",
            fill("More than %(ingestLagMiB)s MiB written to the source's files have not been read for "
                 "%(ingestLagFor)s: the exporter does not keep up, and the month-to-date figures lag behind the "
                 "gateway.", cfg),
        ),
        Alert(
            "LlmSavingsIngestStalled", fill(STALLED, cfg), cfg["ingestStalledFor"], "warning",
            fill("Source {{ $labels.source }} of {{ $labels.instance }} has unread bytes but produced no record "
                 "for %(ingestStalledMinutes)s minutes", cfg),
            fill("{{ $value | humanize1024 }}B are waiting in the source's files while its last record is older "
                 "than %(ingestStalledMinutes)s minutes. The tailer is stuck or every new line is rejected.", cfg),
            "Bytes are waiting, yet no record has come out of the source for a\n"
            "while: the tailer is stuck (an idle gateway has nothing behind).",
        ),
        Alert(
            "LlmSavingsCheckpointFailing",
            fill("increase(llm_savings_checkpoint_failures_total{%(jobSelector)s}[10m]) > 0", cfg),
            cfg["checkpointFailingFor"], "warning",
            "{{ $labels.instance }} fails to write its checkpoint",
            fill("Checkpoint writes have been failing for %(checkpointFailingFor)s. A restart now would resume "
                 "from the last good checkpoint and re-read everything after it.", cfg),
        ),
        Alert(
            "LlmSavingsCheckpointStale",
            fill("llm_savings_checkpoint_age_seconds{%(jobSelector)s} > %(checkpointStaleMinutes)s * 60", cfg),
            cfg["checkpointStaleFor"], "warning",
            "The last checkpoint of {{ $labels.instance }} is {{ $value | humanizeDuration }} old",
            fill("No checkpoint has been committed for more than %(checkpointStaleMinutes)s minutes "
                 "(checkpoint_interval_seconds is normally a few seconds). If the log files rotate away before "
                 "the next commit, a restart cannot restore the counts.", cfg),
        ),
        Alert(
            "LlmSavingsLogBytesLost",
            fill("sum by (%(clusterLabel)s, job, instance, source, reason) "
                 "(increase(llm_savings_source_bytes_lost_total{%(jobSelector)s}[1h])) > 0", cfg),
            cfg["logBytesLostFor"], "warning",
            "{{ $labels.instance }} lost {{ $value | humanize1024 }}B of source {{ $labels.source }} "
            "({{ $labels.reason }})",
            "Log bytes the sidecar had not read are gone ({{ $labels.reason }}): their requests are not counted. "
            "gone_while_stopped means files were rotated away while the sidecar was down for longer than "
            "logrotate keeps them.",
        ),
        Alert(
            "LlmSavingsLabelOverflow",
            fill("sum by (%(clusterLabel)s, job, instance, label) "
                 "(increase(llm_savings_label_overflow_total{%(jobSelector)s}[1h])) > 0", cfg),
            cfg["labelOverflowFor"], "info",
            "{{ $labels.instance }} folds {{ $labels.label }} values into 'other'",
            "The {{ $labels.label }} label reached its cap (labels.max_models / labels.max_tenants) and new "
            "values are counted under 'other'. Totals stay right; the breakdown by {{ $labels.label }} does not.",
        ),
        Alert(
            "LlmSavingsOtlpCorrelationEvicted",
            fill("increase(llm_savings_otlp_correlation_evicted_total{%(jobSelector)s}[15m]) > 0", cfg),
            cfg["otlpCorrelationEvictedFor"], "info",
            "{{ $labels.instance }} forgets OTLP spans before the correlation window ends",
            "The OTLP receiver's memory of recent spans reached otlp.correlation_max_entries and forgot entries "
            "inside their 120 s. Two spans of one provider call exported further apart than the memory lasts "
            "are counted as two calls. Raise otlp.correlation_max_entries.",
        ),
    ))
