"""Canonical request record v1 (docs/record-format.md): bytes in, a ``Record`` or a ``Rejection`` out.

Pure functions with no I/O and no metrics: the pipeline counts what comes
out. A rejection carries a bounded ``reason`` (a label value), a ``detail``
naming the field and the offending value's *type or number* (never prompt
text), and the record's timestamp when it was readable, so it can be counted
in its own month.

Choices where the contract is silent, written down:
- counts must be JSON integers (not bools, not floats such as 5.0), 0..2**53-1;
- a timestamp string without a UTC offset is read as UTC;
- ``request_id`` may be a string or an integer (ids some gateways log as
  numbers); an empty or absent id is counted and flagged ``no_id``;
- a usage block of an unknown shape is not a rejection: the record counts,
  without usage, and is flagged ``unknown_usage_shape``;
- blank lines are not records and are skipped without a count.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import msgspec
import orjson

from exporter.engine.fastparse import RESPONSE_CACHE_KINDS, fast_parse
from exporter.engine.usage import (
    MAX_COUNT,
    OptimizerCall,
    Usage,
    UsageError,
    count_value,
    normalise_usage,
    service_tier_of,
)

# Bounded set of rejection reasons (the `reason` label of records_rejected_total).
REJECTION_REASONS = (
    "invalid_json",
    "invalid_utf8",
    "not_object",
    "missing_ts",
    "invalid_ts",
    "missing_model",
    "invalid_field",
    "invalid_count",
    "invalid_usage",
    "inconsistent_usage",
    "invalid_components",
    "line_too_long",
    "nul_bytes",
    "invalid_otlp",
    "expired_month",
    "future_ts",
    "internal_error",
    "implausible_count",
    "invalid_response_cache",
)

# Bounded set of flags on counted records (the `flag` label of records_flagged_total).
_RECORD_FLAGS = ("no_id", "incomplete_savings", "unknown_usage_shape", "components_exceed_saving", "text_counted",
                 "unpriced_response_cache_hit",
                 "unknown_service_tier")  # a service tier the model's price entry does not list: base rates
# Flags a source mapping sets on the records it makes (the record key ``source_flags``, a list of
# these; other values are ignored): what the source's telemetry lacked for exact dollars, at most one
# ``usage_*`` per record, and LiteLLM's response-cache hits (docs/telemetry.md, "Completeness").
SOURCE_FLAGS = (
    "usage_no_cache_detail",  # no cache counts at all: every input token counted fresh
    "usage_no_cache_ttl",  # cache writes without the 5m/1h split: priced as 5m writes
    "usage_inclusive_assumed",  # whether input includes the cache was decided by convention
    "usage_object_unparsed",  # the full usage object was unreadable: the plain counts were used
    "response_cache_hit",  # a gateway's response cache answered: no provider call (a hit of kind unspecified)
)
FLAGS: tuple[str, ...] = (*_RECORD_FLAGS, *SOURCE_FLAGS)
_SOURCE_FLAGS = frozenset(SOURCE_FLAGS)

EPOCH_MS_THRESHOLD = 1e11  # an epoch number above this is in milliseconds
# 9999-12-30T00:00:00Z: a day short of the end of datetime, so that the month of every
# accepted ts exists in every time zone (a crafted ts must be rejected, not crash MonthOf)
MAX_EPOCH_SECONDS = 253402128000.0


@dataclass(frozen=True, slots=True)
class Rejection:
    reason: str
    detail: str
    ts: float | None = None


class Record(msgspec.Struct, gc=False):
    """A counted request. A msgspec struct (built in C, a few times faster than a dataclass): the hot path
    builds one per line; ``gc=False`` as it holds strings, ints and tuples only, never a cycle."""

    ts: float  # epoch seconds, UTC
    request_id: str | None
    model: str
    provider: str | None
    tenant: str | None
    tokens_before: int | None
    tokens_after: int | None
    count_method: str | None
    would_have_saved: int | None
    components: tuple[tuple[str, int], ...]
    usage: Usage | None
    flags: tuple[str, ...] = ()
    source_dialect: str | None = None
    optimizer: OptimizerCall | None = None
    response_cache: str | None = None  # a hit's kind (RESPONSE_CACHE_KINDS): no provider call was made
    requested_model: str | None = None  # the model the client asked for, when a router chose another
    service_tier: str | None = None  # as the provider bills it (flex, priority, batch...); None: default


class TextCounter(Protocol):
    """Counts prompt text the gateway logged instead of counts (see exporter.tokens.counter)."""

    def count_text(self, text: str, model: str | None = None, provider: str | None = None) -> tuple[int, str]: ...

    def count_messages(
        self, messages: list[Any], model: str | None = None, provider: str | None = None
    ) -> tuple[int, str]: ...


class _Invalid(ValueError):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def parse_ts(value: Any) -> float:
    """RFC 3339 string (any offset; none = UTC) or epoch seconds/milliseconds -> epoch seconds."""
    if isinstance(value, bool) or value is None:
        raise _Invalid("invalid_ts", f"ts has type {type(value).__name__}")
    if isinstance(value, int | float):
        try:
            seconds = float(value)
        except OverflowError:  # an int beyond float range (decoded objects, not JSON lines)
            raise _Invalid("invalid_ts", "ts is out of range") from None
        if not math.isfinite(seconds) or seconds < 0:
            raise _Invalid("invalid_ts", f"ts is out of range: {value!r}")
        if seconds > EPOCH_MS_THRESHOLD:
            seconds /= 1000.0
        if seconds > MAX_EPOCH_SECONDS:
            raise _Invalid("invalid_ts", f"ts is out of range: {value!r}")
        return seconds
    if isinstance(value, str):
        text = value.strip()
        if len(text) > 64:
            raise _Invalid("invalid_ts", "ts string is too long to be a timestamp")
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise _Invalid("invalid_ts", "ts is not an RFC 3339 timestamp") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        seconds = parsed.timestamp()
        if not 0 <= seconds <= MAX_EPOCH_SECONDS:  # same range as epoch numbers
            raise _Invalid("invalid_ts", "ts is out of range")
        return seconds
    raise _Invalid("invalid_ts", f"ts has type {type(value).__name__}")


def _optional_count(obj: Mapping[str, Any], key: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    try:
        return count_value(value, key)
    except UsageError as exc:
        raise _Invalid(exc.reason, exc.detail) from None


def _optional_label(obj: Mapping[str, Any], key: str, where: str = "") -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return value or None
    if type(value) is int and value.bit_length() <= 64:  # str() of a huge int raises
        return str(value)
    raise _Invalid("invalid_field", f"{where}{key} has type {type(value).__name__}, expected a string")


def _service_tier(value: Any, where: str = "") -> str | None:
    """The optional ``service_tier``: a short tier name, never free text (it keys routes and provenance)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _Invalid("invalid_field", f"{where}service_tier has type {type(value).__name__}, expected a string")
    tier = service_tier_of(value)
    if tier is None:
        raise _Invalid("invalid_field", f"{where}service_tier is not a tier name ([a-z0-9_-], at most 32 "
                                        "characters)")
    return tier


