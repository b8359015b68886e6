"""What a span dialect is: how to recognise it and how to read its usage counts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple


class UsageCounts(NamedTuple):
    """The usage counts as the span states them (None: the attribute is absent)."""

    input: int | None
    output: int | None
    cache_read: int | None
    cache_write: int | None
    total: int | None


Detect = Callable[[Mapping[str, Any], str], bool]  # (attrs, scope name) -> is it mine?
ReadUsage = Callable[[Mapping[str, Any]], UsageCounts]  # raises BadValue on a malformed count


@dataclass(frozen=True, slots=True)
class Dialect:
    """One span dialect: a module of ``exporter.sources.otlp.dialects`` defines one.

    ``detect`` claims a span by the dialect's own attributes. ``detect_shared``,
    when given, claims it by attributes other dialects share (the gen_ai cache
    names); it is tried only after every dialect's ``detect`` said no, in the
    same order. ``usage`` is None for a dialect without usage counts.
    ``input_includes_cache`` is the dialect's convention for its input count,
    used when the span's total does not decide it. ``keys`` are the exact
    attribute names ``usage`` and ``detect`` read, so the decoders keep them.
    """

    name: str
    detect: Detect
    usage: ReadUsage | None
    input_includes_cache: bool = True
    keys: frozenset[str] = frozenset()
    detect_shared: Detect | None = None


__all__ = ["Detect", "Dialect", "ReadUsage", "UsageCounts"]
