"""The report as a boxed terminal panel (``report --format text``): the month in focus, rounded."""

from __future__ import annotations

import textwrap
import unicodedata
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

WIDTH = 78  # the panel's outer width: fits an 80-column terminal


def _cells(char: str) -> int:
    """Terminal columns of one character: two for East Asian wide ones, none for combining marks."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def width(text: str) -> int:
    return sum(map(_cells, text))


def _fit(text: str, columns: int) -> str:
    """``text`` cut to ``columns`` terminal columns (with an ellipsis when cut), padded to exactly that."""
    text = printable(text)
    if width(text) > columns:
        kept, used = [], 0
        for char in text:
            if used + _cells(char) > columns - 1:
                break
            kept.append(char)
            used += _cells(char)
        text = "".join(kept) + "…"
    return text + " " * (columns - width(text))


def _right(text: str, columns: int) -> str:
    return " " * max(0, columns - width(text)) + text


class _Panel:
    def __init__(self, width: int = WIDTH) -> None:
        self.inner = width - 4
        self.lines: list[str] = []

    def rule(self, left: str, title: str = "", right: str = "") -> None:
        head = f"{left}─ {title} " if title else left
        self.lines.append(head + "─" * (self.inner + 3 - width(head)) + right)

    def line(self, text: str = "") -> None:
        self.lines.append(f"│ {_fit(text, self.inner)} │")

    def wrapped(self, label: str, text: str, label_width: int) -> None:
        body = textwrap.wrap(text, self.inner - label_width - 1) or [""]
        for index, piece in enumerate(body):
            self.line((label if index == 0 else "").ljust(label_width) + " " + piece)

    def table(self, header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> None:
        numeric = [max(width(h), *(width(r[i]) for r in rows)) if rows else width(h) for i, h in enumerate(header)]
        first = max(8, self.inner - sum(numeric[1:]) - 2 * (len(header) - 1))
        widths = [first, *numeric[1:]]

        def cells(values: tuple[str, ...]) -> str:
            out = [_fit(values[0], first)]
            out += [_right(value, columns) for value, columns in zip(values[1:], widths[1:], strict=True)]
            return "  ".join(out)

        self.line(cells(header))
        for row in rows:
            self.line(cells(row))


def _breakdown(panel: _Panel, title: str, rows: tuple[Row, ...]) -> None:
    panel.rule("├", title, "┤")
    shown, rest = top(rows)
    lines = [(r.name or "(none)", numbers.tokens(r.requests), numbers.compact(r.tokens_saved),
              row_usd(r, r.usd_saved), row_usd(r, r.spend_usd)) for r in (*shown, *([rest] if rest else []))]
    if not lines:
        panel.line("nothing counted")
        return
    panel.table(("", "requests", "tok saved", "saved", "spend"), lines)


def _month_panel(panel: _Panel, month: MonthSummary) -> None:
    for figure in headline(month):
        panel.wrapped(f"{figure.label:<26}{figure.text:>14}  ", figure.detail, 42)
    panel.rule("├", "Savings by kind", "┤")
    panel.table(("", "saved", "share"), kind_rows(month))
    for label, text in kind_details(month):
        panel.wrapped(label, text, 20)
    _breakdown(panel, "By model", month.by_model)
    _breakdown(panel, "By tenant", month.by_tenant)
    panel.rule("├", "By component", "┤")
    if month.by_component:
        panel.table(("", "tokens saved", "saved"),
                    [(c.name, numbers.tokens(c.tokens_saved), numbers.usd(c.usd_saved)) for c in month.by_component])
    else:
        panel.line("no savings counted")
    if month.populations:
        panel.rule("├", "Baseline vs sent input", "┤")
        panel.table(("", "baseline", "sent", "saved %", "ratio"), population_lines(month))
    panel.rule("├", "Tokens billed", "┤")
    mix = token_mix(month)
    whole = sum(count for _, count in mix)
    panel.table(("", "tokens", "share"),
                [(name, numbers.tokens(count), numbers.percent(numbers.share(count, whole))) for name, count in mix])
    panel.rule("├", "Provenance", "┤")
    for label, text in provenance_lines(month):
        panel.wrapped(label, text, 18)


def render_text(report: Report) -> str:
    panel = _Panel()
    focus = report.focus
    title = f"llm-savings {focus.month} ({report.timezone})" if focus else "llm-savings"
    panel.rule("┌", title, "┐")
    if report.note:
        panel.wrapped("note", report.note, 5)
    if focus is None:
        panel.line("no records counted")
    else:
        _month_panel(panel, focus)
    if len(report.months) > 1 or focus is None:
        panel.rule("├", "Months", "┤")
        panel.table(("", "requests", "saved", "spend", "cache"),
                    [(m.month, numbers.tokens(m.totals["requests"]), numbers.usd(m.totals["usd_saved"]),
                      numbers.usd(m.totals["spend_usd"]), numbers.usd(m.totals["cache_savings_usd"]))
                     for m in report.months])
    panel.rule("├", "Source", "┤")
    panel.wrapped("source", f"{report.source}; price table {', '.join(report.price_versions) or 'none'}; "
                  f"generated {report.generated_at}", 7)
    panel.rule("└", "", "┘")
    return "\n".join(panel.lines) + "\n"
