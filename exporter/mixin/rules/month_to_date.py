"""Group ``llm-savings.month-to-date``: the month's totals over the replicas, and their ratios."""

from __future__ import annotations

from exporter.mixin.config import Values
from exporter.mixin.model import Group, Record, fill

# Summed over the replicas, every other label kept: (record metric part, counter).
PER_CELL = (
    ("llm_savings_requests", "llm_savings_requests_total"),
    ("llm_savings_tokens_saved", "llm_savings_tokens_saved_total"),
    ("llm_savings_usd_saved", "llm_savings_usd_saved_total"),
    ("llm_savings_would_have_saved_tokens", "llm_savings_would_have_saved_tokens_total"),
    ("llm_savings_would_have_saved_usd", "llm_savings_would_have_saved_usd_total"),
    ("llm_savings_prompt_tokens", "llm_savings_prompt_tokens_total"),
    ("llm_savings_output_tokens", "llm_savings_output_tokens_total"),
    ("llm_savings_spend_usd", "llm_savings_spend_usd_total"),
    ("llm_savings_cache_read_savings_usd", "llm_savings_cache_read_savings_usd_total"),
    ("llm_savings_cache_write_premium_usd", "llm_savings_cache_write_premium_usd_total"),
)
# Summed per month (and cluster) over everything else.
PER_MONTH = (
    ("llm_savings_requests", "llm_savings_requests_total"),
    ("llm_savings_tokens_saved", "llm_savings_tokens_saved_total"),
    ("llm_savings_usd_saved", "llm_savings_usd_saved_total"),
    ("llm_savings_spend_usd", "llm_savings_spend_usd_total"),
)

CACHE_NET = """\
(
    sum without (instance, pod, job) (llm_savings_cache_read_savings_usd_total{%(jobSelector)s})
  - sum without (instance, pod, job) (llm_savings_cache_write_premium_usd_total{%(jobSelector)s})
)
or sum without (instance, pod, job) (llm_savings_cache_read_savings_usd_total{%(jobSelector)s})
or -sum without (instance, pod, job) (llm_savings_cache_write_premium_usd_total{%(jobSelector)s})"""

CACHE_HIT = """\
(
    sum without (instance, pod, job, tier) (llm_savings_prompt_tokens_total{%(jobSelector)s, tier="cache_read"})
  or
    sum without (instance, pod, job, tier) (
      llm_savings_prompt_tokens_total{%(jobSelector)s, tier=~"fresh|cache_read|cache_write_5m|cache_write_1h"}
    ) * 0
)
/
(
  sum without (instance, pod, job, tier) (
    llm_savings_prompt_tokens_total{%(jobSelector)s, tier=~"fresh|cache_read|cache_write_5m|cache_write_1h"}
  ) > 0
)"""

DIVERGENCE = """\
sum without (instance, pod, job) (llm_savings_divergence_provider_tokens_total{%(jobSelector)s})
/
(sum without (instance, pod, job) (llm_savings_divergence_counted_tokens_total{%(jobSelector)s}) > 0)"""

MONTH_CACHE_HIT = """\
(
    sum by (%(clusterLabel)s, month) (llm_savings_prompt_tokens_total{%(jobSelector)s, tier="cache_read"})
  or
    sum by (%(clusterLabel)s, month) (
      llm_savings_prompt_tokens_total{%(jobSelector)s, tier=~"fresh|cache_read|cache_write_5m|cache_write_1h"}
    ) * 0
)
/
(
  sum by (%(clusterLabel)s, month) (
    llm_savings_prompt_tokens_total{%(jobSelector)s, tier=~"fresh|cache_read|cache_write_5m|cache_write_1h"}
  ) > 0
)"""

DEFAULT_FACTOR = """\
(
    sum by (%(clusterLabel)s, month) (llm_savings_usd_saved_total{%(jobSelector)s, factor_source="default"})
  or
    sum by (%(clusterLabel)s, month) (llm_savings_usd_saved_total{%(jobSelector)s}) * 0
)
/
(sum by (%(clusterLabel)s, month) (llm_savings_usd_saved_total{%(jobSelector)s}) > 0)"""


def group(cfg: Values) -> Group:
    rules: list[Record] = [
        Record(f"month_model_tenant:{name}:sum",
               fill(f"sum without (instance, pod, job) ({counter}{{%(jobSelector)s}})", cfg),
               "--- per month, model, tenant (and the metric's provenance labels) ---" if i == 0 else "")
        for i, (name, counter) in enumerate(PER_CELL)
    ]
    rules += [
        Record("month_model_tenant:llm_savings_cache_savings_usd:net", fill(CACHE_NET, cfg),
               "Net cache savings (the replay's cache_savings_usd) = read savings - write\n"
               "premium. Two counters because a counter never decreases. The `or` arms\n"
               "keep a label set that only one side has (a model with reads but no\n"
               "writes, or writes and no reads yet) instead of dropping it."),
        Record("month_model_tenant:llm_savings_cache_hit:ratio", fill(CACHE_HIT, cfg),
               "Provider cache hit ratio = cache_read / (fresh + cache_read + cache_write_5m\n"
               "+ cache_write_1h). The tiers are listed so a future tier cannot slip into\n"
               "the denominator unseen; `or ... * 0` gives 0 where nothing was read from\n"
               "cache yet, and `> 0` leaves out label sets with no prompt tokens at all."),
        Record("month_model_method_population:llm_savings_estimator_divergence:ratio", fill(DIVERGENCE, cfg),
               "Estimator divergence: provider prompt tokens / counted tokens_after, per\n"
               "population (compacted: before > after; untouched). A level ratio to read,\n"
               "never a correction factor."),
    ]
    rules += [
        Record(f"month:{name}:sum", fill(f"sum by (%(clusterLabel)s, month) ({counter}{{%(jobSelector)s}})", cfg),
               "--- per month, all models and tenants together ---" if i == 0 else "")
        for i, (name, counter) in enumerate(PER_MONTH)
    ]
    rules += [
        Record("month:llm_savings_cache_savings_usd:net",
               fill("sum by (%(clusterLabel)s, month) (month_model_tenant:llm_savings_cache_savings_usd:net)", cfg)),
        Record("month:llm_savings_cache_hit:ratio", fill(MONTH_CACHE_HIT, cfg)),
        Record("month:llm_savings_usd_saved_default_factor:ratio", fill(DEFAULT_FACTOR, cfg),
               "Share of the dollars saved that rest on the default billed-token factor\n"
               "(1.0, because the price table has no factor for that count method). The\n"
               "higher it is, the more the dollar figure depends on an assumption."),
    ]
    return Group("llm-savings.month-to-date", tuple(rules))
