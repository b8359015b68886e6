"""Inline SVG charts for the HTML report and the landing page: no script, no external resource.

Each chart is an ``<svg>`` with a ``viewBox`` that scales to its container's width (so it
reads at phone width), a ``<title>`` for screen readers, and text drawn by the browser's
own fonts. Values below zero draw no bar (the provider's cache effect can be a net premium;
the number beside it says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import NamedTuple

VIEW_WIDTH = 400
PALETTE = ("#0f766e", "#2563eb", "#d97706", "#7c3aed", "#64748b", "#db2777")


class Bar(NamedTuple):
    """One bar: what it is, its value (drawn to scale) and the rounded text shown beside it."""

    label: str
    value: float
    text: str


def _scale(values: Sequence[float]) -> float:
    top = max((v for v in values if v > 0), default=0.0)
    return top if top > 0 else 1.0


def _svg(title: str, height: int, body: str, view_width: int = VIEW_WIDTH) -> str:
    return (f'<svg class="chart" viewBox="0 0 {view_width} {height}" role="img" '
            f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
            f"{body}</svg>")


def _clip(label: str, limit: int = 34) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def hbars(title: str, bars: Sequence[Bar], color: str = PALETTE[0]) -> str:
    """Horizontal bars, one per row: the label and value above a bar scaled to the largest value."""
    row = 34
    scale = _scale([b.value for b in bars])
    parts = []
    for index, bar in enumerate(bars):
        y = index * row
        width = max(0.0, bar.value) / scale * VIEW_WIDTH
        parts.append(
            f'<text x="0" y="{y + 13}" class="lbl">{escape(_clip(bar.label, 32))}</text>'
            f'<text x="{VIEW_WIDTH}" y="{y + 13}" class="val" text-anchor="end">{escape(bar.text)}</text>'
            f'<rect x="0" y="{y + 18}" width="{VIEW_WIDTH}" height="10" rx="5" class="track"/>'
            f'<rect x="0" y="{y + 18}" width="{width:.2f}" height="10" rx="5" fill="{color}"/>')
    return _svg(title, max(row, row * len(bars)), "".join(parts))


def columns(title: str, groups: Sequence[tuple[str, Sequence[Bar]]], names: Sequence[str],
            view_width: int = VIEW_WIDTH) -> str:
    """Grouped columns (one group per month, one column per series), with a legend on top."""
    height, legend, axis = 220, 24, 20
    plot = height - legend - axis
    scale = _scale([bar.value for _, bars in groups for bar in bars])
    slot = view_width / max(1, len(groups))
    per = max(1, max((len(bars) for _, bars in groups), default=1))
    width = min(48.0, slot * 0.8 / per)
    parts = [f'<rect x="{i * 120}" y="2" width="11" height="11" rx="2" fill="{PALETTE[i % len(PALETTE)]}"/>'
             f'<text x="{i * 120 + 15}" y="12" class="lbl">{escape(name)}</text>' for i, name in enumerate(names)]
    parts.append(f'<line x1="0" x2="{view_width}" y1="{legend + plot}" y2="{legend + plot}" class="axis"/>')
    for index, (label, bars) in enumerate(groups):
        left = index * slot + (slot - width * len(bars)) / 2
        for position, bar in enumerate(bars):
            bar_height = max(0.0, bar.value) / scale * (plot - 14)
            x = left + position * width
            parts.append(f'<rect x="{x:.2f}" y="{legend + plot - bar_height:.2f}" width="{width - 2:.2f}" '
                         f'height="{bar_height:.2f}" rx="2" fill="{PALETTE[position % len(PALETTE)]}">'
                         f"<title>{escape(label)} {escape(names[position])}: {escape(bar.text)}</title></rect>")
            if len(groups) <= 6:
                parts.append(f'<text x="{x + (width - 2) / 2:.2f}" y="{legend + plot - bar_height - 3:.2f}" '
                             f'class="tiny" text-anchor="middle">{escape(bar.text)}</text>')
        parts.append(f'<text x="{index * slot + slot / 2:.2f}" y="{height - 4}" class="lbl" '
                     f'text-anchor="middle">{escape(label)}</text>')
    return _svg(title, height, "".join(parts), view_width)


def stacked(title: str, bars: Sequence[Bar]) -> str:
    """One bar split into its parts (tokens by tier), with a legend of each part's share."""
    total = sum(max(0.0, b.value) for b in bars) or 1.0
    parts, x = [], 0.0
    parts.append(f'<rect x="0" y="0" width="{VIEW_WIDTH}" height="18" rx="5" class="track"/>')
    for index, bar in enumerate(bars):
        width = max(0.0, bar.value) / total * VIEW_WIDTH
        if width > 0:
            parts.append(f'<rect x="{x:.2f}" y="0" width="{width:.2f}" height="18" '
                         f'fill="{PALETTE[index % len(PALETTE)]}"/>')
        x += width
    for index, bar in enumerate(bars):
        column, line = index % 2, index // 2
        left, top = column * 200, 32 + line * 22
        parts.append(f'<rect x="{left}" y="{top}" width="11" height="11" rx="2" '
                     f'fill="{PALETTE[index % len(PALETTE)]}"/>'
                     f'<text x="{left + 15}" y="{top + 10}" class="lbl">{escape(bar.label)} {escape(bar.text)}</text>')
    return _svg(title, 32 + 22 * ((len(bars) + 1) // 2), "".join(parts))
