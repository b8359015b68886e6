"""The Overview's "Savings by kind" rows: the four kinds side by side, their total and shares.

The kinds never overlap (a response-cache hit carries no compression or
provider-cache saving; routing is apart from compression), so the total is
their plain sum. Each kind's query ends in ``or vector(0)`` so that a kind
with no series yet counts 0 and the total does not vanish.
"""

from __future__ import annotations

from exporter.mixin.dashboards.common import Panel, Row, Target

COMPRESSION = "(sum(llm_savings_usd_saved_total{%(mtd)s}) or vector(0))"
PROVIDER_CACHE = ("((sum(llm_savings_cache_read_savings_usd_total{%(mtd)s}) or vector(0))"
                  " - (sum(llm_savings_cache_write_premium_usd_total{%(mtd)s}) or vector(0)))")
RESPONSE_CACHE = "(sum(llm_savings_response_cache_avoided_usd_total{%(mtd)s}) or vector(0))"
ROUTING = ("((sum(llm_savings_routing_savings_usd_total{%(mtd)s}) or vector(0))"
           " - (sum(llm_savings_routing_extra_cost_usd_total{%(mtd)s}) or vector(0)))")
KINDS = (("compression", COMPRESSION), ("provider cache (net)", PROVIDER_CACHE),
         ("response cache", RESPONSE_CACHE), ("routing (net)", ROUTING))
TOTAL = "\n+ ".join(expr for _, expr in KINDS)


def rows() -> list[Row]:
    side_by_side = [
        Panel("stat", "Total saved, by kind",
              "Month to date: compression (the proxy's usd_saved), the provider's prompt cache net of write "
              "premiums, the gateway's response cache (avoided calls) and routing net of routes to dearer "
              "models, and their sum. The kinds never overlap, so the total is their plain sum.",
              [*(Target(expr, kind) for kind, expr in KINDS), Target(TOTAL, "total saved")],
              w=14, unit="currencyUSD", decimals=2),
        Panel("stat", "Share of the total, by kind",
              "Month to date: each kind / the total saved. A negative routing net has a negative share.",
              [Target(f"{expr}\n/ ({TOTAL})", kind) for kind, expr in KINDS],
              w=10, unit="percentunit", decimals=1),
    ]
    details = [
        Panel("bargauge", "Response cache hits by kind",
              "Month-to-date requests the gateway answered from its own cache (no provider call), by cache "
              "kind (exact, semantic, unspecified).",
              [Target("sum by (kind) (llm_savings_response_cache_hits_total{%(mtd)s})", "{{kind}}")],
              w=6, h=6, unit_of="llm_savings_response_cache_hits_total"),
        Panel("stat", "Response cache hit rate",
              "Month to date: hits / (hits + provider calls). requests_total counts provider calls only.",
              # 0 (not blank) in a month with provider calls and no hit yet; blank with neither
              [Target("(sum(llm_savings_response_cache_hits_total{%(mtd)s}) or vector(0))\n"
                      "/ ((sum(llm_savings_response_cache_hits_total{%(mtd)s})\n"
                      "    + (sum(llm_savings_requests_total{%(mtd)s}) or vector(0)))\n"
                      "   or sum(llm_savings_requests_total{%(mtd)s}))")],
              w=4, h=6, unit="percentunit", decimals=1),
        Panel("stat", "Unpriced response cache hits",
              "Month-to-date hits whose avoided dollars are unknown (unknown usage, or an unpriced model): "
              "counted as hits, never priced at $0.",
              [Target("sum(llm_savings_response_cache_unpriced_hits_total{%(mtd_model)s}) or vector(0)")],
              w=4, h=6, unit_of="llm_savings_response_cache_unpriced_hits_total"),
        Panel("stat", "Routed requests",
              "Month-to-date requests a router sent to another model than the one asked for; unpriced: "
              "routed requests whose saving could not be priced.",
              [Target("sum(llm_savings_routed_requests_total{%(mtd)s}) or vector(0)", "routed"),
               Target("sum(llm_savings_routing_unpriced_requests_total{%(mtd_model)s}) or vector(0)",
                      "unpriced")],
              w=4, h=6, unit_of="llm_savings_routed_requests_total"),
        Panel("bargauge", "Routing savings vs extra cost, by route",
              "Month to date, requested_model -> model: what routes to cheaper models saved, and what routes "
              "to dearer models cost more (a negative saving, kept in its own counter).",
              [Target("sum by (requested_model, model) (llm_savings_routing_savings_usd_total{%(mtd)s})",
                      "saved: {{requested_model}} -> {{model}}"),
               Target("sum by (requested_model, model) (llm_savings_routing_extra_cost_usd_total{%(mtd)s})",
                      "extra cost: {{requested_model}} -> {{model}}")],
              w=6, h=6, unit_of="llm_savings_routing_savings_usd_total", decimals=2),
    ]
    return [Row("Savings by kind", [side_by_side, details])]
