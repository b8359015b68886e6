"""The fast path of record parsing: one typed msgspec decode for the common line.

``records.parse_line`` is the reference. Most gateway lines are well formed,
so we first decode into typed structs in C (types, bools-not-ints and count
bounds checked by msgspec, usage blocks included) and build the ``Record``
directly. Anything unusual — a validation error, prompt text to count, an
empty model or id, contradictory usage numbers, a timestamp of another shape
— returns ``None`` and the caller takes the reference path, which produces
the exact rejection reason. ``tests/engine/test_fastparse.py`` holds the two paths
equal, piece by piece (timestamps, usage blocks) and line by line.

Every usage key any shape reads is one optional field of ``_Usage`` whose
default is ``UNSET``, so "the key is present" (how ``usage.detect_shape``
tells shapes apart, even for a null value) is ``is not UNSET``, and "absent
or null counts 0" is ``or 0`` (``UNSET`` and ``None`` are both falsy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import msgspec
from msgspec import UNSET, UnsetType

from exporter.engine.usage import MAX_COUNT, OptimizerCall, Usage, service_tier_of

# The record key ``response_cache``: the kind of a gateway's response-cache hit (engine.gateway).
RESPONSE_CACHE_KINDS = ("exact", "semantic", "unspecified")
_HIT_KINDS = frozenset(RESPONSE_CACHE_KINDS)

Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_COUNT)]
Opt = Count | None | UnsetType  # UNSET: the key is absent; None: present, null


class _Component(msgspec.Struct, gc=False):
    name: Annotated[str, msgspec.Meta(min_length=1)]
    tokens_saved: Count


class _Details(msgspec.Struct, gc=False):
    """``prompt_tokens_details`` (OpenAI chat) and ``input_tokens_details`` (responses)."""

    cached_tokens: Opt = UNSET
    cache_write_tokens: Opt = UNSET
    cache_creation_tokens: Opt = UNSET


class _CacheCreation(msgspec.Struct, gc=False):
    """Anthropic's split of cache writes by lifetime."""

    ephemeral_5m_input_tokens: Opt = UNSET
    ephemeral_1h_input_tokens: Opt = UNSET


class _Usage(msgspec.Struct, gc=False, kw_only=True):
    """The union of the keys of every shape ``usage.normalise_usage`` knows.

    Fields in the order providers write them (msgspec matches the next field first).
    """

    # OpenAI chat completions (+ DeepSeek's hit/miss)
    prompt_tokens: Opt = UNSET
    completion_tokens: Opt = UNSET
    prompt_tokens_details: _Details | UnsetType | None = UNSET
    prompt_cache_hit_tokens: Opt = UNSET
    prompt_cache_miss_tokens: Opt = UNSET
    # Anthropic and OpenAI responses
    input_tokens: Opt = UNSET
    cache_read_input_tokens: Opt = UNSET
    cache_creation_input_tokens: Opt = UNSET
    output_tokens: Opt = UNSET
    cache_creation: _CacheCreation | UnsetType | None = UNSET
    input_tokens_details: _Details | UnsetType | None = UNSET
    output_tokens_details: Any = UNSET  # only its presence tells the shape
    # Gemini
    promptTokenCount: Opt = UNSET
    cachedContentTokenCount: Opt = UNSET
    candidatesTokenCount: Opt = UNSET
    thoughtsTokenCount: Opt = UNSET
    # Bedrock Converse
    inputTokens: Opt = UNSET
    outputTokens: Opt = UNSET
    cacheReadInputTokens: Opt = UNSET
    cacheWriteInputTokens: Opt = UNSET


class _Optimizer(msgspec.Struct, gc=False, kw_only=True):
    """The ``optimizer`` extension (net savings): a usage block is required, as the reference requires it."""

    model: Annotated[str, msgspec.Meta(min_length=1)]
    provider: str | int | None = None
    usage: _Usage
    service_tier: str | None = None


class _Line(msgspec.Struct, gc=False, kw_only=True):
    """One record line, fields in the record format's order. ``gc=False`` (here too): decoded JSON has no cycle."""

    ts: int | float | str
    request_id: str | int | None = None
    model: Annotated[str, msgspec.Meta(min_length=1)]
    provider: str | int | None = None
    tenant: str | int | None = None
    tokens_before: Count | None = None
    tokens_after: Count | None = None
    count_method: str | None = None
    # Present only to send such lines to the reference path (they need counting).
    text_before: Any = UNSET
    text_after: Any = UNSET
    would_have_saved: Count | None = None
    components: list[_Component] | None = None
    usage: _Usage | None = None
    source_dialect: Any = None
    messages_before: Any = UNSET
    messages_after: Any = UNSET
    optimizer: _Optimizer | None = None
    source_flags: Any = UNSET  # rare (sources' records): the reference path reads them
    response_cache: str | None = None
    requested_model: str | None = None
    service_tier: str | None = None


