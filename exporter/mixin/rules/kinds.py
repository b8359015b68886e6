"""Group ``llm-savings.kinds``: the four kinds of saving side by side, their honest total and shares.

The four kinds never overlap (a response-cache hit carries no compression or
provider-cache saving; routing is apart from compression), so the total is
their plain sum:

* compression: ``usd_saved_total``;
* provider prompt cache, net: read savings - write premium;
* response cache: ``response_cache_avoided_usd_total``;
* routing, net: routing savings - routing extra cost (below 0 when routes to
  dearer models cost more than routes to cheaper ones saved).

Each kind is recorded per month with a ``kind`` label, ``or vector(0)``-style
arms keeping a month whose counters of one kind do not exist yet: a missing
kind counts 0 and never makes the total vanish.
"""

from __future__ import annotations

from exporter.mixin.config import Values
from exporter.mixin.model import Group, Record, fill

PER_CELL = (
    ("llm_savings_response_cache_hits", "llm_savings_response_cache_hits_total"),
    ("llm_savings_response_cache_avoided_usd", "llm_savings_response_cache_avoided_usd_total"),
    ("llm_savings_routing_savings_usd", "llm_savings_routing_savings_usd_total"),
    ("llm_savings_routing_extra_cost_usd", "llm_savings_routing_extra_cost_usd_total"),
)

# hits / (hits + provider calls), per model and month; requests_total counts provider calls only.
HIT_RATE = """\
sum by (%(clusterLabel)s, month, model) (llm_savings_response_cache_hits_total{%(jobSelector)s})
/
(
    sum by (%(clusterLabel)s, month, model) (llm_savings_response_cache_hits_total{%(jobSelector)s})
  + (
      sum by (%(clusterLabel)s, month, model) (llm_savings_requests_total{%(jobSelector)s})
    or
      sum by (%(clusterLabel)s, month, model) (llm_savings_response_cache_hits_total{%(jobSelector)s}) * 0
  )
)"""

ROUTING_NET = """\
(
    sum by (%(clusterLabel)s, %(by)s) (llm_savings_routing_savings_usd_total{%(jobSelector)s})
  or
    sum by (%(clusterLabel)s, %(by)s) (llm_savings_routing_extra_cost_usd_total{%(jobSelector)s}) * 0
)
-
(
    sum by (%(clusterLabel)s, %(by)s) (llm_savings_routing_extra_cost_usd_total{%(jobSelector)s})
  or
    sum by (%(clusterLabel)s, %(by)s) (llm_savings_routing_savings_usd_total{%(jobSelector)s}) * 0
)"""

# Read savings - write premium, per month; each side alone keeps its month.
CACHE_NET = """\
(
    sum by (%(clusterLabel)s, month) (llm_savings_cache_read_savings_usd_total{%(jobSelector)s})
  or
    sum by (%(clusterLabel)s, month) (llm_savings_cache_write_premium_usd_total{%(jobSelector)s}) * 0
)
-
(
    sum by (%(clusterLabel)s, month) (llm_savings_cache_write_premium_usd_total{%(jobSelector)s})
  or
    sum by (%(clusterLabel)s, month) (llm_savings_cache_read_savings_usd_total{%(jobSelector)s}) * 0
)"""

# Every month any of the exporter's dollar counters has: the months a kind must show 0 in when it has none.
MONTHS = """\
sum by (%(clusterLabel)s, month) (
    llm_savings_requests_total{%(jobSelector)s}
  or llm_savings_usd_saved_total{%(jobSelector)s}
  or llm_savings_cache_read_savings_usd_total{%(jobSelector)s}
  or llm_savings_cache_write_premium_usd_total{%(jobSelector)s}
  or llm_savings_response_cache_hits_total{%(jobSelector)s}
  or llm_savings_response_cache_avoided_usd_total{%(jobSelector)s}
  or llm_savings_routing_savings_usd_total{%(jobSelector)s}
  or llm_savings_routing_extra_cost_usd_total{%(jobSelector)s}
) * 0"""

KIND = """\
label_replace(
    %(expr)s
  or
    %(months)s,
  "kind", "%(kind)s", "", ""
)"""

SHARE = """\
month_kind:llm_savings_usd_saved_by_kind:sum
/ ignoring (kind) group_left ()
(month:llm_savings_total_usd_saved:sum != 0)"""


def _kind(kind: str, expr: str, cfg: Values) -> str:
    return fill(KIND, {"expr": fill(expr, cfg), "months": "(" + fill(MONTHS, cfg).replace("\n", "\n    ") + ")",
                       "kind": kind})


def group(cfg: Values) -> Group:
    rules: list[Record] = [
        Record(f"month_model_tenant:{name}:sum",
               fill(f"sum without (instance, pod, job) ({counter}{{%(jobSelector)s}})", cfg),
               "--- response cache and routing, per month, model, tenant (and their own labels) ---"
               if i == 0 else "")
        for i, (name, counter) in enumerate(PER_CELL)
    ]
    rules += [
        Record("month_model:llm_savings_response_cache_hit:ratio", fill(HIT_RATE, cfg),
               "Response-cache hit rate = hits / (hits + provider calls). requests_total counts\n"
               "provider calls only, so the two never overlap; a model with hits and no call yet\n"
               "has a rate of 1."),
        Record("month:llm_savings_response_cache_avoided_usd:sum",
               fill("sum by (%(clusterLabel)s, month) "
                    "(llm_savings_response_cache_avoided_usd_total{%(jobSelector)s})", cfg)),
        Record("month_route:llm_savings_routing_net_usd_saved:sum",
               fill(ROUTING_NET, {**cfg, "by": "month, requested_model, model"}),
               "Net routing savings = routing savings - routing extra cost, per route\n"
               "(requested_model -> model): below 0 where routing to a dearer model cost more."),
        Record("month:llm_savings_routing_net_usd_saved:sum", fill(ROUTING_NET, {**cfg, "by": "month"})),
        Record("month_kind:llm_savings_usd_saved_by_kind:sum", "\nor\n".join(_kind(kind, expr, cfg) for kind, expr in (
            ("compression", "sum by (%(clusterLabel)s, month) (llm_savings_usd_saved_total{%(jobSelector)s})"),
            ("provider_cache", CACHE_NET),
            ("response_cache", "month:llm_savings_response_cache_avoided_usd:sum"),
            ("routing", "month:llm_savings_routing_net_usd_saved:sum"))),
            "--- the four kinds of saving, per month, one series per kind ---\n"
            "compression, provider_cache (net), response_cache, routing (net). Each kind is 0\n"
            "in a month where its counters do not exist yet (the `or ... * 0` arm over every\n"
            "month seen), so a missing kind never makes the total vanish."),
        Record("month:llm_savings_total_usd_saved:sum",
               "sum without (kind) (month_kind:llm_savings_usd_saved_by_kind:sum)",
               "Total saved = compression + provider cache (net) + response cache + routing (net):\n"
               "the kinds never overlap, so their plain sum is honest."),
        Record("month_kind:llm_savings_usd_saved_by_kind:ratio", SHARE,
               "Each kind's share of the total (absent when the total is 0; a negative routing\n"
               "net gives a negative share and the others' shares then add up to more than 1)."),
    ]
    return Group("llm-savings.kinds", tuple(rules))
