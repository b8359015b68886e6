"""The report as one self-contained HTML page: the landing page ``/`` and ``report --format html``.

Inline CSS and inline SVG (``exporter.report.charts``), no script, no font, image or
link to anything outside the page, so it works offline and can be mailed as a file.
People read rounded figures; every figure also carries its exact value in data
attributes (``data-figure``/``data-value`` for the headline, ``data-*`` on table rows),
which is what the browser test compares with /metrics.
"""

from __future__ import annotations

from html import escape

from exporter.report import numbers
from exporter.report.charts import PALETTE, Bar, columns, hbars, stacked
from exporter.report.figures import headline, kind_details, kind_rows, population_lines, row_usd, token_mix, top
from exporter.report.html_style import STYLE
from exporter.report.summary import MonthSummary, Report, Row, Tally


def exact(value: float | int | None) -> str:
    """A value as a data attribute holds it: the shortest text that reads back as exactly this number."""
    return "" if value is None else repr(value)


def _attrs(**values: float | int | str | None) -> str:
    out = []
    for name, value in values.items():
        text = value if isinstance(value, str) else exact(value)
        out.append(f' data-{name.replace("_", "-")}="{escape(text)}"')
    return "".join(out)


def _card(title: str, body: str) -> str:
    return f'<section class="card"><h2>{escape(title)}</h2>{body}</section>'


def _figures(month: MonthSummary) -> str:
    cards = []
    for index, figure in enumerate(headline(month)):
        cards.append(f'<div class="fig{" lead" if index == 0 else ""}" data-figure="{figure.key}" '
                     f'data-value="{escape(exact(figure.value))}"><div class="fl">{escape(figure.label)}</div>'
                     f'<div class="fv">{escape(figure.text)}</div><div class="fd">{escape(figure.detail)}</div></div>')
    return '<div class="figs">' + "".join(cards) + "</div>"


def _kinds(month: MonthSummary) -> str:
    """The four kinds of saving side by side, the total saved, their shares and the details."""
    names = [line.name for line in month.by_kind] + ["total"]
    lines = [f'<tr data-kind="{name}"><th>{escape(label)}</th><td>{escape(usd)}</td><td>{escape(part)}</td></tr>'
             for name, (label, usd, part) in zip(names, kind_rows(month), strict=True)]
    details = "".join(f"<p><b>{escape(label)}</b>: {escape(text)}</p>" for label, text in kind_details(month))
    table = ('<div class="scroll"><table><thead><tr><th>kind</th><th>saved</th><th>share</th></tr></thead><tbody>'
             + "".join(lines) + "</tbody></table></div>")
    return _card("Savings by kind", table + details)


def _breakdown(kind: str, title: str, rows: tuple[Row, ...]) -> str:
    shown, rest = top(rows)
    if not rows:
        return _card(title, '<p class="muted">nothing counted</p>')
    chart = hbars(f"dollars saved by {kind}", [Bar(r.name or "(none)", r.usd_saved, row_usd(r, r.usd_saved))
                                               for r in shown])
    lines = []
    for row in (*shown, *([rest] if rest else [])):
        data = _attrs(breakdown=kind, name=row.name, requests=row.requests, tokens_saved=row.tokens_saved,
                      usd_saved=row.usd_saved, spend_usd=row.spend_usd, cache_savings_usd=row.cache_savings_usd)
        if row is rest:
            data = ' data-rest="1"'
        lines.append(f"<tr{data}><th>{escape(row.name or '(none)')}</th><td>{numbers.tokens(row.requests)}</td>"
                     f'<td class="o1">{numbers.compact(row.tokens_saved)}</td><td>{row_usd(row, row.usd_saved)}</td>'
                     f'<td>{row_usd(row, row.spend_usd)}</td>'
                     f'<td class="o2">{row_usd(row, row.cache_savings_usd)}</td></tr>')
    table = ('<div class="scroll"><table><thead><tr><th>' + escape(kind) + "</th><th>req</th>"
             "<th class=o1>tok saved</th><th>saved</th><th>spend</th><th class=o2>cache</th></tr></thead><tbody>"
             + "".join(lines) + "</tbody></table></div>")
    return _card(title, chart + table)


