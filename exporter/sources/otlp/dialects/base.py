"""What a span dialect is: how to recognise it and how to read its usage counts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from exporter.engine.records import SOURCE_FLAGS

# What a span's telemetry lacks for exact dollars, and response-cache hits: record flags
# (``exporter.engine.records.SOURCE_FLAGS``, docs/telemetry.md). Bounded.
MISSING_CACHE_DETAIL = "usage_no_cache_detail"  # no cache counts at all: all input counted fresh
MISSING_CACHE_TTL = "usage_no_cache_ttl"  # cache writes without the 5m/1h split: priced as 5m
MISSING_INCLUSIVE = "usage_inclusive_assumed"  # input inclusive of the cache decided by convention
MISSING_USAGE_OBJECT = "usage_object_unparsed"  # LiteLLM's usage_object unreadable: plain attributes
RESPONSE_CACHE_HIT = "response_cache_hit"  # a gateway's own response cache answered: no provider call
assert (
    MISSING_CACHE_DETAIL,
    MISSING_CACHE_TTL,
    MISSING_INCLUSIVE,
    MISSING_USAGE_OBJECT,
    RESPONSE_CACHE_HIT,
) == SOURCE_FLAGS


class UsageCounts(NamedTuple):
    """The usage counts as the span states them (None: the attribute is absent).

    ``write_5m``/``write_1h``: the split of cache writes by lifetime, when the
    span carries it (then ``cache_write`` is their sum or None). ``includes_cache``:
    whether ``input`` includes the cache counts, when the dialect KNOWS it for
    this span (None: the total decides, else the dialect's convention). ``flags``:
    what the span lacks for exact dollars (``SOURCE_FLAGS``).
    """

    input: int | None
    output: int | None
    cache_read: int | None
    cache_write: int | None
    total: int | None
    write_5m: int | None = None
    write_1h: int | None = None
    includes_cache: bool | None = None
    flags: tuple[str, ...] = ()


Detect = Callable[[Mapping[str, Any], str], bool]  # (attrs, scope name) -> is it mine?
ReadUsage = Callable[[Mapping[str, Any]], UsageCounts]  # raises BadValue on a malformed count
ReadId = Callable[[Mapping[str, Any]], str | None]  # the dialect's dedupe id, None: the common rule


@dataclass(frozen=True, slots=True)
class Dialect:
    """One span dialect: a module of ``exporter.sources.otlp.dialects`` defines one.

    ``detect`` claims a span by the dialect's own attributes. ``detect_shared``,
    when given, claims it by attributes other dialects share (the gen_ai cache
    names); it is tried only after every dialect's ``detect`` said no, in the
    same order. ``usage`` is None for a dialect without usage counts.
    ``input_includes_cache`` is the dialect's convention for its input count,
    used when neither the dialect (``UsageCounts.includes_cache``) nor the span's
    total decides it. ``keys`` are the exact attribute names ``usage`` and
    ``detect`` read, so the decoders keep them. ``request_id``, when given,
    chooses the dedupe id (``llm_savings.request_id`` still overrides it).
    ``detect_reads`` names the attributes whose VALUES (not only presence)
    ``detect``/``detect_shared`` read: every other decision of theirs must depend
    on which names a span carries and its scope alone, so the mapping detects
    once per span shape (``exporter.sources.otlp.plan``).
    """

    name: str
    detect: Detect
    usage: ReadUsage | None
    input_includes_cache: bool = True
    keys: frozenset[str] = frozenset()
    detect_shared: Detect | None = None
    request_id: ReadId | None = None
    detect_reads: frozenset[str] = frozenset()


__all__ = [
    "MISSING_CACHE_DETAIL",
    "MISSING_CACHE_TTL",
    "MISSING_INCLUSIVE",
    "MISSING_USAGE_OBJECT",
    "RESPONSE_CACHE_HIT",
    "SOURCE_FLAGS",
    "Detect",
    "Dialect",
    "ReadId",
    "ReadUsage",
    "UsageCounts",
]
