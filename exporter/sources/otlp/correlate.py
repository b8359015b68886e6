"""The mapping's side of the counted-once rules: a request's spans -> the correlator's members, and back.

The rules and the memory they keep are ``exporter.sources.otlp.correlator``'s
(``SpanCorrelator``, one per ``MappingOptions``); here a request's mapped
spans become its members (a model-call span with usage, not this project's
own), and the correlator's answers are written back: a member dropped is
ignored as ``same_call``, a kept one carries its family's request id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from exporter.sources.otlp.attributes import A_RESPONSE_ID
from exporter.sources.otlp.correlator import Member, SpanCorrelator
from exporter.sources.otlp.dialects.base import RESPONSE_CACHE_HIT
from exporter.sources.otlp.spans import (
    DEFAULT_OPTIONS,
    Ignored,
    Mapped,
    MappingOptions,
    SpanOutcome,
    SpanView,
)

IGNORE_SAME_CALL = "same_call"
_SAME_CALL = Ignored(IGNORE_SAME_CALL)  # shared: the outcome is frozen
try:  # the glue below in C (_correlator.c, beside the rules' inner loop), when the install built it
    from exporter.sources.otlp import _correlator as _native
except ImportError:  # pragma: no cover - exercised by installs without a compiler
    _native = None  # type: ignore[assignment]
if _native is not None:  # it makes members and reads this attribute and this flag
    _native.setup(Member, Mapped, A_RESPONSE_ID, RESPONSE_CACHE_HIT)


def _correlator(opts: MappingOptions) -> SpanCorrelator | None:
    """The options' correlator; a fresh one (this request only) for the shared defaults."""
    if not opts.correlate:
        return None
    if opts is DEFAULT_OPTIONS:
        return SpanCorrelator(end_tolerance_ns=int(opts.correlation_end_tolerance_seconds * 1e9))
    found = opts._memory.get("correlator")
    if found is None:
        fresh = SpanCorrelator(
            window_seconds=opts.correlation_window_seconds,
            end_tolerance_ns=int(opts.correlation_end_tolerance_seconds * 1e9),
            max_entries=opts.correlation_max_entries,
        )
        found = opts._memory.setdefault("correlator", fresh)
    assert isinstance(found, SpanCorrelator)
    return found


def evicted_early(opts: MappingOptions) -> int:
    """Entries the options' memory forgot because of its cap before their window ended (0: none yet)."""
    found = opts._memory.get("correlator")
    return found.evicted_early if isinstance(found, SpanCorrelator) else 0


def _usage_numbers(usage: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """(input total, cache read, cache write, output) of a block ``blocks.usage_block`` made."""
    if "prompt_tokens" in usage or "completion_tokens" in usage or "prompt_tokens_details" in usage:
        details = usage.get("prompt_tokens_details") or {}
        return (
            usage.get("prompt_tokens") or 0,
            details.get("cached_tokens") or 0,
            details.get("cache_write_tokens") or 0,
            usage.get("completion_tokens") or 0,
        )
    read = usage.get("cache_read_input_tokens") or 0
    write = usage.get("cache_creation_input_tokens") or 0
    return (usage.get("input_tokens", 0) + read + write, read, write, usage.get("output_tokens") or 0)


def _own(span: SpanView) -> bool:
    """This project's own spans carry their ids and savings on purpose: never correlated."""
    return any(key.startswith("llm_savings.") for key in span.attrs)


def _member(span: SpanView, record: dict[str, Any], usage: Mapping[str, Any], key: str, parent_key: str,
            index: int) -> Member:
    """The correlator's view of ``views[index]`` (``correlate``'s), a mapped span with usage."""
    flags = record.get("source_flags")
    response_id = span.attrs.get(A_RESPONSE_ID)
    response_id = response_id if isinstance(response_id, str) and response_id else None
    complete = not flags or flags.count(RESPONSE_CACHE_HIT) == len(flags)  # no flag but the cache hit
    return Member(  # positional: the fields in their declared order
        key,
        parent_key,
        record.get("source_dialect", ""),
        _usage_numbers(usage),
        record.get("model", ""),
        span.end_ns or span.start_ns,
        response_id,
        record.get("request_id"),
        (1 if complete else 0, 1 if "cache_creation" in usage else 0, 1 if response_id else 0),
        index,
    )


def correlate(
    views: Sequence[SpanView],
    outcomes: list[SpanOutcome],
    opts: MappingOptions,
    owns: Sequence[bool] | None = None,
) -> None:
    """Apply the counted-once rules to one request's spans and their outcomes, ``outcomes[i]`` being
    ``views[i]``'s: a member dropped becomes ``same_call``, a kept one gets its family's request id.

    ``owns[i]``: whether ``views[i]`` is this project's own span (an ``llm_savings.*``
    attribute); the mapping passes its per-shape answers, else each span's names are scanned.
    """
    correlator = _correlator(opts)
    if correlator is None:
        return
    if correlator.native and type(views) is list and type(outcomes) is list and type(owns) is list:
        spans, calls = _native.gather(views, outcomes, owns)  # the loop below, in C
        if calls:
            correlator.resolve(spans, calls)
            _native.apply(calls, outcomes, _SAME_CALL)  # the loop at the end, in C
        return
    links: list[tuple[str, str]] = []
    members: list[Member] = []
    for index, view in enumerate(views):
        trace, span_id, parent = view.trace_id, view.span_id, view.parent_span_id
        if not (trace and span_id):
            continue
        key = f"{trace}:{span_id}"
        parent_key = f"{trace}:{parent}" if parent else ""
        links.append((key, parent_key))
        outcome = outcomes[index]
        if type(outcome) is Mapped:
            usage = outcome.record.get("usage")
            if usage and not (owns[index] if owns is not None else _own(view)):
                members.append(_member(view, outcome.record, usage, key, parent_key, index))
    if not members:
        return
    correlator.resolve(links, members)
    for member in members:
        if not member.keep:
            outcomes[member.index] = _SAME_CALL
        elif member.request_id is not None:
            record = outcomes[member.index]
            assert isinstance(record, Mapped)
            record.record["request_id"] = member.request_id


__all__ = ["IGNORE_SAME_CALL", "correlate", "evicted_early"]
