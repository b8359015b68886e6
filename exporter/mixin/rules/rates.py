"""Group ``llm-savings.rates``: per-second rates over all months, for graphs and alerts.

A month's series simply stops growing when the month ends and the next
month's series takes over, so a rate over all months is continuous.
"""

from __future__ import annotations

from exporter.mixin.config import Values
from exporter.mixin.model import Group, Record, fill

RATES = (
    ("llm_savings_requests", "llm_savings_requests_total"),
    ("llm_savings_tokens_saved", "llm_savings_tokens_saved_total"),
    ("llm_savings_usd_saved", "llm_savings_usd_saved_total"),
    ("llm_savings_spend_usd", "llm_savings_spend_usd_total"),
)

CACHE_NET_RATE = """\
(
    sum by (%(clusterLabel)s, model, tenant) (rate(llm_savings_cache_read_savings_usd_total{%(jobSelector)s}[5m]))
  - sum by (%(clusterLabel)s, model, tenant) (rate(llm_savings_cache_write_premium_usd_total{%(jobSelector)s}[5m]))
)
or sum by (%(clusterLabel)s, model, tenant) (rate(llm_savings_cache_read_savings_usd_total{%(jobSelector)s}[5m]))
or -sum by (%(clusterLabel)s, model, tenant) (rate(llm_savings_cache_write_premium_usd_total{%(jobSelector)s}[5m]))"""

DIVERGENCE_1H = """\
sum by (%(clusterLabel)s, model, method, population) (
  rate(llm_savings_divergence_provider_tokens_total{%(jobSelector)s}[1h])
)
/
(
  sum by (%(clusterLabel)s, model, method, population) (
    rate(llm_savings_divergence_counted_tokens_total{%(jobSelector)s}[1h])
  ) > 0
)"""


def group(cfg: Values) -> Group:
    rules: list[Record] = [
        Record(f"model_tenant:{name}:rate5m",
               fill(f"sum by (%(clusterLabel)s, model, tenant) (rate({counter}{{%(jobSelector)s}}[5m]))", cfg))
        for name, counter in RATES
    ]
    rules += [
        Record("model_tenant:llm_savings_cache_savings_usd:net_rate5m", fill(CACHE_NET_RATE, cfg)),
        Record("model_method_population:llm_savings_estimator_divergence:ratio_rate1h", fill(DIVERGENCE_1H, cfg),
               "Divergence over the last hour, for the alerts: steadier than 5m and\n"
               "independent of the month boundary."),
    ]
    return Group("llm-savings.rates", tuple(rules))
