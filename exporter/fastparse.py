"""The fast path of record parsing: one typed msgspec decode for the common line.

``records.parse_line`` is the reference. Most gateway lines are well formed,
so we first decode into a typed struct in C (types, bools-not-ints and count
bounds checked by msgspec) and build the ``Record`` directly. Anything
unusual — a validation error, prompt text to count, an empty model or id —
returns ``None`` and the caller takes the reference path, which produces the
exact rejection reason. A property test holds the two paths equal.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from exporter.usage import MAX_COUNT, UsageError, normalise_usage

Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_COUNT)]


class _Component(msgspec.Struct):
    name: Annotated[str, msgspec.Meta(min_length=1)]
    tokens_saved: Count


class _Line(msgspec.Struct):
    ts: int | float | str
    model: Annotated[str, msgspec.Meta(min_length=1)]
    request_id: str | int | None = None
    provider: str | int | None = None
    tenant: str | int | None = None
    count_method: str | None = None
    tokens_before: Count | None = None
    tokens_after: Count | None = None
    would_have_saved: Count | None = None
    components: list[_Component] | None = None
    usage: dict[str, Any] | None = None
    source_dialect: Any = None
    # Present only to send such lines to the reference path (they need counting).
    text_before: Any = msgspec.UNSET
    text_after: Any = msgspec.UNSET
    messages_before: Any = msgspec.UNSET
    messages_after: Any = msgspec.UNSET


_DECODER = msgspec.json.Decoder(_Line)
_UNSET = msgspec.UNSET


def _label(value: str | int | None) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else str(value)


def fast_parse(line: bytes, make_record: Any, parse_ts: Any) -> Any:
    """A ``Record`` for an ordinary valid line, else None (take the reference path)."""
    try:
        raw = _DECODER.decode(line)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    if (raw.text_before is not _UNSET or raw.text_after is not _UNSET or raw.messages_before is not _UNSET
            or raw.messages_after is not _UNSET):
        return None
    try:
        ts = parse_ts(raw.ts)
    except ValueError:
        return None
    flags: list[str] = []
    usage = None
    if raw.usage is not None:
        try:
            usage = normalise_usage(raw.usage)
        except UsageError:
            return None
        if usage is None:
            flags.append("unknown_usage_shape")
    request_id = _label(raw.request_id)
    if request_id is None:
        flags.append("no_id")
    before, after = raw.tokens_before, raw.tokens_after
    components = tuple((c.name, c.tokens_saved) for c in raw.components) if raw.components else ()
    if (before is None or after is None) and (before is not None or after is not None or components):
        flags.append("incomplete_savings")
    dialect = raw.source_dialect
    return make_record(
        ts=ts,
        request_id=request_id,
        model=raw.model,
        provider=_label(raw.provider),
        tenant=_label(raw.tenant),
        tokens_before=before,
        tokens_after=after,
        count_method=raw.count_method,
        would_have_saved=raw.would_have_saved,
        components=components,
        usage=usage,
        flags=tuple(flags),
        source_dialect=dialect if isinstance(dialect, str) else None,
    )