def _optimizer(value: Any) -> OptimizerCall | None:
    """The ``optimizer`` extension: ``{"model": ..., "provider": ..., "usage": {native usage block}}``."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise _Invalid("invalid_field", f"optimizer has type {type(value).__name__}, expected an object")
    model = value.get("model")
    if not isinstance(model, str) or not model:
        raise _Invalid("invalid_field", "optimizer.model is missing or not a string")
    provider = _optional_label(value, "provider", "optimizer.")
    raw_usage = value.get("usage")
    if raw_usage is None:
        raise _Invalid("invalid_usage", "optimizer.usage is missing")
    try:
        usage = normalise_usage(raw_usage, "optimizer.usage")
    except UsageError as exc:
        raise _Invalid(exc.reason, exc.detail) from None
    return OptimizerCall(model, provider, usage, _service_tier(value.get("service_tier"), "optimizer."))


def _response_cache(value: Any, flags: list[str]) -> str | None:
    """The hit's kind; the older ``response_cache_hit`` source flag alone is a hit of kind ``unspecified``."""
    if value is None:
        return "unspecified" if "response_cache_hit" in flags else None
    if isinstance(value, str) and value in RESPONSE_CACHE_KINDS:
        return value
    shown = "a string not in exact, semantic, unspecified" if isinstance(value, str) else type(value).__name__
    raise _Invalid("invalid_response_cache", f"response_cache is {shown}")