_DECODER = msgspec.json.Decoder(_Line)
_NO_DETAILS = _Details()
_NO_SPLIT = _CacheCreation()


class _Unusual(Exception):
    """This line needs the reference path (which finds the exact rejection)."""


# --- usage ------------------------------------------------------------------------


def fast_usage(u: _Usage) -> Usage | None:
    """``usage.normalise_usage`` over a typed block; raises ``_Unusual`` where that raises.

    The branches follow ``usage.detect_shape`` and the five normalisers in
    the same order, with the same arithmetic.
    """
    if u.prompt_tokens is not UNSET or u.prompt_cache_hit_tokens is not UNSET:  # OpenAI chat
        prompt = u.prompt_tokens or 0
        details = u.prompt_tokens_details or _NO_DETAILS
        cached = details.cached_tokens or 0
        written = details.cache_write_tokens or details.cache_creation_tokens or 0
        if u.prompt_cache_hit_tokens is not UNSET:  # DeepSeek: hit + miss = prompt
            hit = u.prompt_cache_hit_tokens or 0
            if cached and cached != hit:
                raise _Unusual
            cached = hit
            if u.prompt_cache_miss_tokens is not UNSET and hit + (u.prompt_cache_miss_tokens or 0) != prompt:
                raise _Unusual
        if cached + written > prompt:
            raise _Unusual
        return Usage(prompt - cached - written, cached, written, 0, u.completion_tokens or 0, "openai_chat")
    if u.promptTokenCount is not UNSET or u.candidatesTokenCount is not UNSET:  # Gemini
        prompt = u.promptTokenCount or 0
        cached = u.cachedContentTokenCount or 0
        if cached > prompt:
            raise _Unusual
        output = (u.candidatesTokenCount or 0) + (u.thoughtsTokenCount or 0)
        return Usage(prompt - cached, cached, 0, 0, output, "gemini")
    if u.inputTokens is not UNSET or u.outputTokens is not UNSET:  # Bedrock Converse
        return Usage(u.inputTokens or 0, u.cacheReadInputTokens or 0, u.cacheWriteInputTokens or 0, 0,
                     u.outputTokens or 0, "bedrock_converse")
    if u.input_tokens_details is not UNSET or u.output_tokens_details is not UNSET:  # OpenAI responses
        total_in = u.input_tokens or 0
        cached = (u.input_tokens_details or _NO_DETAILS).cached_tokens or 0
        if cached > total_in:
            raise _Unusual
        return Usage(total_in - cached, cached, 0, 0, u.output_tokens or 0, "openai_responses")
    if (u.cache_read_input_tokens is not UNSET or u.cache_creation_input_tokens is not UNSET
            or u.cache_creation is not UNSET or u.input_tokens is not UNSET or u.output_tokens is not UNSET):
        creation = u.cache_creation_input_tokens or 0  # Anthropic
        split = u.cache_creation or _NO_SPLIT
        if split.ephemeral_5m_input_tokens is not UNSET or split.ephemeral_1h_input_tokens is not UNSET:
            w5 = split.ephemeral_5m_input_tokens or 0
            w1h = split.ephemeral_1h_input_tokens or 0
            if u.cache_creation_input_tokens is not None and u.cache_creation_input_tokens is not UNSET \
                    and w5 + w1h != creation:
                raise _Unusual
        else:
            w5, w1h = creation, 0
        return Usage(u.input_tokens or 0, u.cache_read_input_tokens or 0, w5, w1h, u.output_tokens or 0,
                     "anthropic")
    return None


# --- timestamps -------------------------------------------------------------------

_SIXTY = {f"{n:02d}": n for n in range(60)}  # "00".."59": validates and converts in one lookup
_minute_starts: dict[str, int] = {}


def _minute_start(prefix: str, reference: Callable[[Any], float]) -> int | None:
    """Epoch seconds of ``YYYY-MM-DDTHH:MM:`` by the reference parser, cached; None if not that shape."""
    digits = prefix[:4] + prefix[5:7] + prefix[8:10] + prefix[11:13] + prefix[14:16]
    if not (len(prefix) == 17 and digits.isascii() and digits.isdigit()
            and prefix[4] == prefix[7] == "-" and prefix[10] == "T" and prefix[13] == prefix[16] == ":"):
        return None
    try:
        start = int(reference(prefix + "00Z"))
    except ValueError:
        return None
    if len(_minute_starts) >= 100_000:
        _minute_starts.clear()
    _minute_starts[prefix] = start
    return start


