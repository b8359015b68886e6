"""Group ``llm-savings.alerts.figures``: the published figures are low or rest on weak ground."""

from __future__ import annotations

from exporter.mixin.config import Values
from exporter.mixin.model import Alert, Group, fill

REJECTED = """\
sum by (%(clusterLabel)s, job, instance) (rate(llm_savings_records_rejected_total{%(jobSelector)s}[15m]))
/
sum by (%(clusterLabel)s, job, instance) (
    rate(llm_savings_records_rejected_total{%(jobSelector)s}[15m])
  or rate(llm_savings_requests_total{%(jobSelector)s}[15m])
  or rate(llm_savings_duplicates_total{%(jobSelector)s}[15m])
)
> %(recordsRejectedPercent)s / 100"""

DIVERGENCE = """\
(
  abs(model_method_population:llm_savings_estimator_divergence:ratio_rate1h{population="compacted"} - 1)
  > %(estimatorDivergencePercent)s / 100
)
and on (%(clusterLabel)s, model, method)
(
  sum by (%(clusterLabel)s, model, method) (
    rate(llm_savings_usd_saved_total{%(jobSelector)s, factor_source="default"}[1h])
  ) > 0
)"""

COMPACTED_VS_UNTOUCHED = """\
abs(
    model_method_population:llm_savings_estimator_divergence:ratio_rate1h{population="compacted"}
  / ignoring (population)
    model_method_population:llm_savings_estimator_divergence:ratio_rate1h{population="untouched"}
  - 1
) > %(compactedVsUntouchedPercent)s / 100"""


def group(cfg: Values) -> Group:
    return Group("llm-savings.alerts.figures", (
        Alert(
            "LlmSavingsRecordsRejected", fill(REJECTED, cfg), cfg["recordsRejectedFor"], "warning",
            "{{ $labels.instance }} rejects {{ $value | humanizePercentage }} of its records",
            fill("More than %(recordsRejectedPercent)s%% of the records read by {{ $labels.instance }} over "
                 "15 minutes were rejected (see llm_savings_records_rejected_total by reason). Rejected records "
                 "count neither as requests nor as savings, so the published figures are low.", cfg),
            "Rejected share of all records (counted + duplicates + rejected). The\n"
            "`or` unions three counters whose label sets never coincide (each has a\n"
            "label the others lack), so the sum adds them up; an instance with\n"
            "rejects but nothing counted still gets a denominator.",
        ),
        Alert(
            "LlmSavingsUnpricedModel",
            fill("sum by (%(clusterLabel)s, job, instance, model, reason) "
                 "(increase(llm_savings_unpriced_requests_total{%(jobSelector)s}[1h])) > 0", cfg),
            cfg["unpricedModelFor"], "warning",
            "Requests for model {{ $labels.model }} have no price ({{ $labels.reason }})",
            "{{ $labels.instance }} counted requests for {{ $labels.model }} that the effective price version "
            "does not price. Their tokens are counted, their dollars are not: usd_saved and spend_usd are low "
            "until the price table (or an alias) covers the model.",
        ),
        Alert(
            "LlmSavingsUnknownServiceTier",
            fill("sum by (%(clusterLabel)s, job, instance) (increase(llm_savings_records_flagged_total"
                 '{%(jobSelector)s, flag="unknown_service_tier"}[1h])) > 0', cfg),
            cfg["unknownServiceTierFor"], "warning",
            "{{ $labels.instance }} prices requests of an unknown service tier at default rates",
            "{{ $labels.instance }} counted records whose service_tier (or their optimizer call's) the price "
            "table does not list for their model (flag unknown_service_tier). They are priced at the model's "
            "base rates, so their spend and savings are those of the default tier: overstated for batch or "
            "flex, understated for priority, until the price table lists the tier.",
            "Records priced at default rates because their service tier is unknown\n"
            "(llm_savings_priced_requests_total{service_tier=\"unknown\"} says which model for a record's own\n"
            "tier; an optimizer call's unknown tier shows only in the flag).",
        ),
        Alert(
            "LlmSavingsPriceTableStale",
            fill("time() - max by (%(clusterLabel)s, job, instance) "
                 "(llm_savings_price_table_newest_effective_timestamp_seconds{%(jobSelector)s}) "
                 "> %(priceTableStaleDays)s * 86400", cfg),
            cfg["priceTableStaleFor"], "warning",
            fill("The price table of {{ $labels.instance }} is older than %(priceTableStaleDays)s days", cfg),
            "The newest version of the loaded price table took effect {{ $value | humanizeDuration }} ago. "
            "Provider prices change; dollars are computed at list prices of that version.",
        ),
        Alert(
            "LlmSavingsPriceTableReloadFailed",
            fill('increase(llm_savings_price_table_reloads_total{%(jobSelector)s, result="error"}[15m]) > 0', cfg),
            cfg["priceTableReloadFailedFor"], "warning",
            "{{ $labels.instance }} refused a price table reload",
            "The edited price table did not validate; the exporter keeps pricing with the previous table. "
            "Its log names the file, line and key.",
        ),
        Alert(
            "LlmSavingsEstimatorDivergence", fill(DIVERGENCE, cfg), cfg["estimatorDivergenceFor"], "warning",
            "Provider prompt tokens are {{ $value | humanizePercentage }} off the counted tokens of "
            "{{ $labels.model }} ({{ $labels.method }})",
            fill("Over the last hour, provider prompt tokens / counted tokens of compacted requests to "
                 "{{ $labels.model }} counted with {{ $labels.method }} is more than "
                 "%(estimatorDivergencePercent)s%% away from 1, and their dollars saved use the default factor "
                 "1.0. usd_saved is off by about that much.", cfg),
            "Dollars are being computed with the default factor 1.0 (the table has\n"
            "no billed_token_factor for this count method) while the provider bills\n"
            "more or fewer tokens than the proxy counted.",
        ),
        Alert(
            "LlmSavingsEstimatorDivergenceCompactedVsUntouched", fill(COMPACTED_VS_UNTOUCHED, cfg),
            cfg["compactedVsUntouchedFor"], "info",
            "Counting of {{ $labels.model }} ({{ $labels.method }}) diverges differently on compacted prompts",
            fill("The estimator divergence of compacted requests differs by more than "
                 "%(compactedVsUntouchedPercent)s%% from that of untouched requests for {{ $labels.model }} / "
                 "{{ $labels.method }}. A billed-token factor calibrated on untouched traffic misstates the "
                 "savings.", cfg),
            "A factor calibrated on ordinary traffic assumes the counter behaves\n"
            "the same on compacted prompts; this catches it when it does not.",
        ),
    ))
