"""Group ``llm-savings.provenance``: how much of the month a prompt tier or a service tier priced.

``priced_requests_total`` and ``priced_spend_usd_total`` count the requests
(and their spend) that price table v2 priced at rates other than the model's
base ones, by ``tier``, ``service_tier`` and ``window``. The records here keep
those labels and drop model and tenant, so they stay bounded by the price
table whatever the traffic:

* the month's priced requests and spend per (tier, service_tier, window);
* shares of the month's requests and spend (all models: ``requests_total``,
  ``spend_usd_total``) priced at a prompt tier other than ``base``, per tier,
  and at a service tier other than ``default``, per service tier (``unknown``
  included: a tier the price table does not list for the model, priced at base
  rates and flagged). A month without requests (or spend) has no share.

The Provenance dashboard computes the same shares from the counters
(``SHARE``, with its own selectors), so it works without these rules loaded.
"""

from __future__ import annotations

from exporter.mixin.config import Values
from exporter.mixin.model import Group, Record, fill

# the share of a month's total that rates other than the default priced, per value of one label;
# %(selector)s and %(total_selector)s: the matchers (the rules' job, or the dashboards' variables)
SHARE = """\
sum by (%(clusterLabel)s, month, %(by)s) (%(priced)s{%(selector)s, %(by)s!="%(default)s"})
/ ignoring (%(by)s) group_left ()
(sum by (%(clusterLabel)s, month) (%(total)s{%(total_selector)s}) > 0)"""

REQUESTS = ("llm_savings_priced_requests_total", "llm_savings_requests_total")
SPEND = ("llm_savings_priced_spend_usd_total", "llm_savings_spend_usd_total")
BY = (("tier", "base"), ("service_tier", "default"))


def share(counters: tuple[str, str], by: str, default: str, selector: str, total_selector: str,
          cfg: Values) -> str:
    """``SHARE`` of one pair of counters (priced, total) by one label, with the given matchers."""
    priced, total = counters
    return fill(SHARE, {**cfg, "by": by, "default": default, "priced": priced, "total": total,
                        "selector": selector, "total_selector": total_selector})


def group(cfg: Values) -> Group:
    job = fill("%(jobSelector)s", cfg)
    rules = [
        Record("month_tier:llm_savings_priced_requests:sum",
               fill("sum by (%(clusterLabel)s, month, tier, service_tier, window) "
                    "(llm_savings_priced_requests_total{%(jobSelector)s})", cfg),
               "--- which prompt tier, service tier and window priced the month (bounded: no model) ---"),
        Record("month_tier:llm_savings_priced_spend_usd:sum",
               fill("sum by (%(clusterLabel)s, month, tier, service_tier, window) "
                    "(llm_savings_priced_spend_usd_total{%(jobSelector)s})", cfg)),
    ]
    for (name, counters), (by, default) in ((pair, label) for pair in (("requests", REQUESTS),
                                                                        ("spend_usd", SPEND)) for label in BY):
        comment = ""
        if name == "requests" and by == "tier":
            comment = ("Shares of the month's requests (and spend) priced at a prompt tier other than base,\n"
                       "per tier, and at a service tier other than default, per service tier (unknown: a\n"
                       "tier the table does not list for the model, priced at base rates). No model label.")
        rules.append(Record(f"month_{by}:llm_savings_priced_{name}:ratio",
                            share(counters, by, default, job, job, cfg), comment))
    return Group("llm-savings.provenance", tuple(rules))
