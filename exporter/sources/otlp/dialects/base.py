"""What a span dialect is: how to recognise it and how to read its usage counts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from exporter.engine.records import SOURCE_FLAGS
from exporter.engine.usage import MAX_COUNT
from exporter.sources.otlp.attributes import c_reads, read_count

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


class CountNames(NamedTuple):
    """Where a dialect whose counts are plain attributes reads them: each count's names in
    precedence (the first present is read). ``Dialect.usage`` is then ``read_counts`` of these,
    and the mapping reads only the names a span's shape carries (``exporter.sources.otlp.plan``)."""

    input: tuple[str, ...]
    output: tuple[str, ...]
    cache_read: tuple[str, ...]
    cache_write: tuple[str, ...]
    total: tuple[str, ...]

    def keys(self) -> frozenset[str]:
        return frozenset(name for names in self for name in names)

    def pairs(self, present: frozenset[str] | None = None) -> CountPairs:
        """(count's index, name) of every name, or of those in ``present`` (a span's shape), in order."""
        return tuple((index, name) for index, names in enumerate(self) for name in names
                     if present is None or name in present)


CountPairs = tuple[tuple[int, str], ...]  # what read_counts reads: (index in CountNames, name), in order
_new_tuple = tuple.__new__  # a NamedTuple made without its Python-level __new__


def read_counts(
    attrs: Mapping[str, Any],
    pairs: CountPairs,
    includes_cache: bool | None = None,
    flags: tuple[str, ...] = (),
) -> UsageCounts:
    """The five counts of ``CountNames.pairs`` (each ``read_count`` of its first name present), in one call."""
    values: list[int | None] = [None, None, None, None, None]
    for index, name in pairs:
        if values[index] is None:
            raw = attrs.get(name)
            if raw is not None:  # a plain count needs no call; anything else read_count checks (or rejects)
                values[index] = raw if type(raw) is int and 0 <= raw <= MAX_COUNT else read_count(attrs, name)
    return _new_tuple(UsageCounts, (*values, None, None, includes_cache, flags))


read_counts_python = read_counts  # the twin of the C read (attributes.c_reads), and its fallback
if c_reads is not None:
    c_reads.bind("read_counts", read_counts)
    c_reads.bind("UsageCounts", UsageCounts)
    c_reads.bind("MAX_COUNT", MAX_COUNT)
    read_counts = c_reads.read_counts


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
    ``counts``, when given, says the dialect's counts are plain attributes under those names
    (``usage`` reads them with ``read_counts`` and ``counts_include_cache``); the mapping then
    reads only the ones a span's shape carries.
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
    counts: CountNames | None = None
    counts_include_cache: bool | None = None


def counted(
    name: str,
    detect: Detect,
    counts: CountNames,
    *,
    includes_cache: bool | None = None,
    keys: frozenset[str] = frozenset(),
    detect_shared: Detect | None = None,
) -> Dialect:
    """A dialect whose usage is its ``counts`` read as they are (``read_counts``)."""

    every = counts.pairs()

    def usage(attrs: Mapping[str, Any]) -> UsageCounts:
        return read_counts(attrs, every, includes_cache)

    return Dialect(name=name, detect=detect, usage=usage, keys=keys | counts.keys(),
                   detect_shared=detect_shared, counts=counts, counts_include_cache=includes_cache)


__all__ = [
    "MISSING_CACHE_DETAIL",
    "MISSING_CACHE_TTL",
    "MISSING_INCLUSIVE",
    "MISSING_USAGE_OBJECT",
    "RESPONSE_CACHE_HIT",
    "SOURCE_FLAGS",
    "CountNames",
    "CountPairs",
    "Detect",
    "Dialect",
    "ReadId",
    "ReadUsage",
    "UsageCounts",
    "counted",
    "read_counts",
    "read_counts_python",
]