def _components(month: MonthSummary) -> str:
    rows = month.by_component
    if not rows:
        return _card("Tokens saved by component", '<p class="muted">no savings counted</p>')
    chart = hbars("tokens saved by component",
                  [Bar(c.name, c.tokens_saved, numbers.compact(c.tokens_saved)) for c in rows[:10]], PALETTE[1])
    lines = [f"<tr{_attrs(breakdown='component', name=c.name, tokens_saved=c.tokens_saved, usd_saved=c.usd_saved)}>"
             f"<th>{escape(c.name)}</th><td>{numbers.tokens(c.tokens_saved)}</td><td>{numbers.usd(c.usd_saved)}</td></tr>"
             for c in rows]
    table = ('<div class="scroll"><table><thead><tr><th>component</th><th>tokens saved</th><th>saved</th></tr>'
             "</thead><tbody>" + "".join(lines) + "</tbody></table></div>")
    return _card("Tokens saved by component", chart + table + _populations(month))


def _populations(month: MonthSummary) -> str:
    """Baseline vs sent input tokens by population (when the engine counts them)."""
    lines = []
    for pop, (name, baseline, sent, saved_pct, ratio) in zip(month.populations, population_lines(month), strict=True):
        data = _attrs(population=pop.name, baseline=pop.baseline_input_tokens, sent=pop.sent_input_tokens,
                      saved_pct=pop.saved_pct, compression_ratio=pop.compression_ratio)
        lines.append(f"<tr{data}><th>{escape(name)}</th><td class=o1>{baseline}</td><td class=o1>{sent}</td>"
                     f"<td>{saved_pct}</td><td>{ratio}</td></tr>")
    if not lines:
        return ""
    return ('<h3>Baseline vs sent input</h3><div class="scroll"><table><thead><tr><th>population</th>'
            "<th class=o1>baseline</th><th class=o1>sent</th><th>saved %</th><th>ratio</th></tr></thead><tbody>"
            + "".join(lines) + "</tbody></table></div>")


def _mix(month: MonthSummary) -> str:
    mix = token_mix(month)
    whole = sum(count for _, count in mix)
    chart = stacked("billed tokens by tier", [Bar(name, count, numbers.percent(numbers.share(count, whole)))
                                              for name, count in mix])
    lines = "".join(f"<tr{_attrs(tier=name, tokens=count)}><th>{escape(name)}</th><td>{numbers.tokens(count)}</td></tr>"
                    for name, count in mix)
    hit = numbers.percent(month.totals["cache_hit_rate"])
    return _card("Tokens billed", chart + f'<p class="muted">cache hit rate {hit}</p>'
                 f'<div class="scroll"><table><tbody>{lines}</tbody></table></div>')


def _tallies(kind: str, tallies: tuple[Tally, ...], what: str) -> str:
    if not tallies:
        return f'<li><span class="k">{escape(what)}</span> <span class="muted">none</span></li>'
    items = "".join(f"<span{_attrs(provenance=kind, name=t.name, requests=t.requests, usd_saved=t.usd_saved)}"
                    f'{_attrs(spend_usd=t.spend_usd)} class="tag">{escape(t.name or "(none)")} · '
                    f"{numbers.tokens(t.requests)} req · "
                    f"{numbers.usd(t.usd_saved if kind != 'price_version' else t.spend_usd)}</span>"
                    for t in tallies)
    return f'<li><span class="k">{escape(what)}</span> {items}</li>'


