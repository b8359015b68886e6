"""Group ``llm-savings.compression``: saved %, compression ratio, dollars by component, net savings.

* saved % = Σ tokens_saved / Σ baseline input tokens, and the compression
  ratio = Σ baseline / Σ sent input tokens, over the records that carry both
  counts; per population (compacted: before > after; untouched) and for all
  records together. Always per count method: tokens counted by different
  estimators are not one quantity. Per population the saved share is
  (baseline - sent) / baseline (for untouched records 0, or below 0 where the
  proxy made prompts longer); over all records it is the contract's Σ tokens_saved
  / Σ baseline (untouched records save 0 and dilute it).
* dollars saved by component: component_usd_saved_total summed like
  usd_saved_total (the components add up to it).
* net savings = dollars saved - the optimizer's own model spend. The
  optimizer's spend carries the optimizer's model, so net savings exist per
  tenant and per month, not per model.
"""

from __future__ import annotations

from exporter.mixin.config import Values
from exporter.mixin.model import Group, Record, fill

PER_CELL = (
    ("llm_savings_baseline_input_tokens", "llm_savings_baseline_input_tokens_total"),
    ("llm_savings_sent_input_tokens", "llm_savings_sent_input_tokens_total"),
    ("llm_savings_component_usd_saved", "llm_savings_component_usd_saved_total"),
    ("llm_savings_optimizer_spend_usd", "llm_savings_optimizer_spend_usd_total"),
    ("llm_savings_optimizer_tokens", "llm_savings_optimizer_tokens_total"),
)

POPULATION_SAVED = """\
(
    sum by (%(clusterLabel)s, month, method, population) (llm_savings_baseline_input_tokens_total{%(jobSelector)s})
  - sum by (%(clusterLabel)s, month, method, population) (llm_savings_sent_input_tokens_total{%(jobSelector)s})
)
/
(sum by (%(clusterLabel)s, month, method, population) (llm_savings_baseline_input_tokens_total{%(jobSelector)s}) > 0)"""

SAVED = """\
(
    sum by (%(clusterLabel)s, month, method) (llm_savings_tokens_saved_total{%(jobSelector)s})
  or
    sum by (%(clusterLabel)s, month, method) (llm_savings_baseline_input_tokens_total{%(jobSelector)s}) * 0
)
/
(sum by (%(clusterLabel)s, month, method) (llm_savings_baseline_input_tokens_total{%(jobSelector)s}) > 0)"""

POPULATION_RATIO = """\
sum by (%(clusterLabel)s, month, method, population) (llm_savings_baseline_input_tokens_total{%(jobSelector)s})
/
(sum by (%(clusterLabel)s, month, method, population) (llm_savings_sent_input_tokens_total{%(jobSelector)s}) > 0)"""

RATIO = """\
sum by (%(clusterLabel)s, month, method) (llm_savings_baseline_input_tokens_total{%(jobSelector)s})
/
(sum by (%(clusterLabel)s, month, method) (llm_savings_sent_input_tokens_total{%(jobSelector)s}) > 0)"""

# (saved or spend * 0) - (spend or saved * 0): a month or tenant with only one side keeps its figure.
NET = """\
(
    sum by (%(clusterLabel)s, %(by)s) (llm_savings_usd_saved_total{%(jobSelector)s})
  or
    sum by (%(clusterLabel)s, %(by)s) (llm_savings_optimizer_spend_usd_total{%(jobSelector)s}) * 0
)
-
(
    sum by (%(clusterLabel)s, %(by)s) (llm_savings_optimizer_spend_usd_total{%(jobSelector)s})
  or
    sum by (%(clusterLabel)s, %(by)s) (llm_savings_usd_saved_total{%(jobSelector)s}) * 0
)"""


def group(cfg: Values) -> Group:
    rules: list[Record] = [
        Record(f"month_model_tenant:{name}:sum",
               fill(f"sum without (instance, pod, job) ({counter}{{%(jobSelector)s}})", cfg),
               "--- per month, model, tenant (and the metric's own labels) ---" if i == 0 else "")
        for i, (name, counter) in enumerate(PER_CELL)
    ]
    rules += [
        Record("month_method_population:llm_savings_saved_input_tokens:ratio", fill(POPULATION_SAVED, cfg),
               "Saved share of the input tokens per population: (baseline - sent) / baseline."),
        Record("month_method:llm_savings_saved_input_tokens:ratio", fill(SAVED, cfg),
               "Saved % over all records: tokens saved / baseline tokens (0 where nothing was saved)."),
        Record("month_method_population:llm_savings_compression:ratio", fill(POPULATION_RATIO, cfg),
               "Compression ratio: baseline / sent input tokens."),
        Record("month_method:llm_savings_compression:ratio", fill(RATIO, cfg)),
        Record("month_component:llm_savings_component_usd_saved:sum",
               fill("sum by (%(clusterLabel)s, month, component) "
                    "(llm_savings_component_usd_saved_total{%(jobSelector)s})", cfg),
               "Dollars saved by component, all models and tenants."),
        Record("month:llm_savings_net_usd_saved:sum", fill(NET, {**cfg, "by": "month"}),
               "Net savings: dollars saved - the optimizer's own model spend."),
        Record("month_tenant:llm_savings_net_usd_saved:sum", fill(NET, {**cfg, "by": "month, tenant"})),
    ]
    return Group("llm-savings.compression", tuple(rules))
