"""Numbers for people: currency, token counts, percentages, ratios.

The human formats (text, markdown, HTML) round; the JSON report keeps exact
values. Every function here takes what the model holds (``None`` for a figure
that is not counted) and never prints ``nan``, ``inf``, an exponent or float
noise: a missing or non-finite figure is an em dash.
"""

from __future__ import annotations

import math

DASH = "—"
_SUFFIXES = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k"))


def _finite(value: float | int | None) -> bool:
    return value is not None and math.isfinite(value)


def usd(value: float | None) -> str:
    """Dollars with thousands separators: cents from $1 on, four decimals below (API calls cost fractions
    of a cent), ``<$0.0001`` for a positive amount smaller than that; never ``-$0.00``."""
    if value is None or not math.isfinite(value):
        return DASH
    size = abs(value)
    digits = 2 if round(size, 4) >= 1 or size == 0 else 4
    text = f"{size:,.{digits}f}"
    if text.strip("0.,") == "":  # rounds to zero
        return "$0.00" if size == 0 else ("-" if value < 0 else "") + "<$0.0001"
    return ("-" if value < 0 else "") + "$" + text


def tokens(value: int | None) -> str:
    """A count with thousands separators (``1,234,567``)."""
    return DASH if value is None else f"{value:,}"


def compact(value: float | int | None) -> str:
    """A short count for chart labels and headlines (``950``, ``12.3k``, ``4.5M``)."""
    if value is None or not math.isfinite(value):
        return DASH
    size = abs(value)
    sign = "-" if value < 0 else ""
    for threshold, suffix in _SUFFIXES:
        if round(size / threshold, 1) >= 1:
            return f"{sign}{size / threshold:,.1f}{suffix}"
    return f"{sign}{size:,.0f}" if isinstance(value, float) else f"{value:,}"


def compact_usd(value: float | None) -> str:
    """Dollars for chart labels: ``$12.3k`` from $10,000 on, else :func:`usd`."""
    if value is not None and math.isfinite(value) and abs(value) >= 10_000:
        return ("-" if value < 0 else "") + "$" + compact(abs(value))
    return usd(value)


def percent(fraction: float | None, digits: int = 1) -> str:
    """A fraction as a percentage (``0.184`` -> ``18.4%``); ``<0.1%`` for a positive share that would
    round to zero, so a small saving is never shown as none."""
    if fraction is None or not math.isfinite(fraction):
        return DASH
    value = fraction * 100
    text = f"{abs(value):,.{digits}f}"
    if text.strip("0.,") == "":
        if value == 0:
            return f"{0:.{digits}f}%"
        return ("-" if value < 0 else "") + "<" + f"{10 ** -digits:.{digits}f}%"
    return ("-" if value < 0 else "") + text + "%"


def ratio(value: float | None) -> str:
    """A ratio of sums (the compression ratio baseline / sent): ``1.84×``."""
    if value is None or not math.isfinite(value):
        return DASH
    return f"{value:,.2f}×"


def share(part: float | int, whole: float | int) -> float | None:
    """``part / whole``, or None when the whole is zero (a share of nothing is not 0%)."""
    if not _finite(part) or not _finite(whole) or whole == 0:
        return None
    return part / whole