def _provenance(month: MonthSummary) -> str:
    prov = month.provenance
    items = [_tallies("price_version", prov.price_versions, "price versions (spend)"),
             _tallies("method", prov.count_methods, "count methods (saved)"),
             _tallies("factor_source", prov.factor_sources, "factor sources (saved)")]
    for kind, what, counts in (("flagged", "records flagged (usage completeness)", prov.flagged),
                               ("rejected", "records rejected", prov.rejected),
                               ("unpriced", "unpriced requests", prov.unpriced)):
        tags = "".join(f'<span{_attrs(provenance=kind, name=c.name, count=c.total)} class="tag">'
                       f"{escape(c.name)} {numbers.tokens(c.total)}</span>" for c in counts)
        items.append(f'<li><span class="k">{escape(what)}</span> {tags or "<span class=muted>none</span>"}</li>')
    items.append(f'<li><span class="k">duplicates</span> <span{_attrs(provenance="duplicates", count=prov.duplicates)} '
                 f'class="tag">{numbers.tokens(prov.duplicates)}</span></li>')
    return _card("Provenance", '<ul class="prov">' + "".join(items) + "</ul>")


def _months(report: Report) -> str:
    counted = [m for m in report.months if m.month != "unknown"]
    chart = columns("dollars saved and spend by month",
                    [(m.month, [Bar("saved", m.totals["usd_saved"], numbers.compact_usd(m.totals["usd_saved"])),
                                Bar("spend", m.totals["spend_usd"], numbers.compact_usd(m.totals["spend_usd"])),
                                Bar("cache", m.totals["cache_savings_usd"],
                                    numbers.compact_usd(m.totals["cache_savings_usd"]))])
                     for m in counted[-12:]], ("saved", "spend", "provider cache"))
    lines = []
    for m in report.months:
        t = m.totals
        data = _attrs(month=m.month, requests=t["requests"], tokens_saved=t["tokens_saved"], usd_saved=t["usd_saved"],
                      spend_usd=t["spend_usd"], cache_savings_usd=t["cache_savings_usd"], duplicates=t["duplicates"],
                      rejected=t["rejected"])
        lines.append(f"<tr{data}><th>{escape(m.month)}</th><td>{numbers.tokens(t['requests'])}</td>"
                     f'<td class="o1">{numbers.percent(m.saved_pct)}</td><td>{numbers.usd(t["usd_saved"])}</td>'
                     f'<td>{numbers.usd(t["spend_usd"])}</td><td>{numbers.usd(t["cache_savings_usd"])}</td>'
                     f'<td class="o2">{numbers.tokens(t["rejected"])}</td></tr>')
    table = ('<div class="scroll"><table><thead><tr><th>month</th><th>requests</th><th class=o1>saved %</th>'
             "<th>saved</th><th>spend</th><th>cache</th><th class=o2>rejected</th></tr></thead><tbody>"
             + "".join(lines) + "</tbody></table></div>")
    return _card("Months", (chart if counted else "") + table)


def render_html(report: Report, links: bool = False) -> str:
    """The page; ``links`` adds the sidecar's own endpoints (relative links, for the landing page)."""
    focus = report.focus
    title = f"LLM savings · {focus.month}" if focus else "LLM savings"
    nav = ('<nav><a href="metrics">/metrics</a><a href="healthz">/healthz</a><a href="readyz">/readyz</a></nav>'
           if links else "")
    body = [f'<header><div class="wrap"><h1>{escape(title)}</h1><p class="sub">month to date, {escape(report.timezone)}'
            f" · {escape(report.source)}</p>{nav}</div></header>",
            f'<main class="wrap" data-month="{escape(report.month or "")}">']
    if report.note:
        body.append(f'<p class="note">{escape(report.note)}</p>')
    cards = []
    if focus is None:
        body.append('<p class="note">No records counted yet.</p>')
    else:
        body.append(_figures(focus))
        cards += [_kinds(focus), _breakdown("model", "Saved by model", focus.by_model),
                  _breakdown("tenant", "Saved by tenant", focus.by_tenant), _components(focus), _mix(focus)]
    if report.months:
        cards.append(_months(report))
    if focus is not None:
        cards.append(_provenance(focus))
    body.append('<div class="grid">' + "".join(cards) + "</div>")
    body.append(f'<footer>price table {escape(", ".join(report.price_versions) or "none")} · generated '
                f"{escape(report.generated_at)} · <code>{escape(report.schema)}</code></footer></main>")
    return ('<!doctype html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>" + "".join(body) + "</body></html>\n")