def _requested_model(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _Invalid("invalid_field", f"requested_model has type {type(value).__name__}, expected a string")
    return value


def _components(value: Any) -> tuple[tuple[str, int], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Invalid("invalid_components", f"components has type {type(value).__name__}, expected a list")
    out: list[tuple[str, int]] = []
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise _Invalid("invalid_components", f"components[{index}] is not an object")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise _Invalid("invalid_components", f"components[{index}].name is missing or not a string")
        try:
            saved = count_value(item.get("tokens_saved"), f"components[{index}].tokens_saved")
        except UsageError as exc:
            raise _Invalid("invalid_components", exc.detail) from None
        out.append((name, saved))
    return tuple(out)


def _count_side(
    obj: Mapping[str, Any], side: str, model: str, provider: str | None, counter: TextCounter | None
) -> tuple[int, str] | None:
    """Count ``text_<side>`` or ``messages_<side>`` when the gateway logged text, not counts."""
    if counter is None:
        return None
    text = obj.get(f"text_{side}")
    if isinstance(text, str):
        return counter.count_text(text, model, provider)
    messages = obj.get(f"messages_{side}")
    if isinstance(messages, list):
        return counter.count_messages(messages, model, provider)
    if text is not None or messages is not None:
        raise _Invalid("invalid_field", f"text_{side}/messages_{side} has the wrong type")
    return None


def parse_object(obj: Any, counter: TextCounter | None = None) -> Record | Rejection:
    """Validate one decoded JSON value as a canonical record v1."""
    if not isinstance(obj, dict):
        return Rejection("not_object", f"a record must be a JSON object, got {type(obj).__name__}")
    ts: float | None = None
    try:
        raw_ts = obj.get("ts")
        if raw_ts is None:
            raise _Invalid("missing_ts", "ts is missing")
        ts = parse_ts(raw_ts)
        model = obj.get("model")
        if model is None or model == "":
            raise _Invalid("missing_model", "model is missing")
        if not isinstance(model, str):
            raise _Invalid("invalid_field", f"model has type {type(model).__name__}, expected a string")
        request_id = _optional_label(obj, "request_id")
        provider = _optional_label(obj, "provider")
        tenant = _optional_label(obj, "tenant")
        count_method = obj.get("count_method")
        if count_method is not None and not isinstance(count_method, str):
            raise _Invalid("invalid_field", f"count_method has type {type(count_method).__name__}")
        tokens_before = _optional_count(obj, "tokens_before")
        tokens_after = _optional_count(obj, "tokens_after")
        would_have_saved = _optional_count(obj, "would_have_saved")
        components = _components(obj.get("components"))
        optimizer = _optimizer(obj.get("optimizer"))
        flags: list[str] = []
        if tokens_before is None and tokens_after is None:
            before = _count_side(obj, "before", model, provider, counter)
            after = _count_side(obj, "after", model, provider, counter)
            if before is not None and after is not None:
                tokens_before, method_before = before
                tokens_after, method_after = after
                # both sides by the same counter; a fallback on one side labels both as estimated
                count_method = method_before if method_before == method_after else "estimate:chars/4"
                flags.append("text_counted")
        usage: Usage | None = None
        raw_usage = obj.get("usage")
        if raw_usage is not None:
            try:
                usage = normalise_usage(raw_usage)
            except UsageError as exc:
                raise _Invalid(exc.reason, exc.detail) from None
            if usage is None:
                flags.append("unknown_usage_shape")
        if request_id is None:
            flags.append("no_id")
        if (tokens_before is None or tokens_after is None) and (
            tokens_before is not None or tokens_after is not None or components
        ):
            flags.append("incomplete_savings")
        source_flags = obj.get("source_flags")
        if isinstance(source_flags, list):
            flags.extend(flag for flag in source_flags if isinstance(flag, str) and flag in _SOURCE_FLAGS)
        dialect = obj.get("source_dialect")
        response_cache = _response_cache(obj.get("response_cache"), flags)
        requested_model = _requested_model(obj.get("requested_model"))
        service_tier = _service_tier(obj.get("service_tier"))
        return Record(
            ts=ts,
            request_id=request_id,
            model=model,
            provider=provider,
            tenant=tenant,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            count_method=count_method,
            would_have_saved=would_have_saved,
            components=components,
            usage=usage,
            flags=tuple(flags),
            source_dialect=dialect if isinstance(dialect, str) else None,
            optimizer=optimizer,
            response_cache=response_cache,
            requested_model=requested_model,
            service_tier=service_tier,
        )
    except _Invalid as exc:
        return Rejection(exc.reason, exc.detail, ts)


_BOM = b"\xef\xbb\xbf"


def parse_line(line: bytes, counter: TextCounter | None = None) -> Record | Rejection | None:
    """One JSON line -> record or rejection; None for a blank line (not a record)."""
    fast = fast_parse(line, Record, parse_ts, MAX_EPOCH_SECONDS)  # None for text to count, and anything unusual
    if fast is not None:
        return fast  # type: ignore[no-any-return]
    return parse_line_reference(line, counter)


def parse_line_reference(line: bytes, counter: TextCounter | None = None) -> Record | Rejection | None:
    """``parse_line`` without the fast path: the reference the fast path is tested against."""
    return decode_json_line(line, lambda obj: parse_object(obj, counter))


def decode_json_line(line: bytes, decode: Callable[[Any], Record | Rejection]) -> Record | Rejection | None:
    """The rules every JSON-lines format shares: a leading BOM is dropped, a blank line is no
    record, undecodable bytes are ``invalid_utf8`` and anything else unparsable ``invalid_json``;
    the decoded value goes to ``decode``."""
    if line.startswith(_BOM):
        line = line[3:]
    if not line.strip():
        return None
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        message = str(exc).lower()
        if "utf-8" in message:
            return Rejection("invalid_utf8", "line is not valid UTF-8")
        if "infinity" not in message:
            return Rejection("invalid_json", f"line is not JSON ({len(line)} bytes)")
        # A number beyond a double's range (1e310) is valid JSON; orjson refuses the whole line, but in a
        # key the record ignores it must not cost the record (the fast path skips such keys unread). The
        # stdlib reads it as inf, which every count and timestamp check then refuses where it matters.
        try:
            obj = json.loads(line, parse_constant=_refuse_constant)
        except (ValueError, RecursionError):
            return Rejection("invalid_json", f"line is not JSON ({len(line)} bytes)")
    return decode(obj)


def _refuse_constant(name: str) -> Any:
    """NaN, Infinity and -Infinity are not JSON (orjson refuses them; so does this fallback)."""
    raise ValueError(f"{name} is not JSON")


__all__ = [
    "FLAGS",
    "MAX_COUNT",
    "REJECTION_REASONS",
    "RESPONSE_CACHE_KINDS",
    "SOURCE_FLAGS",
    "OptimizerCall",
    "Record",
    "Rejection",
    "TextCounter",
    "decode_json_line",
    "parse_line",
    "parse_line_reference",
    "parse_object",
    "parse_ts",
]
