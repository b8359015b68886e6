"""The report as Markdown (``report --format markdown``): for a wiki page or a pull request, rounded."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.report import numbers
from exporter.report.figures import (
    headline,
    kind_details,
    kind_rows,
    population_lines,
    printable,
    provenance_lines,
    row_usd,
    token_mix,
    top,
)
from exporter.report.summary import MonthSummary, Report, Row


def _cell(text: str) -> str:
    """A table cell: pipes and newlines would break the table (label values are the gateway's)."""
    return printable(text).replace("\\", "\\\\").replace("|", "\\|") or "(none)"


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]], align: str = "") -> list[str]:
    """A table; ``align`` has an ``l`` or ``r`` per column (default: text first, numbers after)."""
    align = align or "l" + "r" * (len(header) - 1)
    rules = ["---" if side == "l" else "---:" for side in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rules) + " |"]
    lines += ["| " + " | ".join(_cell(value) for value in row) + " |" for row in rows]
    return lines


def _breakdown(title: str, key: str, rows: tuple[Row, ...]) -> list[str]:
    shown, rest = top(rows)
    lines = [f"### {title}", ""]
    if not rows:
        return [*lines, "Nothing counted.", ""]
    return [*lines, *_table((key, "requests", "tokens saved", "saved", "spend", "cache savings"),
                            [(r.name, numbers.tokens(r.requests), numbers.tokens(r.tokens_saved),
                              row_usd(r, r.usd_saved), row_usd(r, r.spend_usd), row_usd(r, r.cache_savings_usd))
                             for r in (*shown, *([rest] if rest else []))]), ""]


def _month(month: MonthSummary) -> list[str]:
    lines = _table(("figure", "value", "detail"), [(f.label, f.text, f.detail) for f in headline(month)], "lrl")
    lines += ["", "### Savings by kind", ""]
    lines += _table(("kind", "saved", "share"), kind_rows(month), "lrr")
    lines += [""] + [f"- **{label}**: {_cell(text)}" for label, text in kind_details(month)]
    lines.append("")
    lines += _breakdown("By model", "model", month.by_model)
    lines += _breakdown("By tenant", "tenant", month.by_tenant)
    lines += ["### By component", ""]
    if month.by_component:
        lines += _table(("component", "tokens saved", "saved"),
                        [(c.name, numbers.tokens(c.tokens_saved), numbers.usd(c.usd_saved))
                         for c in month.by_component])
    else:
        lines.append("No savings counted.")
    if month.populations:
        lines += ["", "### Baseline vs sent input", ""]
        lines += _table(("population", "baseline", "sent", "saved %", "ratio"), population_lines(month))
    mix = token_mix(month)
    whole = sum(count for _, count in mix)
    lines += ["", "### Tokens billed", ""]
    lines += _table(("tier", "tokens", "share"), [(name, numbers.tokens(count),
                                                   numbers.percent(numbers.share(count, whole)))
                                                  for name, count in mix])
    lines += ["", "### Provenance", ""]
    lines += [f"- **{label}**: {_cell(text)}" for label, text in provenance_lines(month)]
    return lines


def render_markdown(report: Report) -> str:
    focus = report.focus
    lines = [f"## LLM savings, {focus.month}" if focus else "## LLM savings", ""]
    lines.append(f"Month to date in {report.timezone}; {report.source}; price table "
                 f"{', '.join(report.price_versions) or 'none'}; generated {report.generated_at}.")
    lines.append("")
    if report.note:
        lines += [f"> {report.note}", ""]
    if focus is None:
        lines += ["No records counted.", ""]
    else:
        lines += _month(focus)
        lines.append("")
    if report.months:
        lines += ["### Months", ""]
        lines += _table(("month", "requests", "tokens saved", "saved", "spend", "cache savings"),
                        [(m.month, numbers.tokens(m.totals["requests"]), numbers.tokens(m.totals["tokens_saved"]),
                          numbers.usd(m.totals["usd_saved"]), numbers.usd(m.totals["spend_usd"]),
                          numbers.usd(m.totals["cache_savings_usd"])) for m in report.months])
        lines.append("")
    return "\n".join(lines)