def fast_ts(text: str, reference: Callable[[Any], float], max_seconds: float) -> float | None:
    """``reference(text)`` for ``YYYY-MM-DDTHH:MM:SS[.f]Z`` (1-6 fraction digits), else None.

    The minute comes from the reference parser once per minute (cached by its
    text); seconds and microseconds are added as integers and divided once,
    as ``datetime.timestamp`` does (microseconds / 10**6), so the float is the same.
    """
    start = _minute_starts.get(text[:17])
    if start is None and (start := _minute_start(text[:17], reference)) is None:
        return None
    second = _SIXTY.get(text[17:19])
    if second is None:
        return None
    if len(text) == 20 and text[19] == "Z":  # no slice: this runs for every record
        seconds = float(start + second)
    else:
        fraction = text[20:-1]
        if text[19:20] != "." or text[-1] != "Z" or not (
                0 < len(fraction) <= 6 and fraction.isascii() and fraction.isdigit()):
            return None
        seconds = ((start + second) * 1_000_000 + int(fraction.ljust(6, "0"))) / 1_000_000
    return seconds if seconds <= max_seconds else None


# --- the line ---------------------------------------------------------------------


def _label(value: str | int | None) -> str | None:
    if type(value) is str:
        return value or None
    return None if value is None else str(value)


def _optimizer_tier(value: str | None) -> str | None:
    """``optimizer.service_tier`` as the reference reads it; a non-tier name raises ``_Unusual`` (its rejection)."""
    if not value:
        return None
    tier = service_tier_of(value)
    if tier is None:
        raise _Unusual
    return tier


def fast_parse(line: bytes, make_record: Any, parse_ts: Callable[[Any], float], max_seconds: float) -> Any:
    """A ``Record`` (built by ``make_record``) for an ordinary valid line, else None."""
    try:
        raw = _DECODER.decode(line)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        return None  # the reference path names the reason (deep nesting: invalid_json)
    return fast_record(raw, line, make_record, parse_ts, max_seconds)


def fast_record(raw: _Line, line: bytes, make_record: Any, parse_ts: Callable[[Any], float],
                max_seconds: float) -> Any:
    """``fast_parse`` after the decode: for a caller that decoded ``line`` into ``raw`` itself."""
    if not line.isascii():
        # msgspec skips unknown keys without checking their UTF-8; the reference rejects it
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if (raw.text_before is not UNSET or raw.text_after is not UNSET or raw.messages_before is not UNSET
            or raw.messages_after is not UNSET or raw.source_flags is not UNSET):
        return None
    hit = raw.response_cache
    if hit is not None and hit not in _HIT_KINDS:
        return None  # the reference names the rejection
    ts: float | None
    if isinstance(raw.ts, str):
        ts = fast_ts(raw.ts, parse_ts, max_seconds)
        if ts is None:
            return None
    else:
        try:
            ts = parse_ts(raw.ts)
        except ValueError:
            return None
    usage = None
    unknown_shape = False
    if raw.usage is not None:
        try:
            usage = fast_usage(raw.usage)
        except _Unusual:
            return None
        unknown_shape = usage is None
    # labels: a non-empty string (nearly always) as is; "" is absent; an integer id is its text
    request_id, provider, tenant = raw.request_id, raw.provider, raw.tenant
    if type(request_id) is not str or not request_id:
        request_id = _label(request_id)
    if type(provider) is not str or not provider:
        provider = _label(provider)
    if type(tenant) is not str or not tenant:
        tenant = _label(tenant)
    before, after = raw.tokens_before, raw.tokens_after
    components = tuple([(c.name, c.tokens_saved) for c in raw.components]) if raw.components else ()
    incomplete = (before is None or after is None) and (before is not None or after is not None or bool(components))
    flags: tuple[str, ...] = ()
    if unknown_shape or request_id is None or incomplete:  # rare: build them in the reference's order
        flags = tuple(name for name, on in (("unknown_usage_shape", unknown_shape), ("no_id", request_id is None),
                                            ("incomplete_savings", incomplete)) if on)
    dialect = raw.source_dialect
    optimizer = None
    if raw.optimizer is not None:  # rare: a compressor that calls a model
        try:
            optimizer = OptimizerCall(raw.optimizer.model, _label(raw.optimizer.provider),
                                      fast_usage(raw.optimizer.usage), _optimizer_tier(raw.optimizer.service_tier))
        except _Unusual:
            return None
    service_tier = raw.service_tier
    if service_tier:  # rare: a tier other than the default
        service_tier = service_tier_of(service_tier)
        if service_tier is None:
            return None  # the reference path names the rejection
    else:
        service_tier = None
    return make_record(  # positional: Record's field order
        ts,
        request_id,
        raw.model,
        provider,
        tenant,
        before,
        after,
        raw.count_method,
        raw.would_have_saved,
        components,
        usage,
        flags,
        dialect if isinstance(dialect, str) else None,
        optimizer,
        hit,
        raw.requested_model or None,
        service_tier,
    )
