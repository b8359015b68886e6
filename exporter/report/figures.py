"""What the human formats show, in the words they show it: shared by text, markdown and HTML.

Each headline figure keeps its exact value beside its rounded text, so the HTML can
carry the exact value in a data attribute while people read the rounded one.
"""

from __future__ import annotations

from typing import NamedTuple

from exporter.report import numbers
from exporter.report.summary import MonthSummary, Row

TOP_ROWS = 10  # breakdown lines shown by the human formats; the rest are summed into one line


class Figure(NamedTuple):
    """A headline figure: replay's key, a label, the exact value, its rounded text and a detail line."""

    key: str
    label: str
    value: float | int | None
    text: str
    detail: str


def headline(month: MonthSummary) -> tuple[Figure, ...]:
    """The month-to-date figures, savings first; spend and the provider's cache savings kept apart."""
    totals = month.totals
    saved_pct = month.saved_pct
    figures = [
        Figure("usd_saved", "Saved", totals["usd_saved"], numbers.usd(totals["usd_saved"]),
               f"{numbers.tokens(totals['tokens_saved'])} input tokens at list input price"),
        Figure("saved_pct", "Saved %", saved_pct, numbers.percent(saved_pct),
               "of baseline input tokens" if saved_pct is not None else "baseline input tokens not counted"),
        Figure("tokens_saved", "Tokens saved", totals["tokens_saved"], numbers.compact(totals["tokens_saved"]),
               f"compression {numbers.ratio(month.compression_ratio)}" if month.compression_ratio is not None
               else f"{numbers.tokens(totals['tokens_saved'])} tokens"),
        Figure("spend_usd", "Spend", totals["spend_usd"], numbers.usd(totals["spend_usd"]),
               f"{numbers.tokens(totals['requests'])} requests, {numbers.tokens(totals['unpriced'])} unpriced"),
        Figure("cache_savings_usd", "Provider cache savings", totals["cache_savings_usd"],
               numbers.usd(totals["cache_savings_usd"]),
               f"hit rate {numbers.percent(totals['cache_hit_rate'])}; the provider's, not the proxy's"),
        Figure("would_have_saved_usd", "Would have saved (shadow)", totals["would_have_saved_usd"],
               numbers.usd(totals["would_have_saved_usd"]),
               f"{numbers.tokens(totals['would_have_saved_tokens'])} tokens not removed (observe mode)"),
    ]
    net = month.net_usd_saved
    if net is not None and month.optimizer_counted:
        figures.insert(1, Figure("net_usd_saved", "Net of optimizer spend", net, numbers.usd(net),
                                 f"optimizer spend {numbers.usd(totals.get('optimizer_spend_usd'))}"))
    return tuple(figures)


def token_mix(month: MonthSummary) -> tuple[tuple[str, int], ...]:
    """Where the month's tokens went, by tier (what the provider billed)."""
    totals = month.totals
    return (("fresh input", int(totals["fresh_input_tokens"])), ("cache read", int(totals["cache_read_tokens"])),
            ("cache write", int(totals["cache_write_tokens"])), ("output", int(totals["output_tokens"])))


def printable(text: str) -> str:
    """A label value for a terminal or a markdown table: control and separator characters as spaces (a
    gateway's label may hold anything; the engine turns most of those into ``other`` already)."""
    return text if text.isprintable() else "".join(char if char.isprintable() else " " for char in text)


def row_usd(row: Row, value: float) -> str:
    """A breakdown row's dollars; a row of unpriced requests only has none (never shown as $0)."""
    return "unpriced" if row.requests and row.unpriced_requests == row.requests else numbers.usd(value)


def population_lines(month: MonthSummary) -> tuple[tuple[str, str, str, str, str], ...]:
    """Baseline vs sent input tokens per population, rounded: name, baseline, sent, saved %, ratio."""
    return tuple((p.name, numbers.tokens(p.baseline_input_tokens), numbers.tokens(p.sent_input_tokens),
                  numbers.percent(p.saved_pct), numbers.ratio(p.compression_ratio)) for p in month.populations)


def top(rows: tuple[Row, ...], limit: int = TOP_ROWS) -> tuple[tuple[Row, ...], Row | None]:
    """The first ``limit`` rows, and the others summed into one row (None when there are none)."""
    if len(rows) <= limit:
        return rows, None
    rest = rows[limit:]
    return rows[:limit], Row(f"{len(rest)} more", sum(r.requests for r in rest), sum(r.tokens_saved for r in rest),
                             sum(r.usd_saved for r in rest), sum(r.spend_usd for r in rest),
                             sum(r.cache_savings_usd for r in rest), sum(r.unpriced_requests for r in rest))


def provenance_lines(month: MonthSummary) -> tuple[tuple[str, str], ...]:
    """Provenance as label/text pairs: price versions, count methods, factor sources, usage completeness."""
    prov = month.provenance

    def listed(pairs: list[str]) -> str:
        return ", ".join(pairs) if pairs else "none"

    return (
        ("price versions", listed([f"{t.name} ({numbers.tokens(t.requests)} req)" for t in prov.price_versions])),
        ("count methods", listed([f"{t.name} ({numbers.tokens(t.tokens_saved)} tok saved)"
                                  for t in prov.count_methods])),
        ("factor sources", listed([f"{t.name} ({numbers.usd(t.usd_saved)})" for t in prov.factor_sources])),
        ("records flagged", listed([f"{c.name} {numbers.tokens(c.total)}" for c in prov.flagged])),
        ("records rejected", listed([f"{c.name} {numbers.tokens(c.total)}" for c in prov.rejected])),
        ("unpriced requests", listed([f"{c.name} {numbers.tokens(c.total)}" for c in prov.unpriced])),
        ("duplicates", numbers.tokens(prov.duplicates)),
    )


KIND_LABELS = {"compression": "compression (the proxy)", "provider_cache": "provider prompt cache (net)",
               "response_cache": "response cache", "routing": "routing (net)"}


def kind_rows(month: MonthSummary) -> tuple[tuple[str, str, str], ...]:
    """The four kinds side by side (label, dollars, share of the total), then the total saved."""
    lines = month.by_kind
    rows = [(KIND_LABELS[line.name], numbers.usd(line.usd), numbers.percent(line.share)) for line in lines]
    total = sum(line.usd for line in lines)
    rows.append(("total saved", numbers.usd(total), numbers.percent(1.0) if total else numbers.percent(None)))
    return tuple(rows)


def kind_details(month: MonthSummary) -> tuple[tuple[str, str], ...]:
    """The response-cache hits and the two sides of routing, as (label, text)."""
    kinds = month.kinds
    return (("Response cache hits", f"{numbers.tokens(kinds.response_cache_hits)} "
             f"({numbers.tokens(kinds.response_cache_unpriced_hits)} unpriced: dollars unknown)"),
            ("Routing", f"saved {numbers.usd(kinds.routing_savings_usd)}, extra cost "
             f"{numbers.usd(kinds.routing_extra_usd)} (routes to dearer models)"))
