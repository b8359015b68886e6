"""OTLP/JSON's fast path: one typed msgspec decode of an export request as the SDKs and the Collector write it.

The general decoder (``decode.load_json`` + ``decode.spans_from_json``) builds
a dict for every object of the body, prompt attributes and span events
included, then reads the few it needs. Here msgspec decodes the body in C
straight into structs the garbage collector does not track (``gc=False``):
an attribute's value is kept as raw JSON (``msgspec.Raw``, its text checked,
nothing built) and decoded only when the mapping wants its key, and the span
fields the mapping never reads (name, status, events, links) are skipped the
same way.

The fast path takes only what it reads exactly as the general decoder does:
lowerCamelCase names (every field of the OTLP/JSON messages is declared, and
an unknown one - a snake_case or legacy name, a field of a later OTLP
version - refuses the fast path), values of the expected JSON types, integers
orjson keeps as integers, a body of valid UTF-8 (the raw values are not
decoded, so it is checked apart). Anything else returns ``None`` and the
caller takes the general decoder, so both give the same views, rejections and
errors (``tests/sources/otlp/test_json_typed.py`` holds them equal). One
difference is by choice: a number beyond a double's range inside a value the
mapping never reads (a prompt's JSON, an event) refuses the whole request in
orjson, here it is never parsed and the request is read; so is a value nested
deeper than orjson's 1,024 levels (and less deep than msgspec's limit).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from exporter.sources.otlp.attributes import BadValue, Unsupported
from exporter.sources.otlp.decode import _json_id, _json_int
from exporter.sources.otlp.spans import MappingOptions, Rejected, SpanView

# orjson's integers: beyond them it returns a float, which the general decoder refuses as a count
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 64) - 1
_NOTHING = Raw()  # a field absent from the body


class _AnyValue(Struct, gc=False, forbid_unknown_fields=True):
    stringValue: str | UnsetType = UNSET
    intValue: int | str | UnsetType = UNSET
    boolValue: bool | UnsetType = UNSET
    doubleValue: float | UnsetType = UNSET
    arrayValue: Raw = _NOTHING
    kvlistValue: Raw = _NOTHING
    bytesValue: Raw = _NOTHING


class _KeyValue(Struct, gc=False, forbid_unknown_fields=True):
    key: str
    value: Raw = _NOTHING


class _Scope(Struct, gc=False, forbid_unknown_fields=True):
    name: str | None = None
    version: Raw = _NOTHING
    attributes: Raw = _NOTHING
    droppedAttributesCount: Raw = _NOTHING


class _Span(Struct, gc=False, forbid_unknown_fields=True):
    traceId: str | None = None
    spanId: str | None = None
    parentSpanId: str | None = None
    startTimeUnixNano: int | str | None = None
    endTimeUnixNano: int | str | None = None
    attributes: list[_KeyValue] | None = None
    traceState: Raw = _NOTHING
    flags: Raw = _NOTHING
    name: Raw = _NOTHING
    kind: Raw = _NOTHING
    droppedAttributesCount: Raw = _NOTHING
    events: Raw = _NOTHING
    droppedEventsCount: Raw = _NOTHING
    links: Raw = _NOTHING
    droppedLinksCount: Raw = _NOTHING
    status: Raw = _NOTHING


class _ScopeSpans(Struct, gc=False, forbid_unknown_fields=True):
    scope: _Scope | None = None
    spans: list[_Span] | None = None
    schemaUrl: Raw = _NOTHING


class _Resource(Struct, gc=False, forbid_unknown_fields=True):
    attributes: list[_KeyValue] | None = None
    droppedAttributesCount: Raw = _NOTHING
    entityRefs: Raw = _NOTHING


class _ResourceSpans(Struct, gc=False, forbid_unknown_fields=True):
    resource: _Resource | None = None
    scopeSpans: list[_ScopeSpans] | None = None
    schemaUrl: Raw = _NOTHING


class _Request(Struct, gc=False, forbid_unknown_fields=True):
    resourceSpans: list[_ResourceSpans] | None = None


_REQUEST = msgspec.json.Decoder(_Request)
_VALUE = msgspec.json.Decoder(_AnyValue)


class _General(Exception):
    """This body is for the general decoder."""


def _value(raw: Raw) -> Any:
    """A wanted attribute's value, as ``decode._json_value`` reads it from the dict."""
    if not raw:
        return Unsupported("malformed")  # no "value": the general decoder's kv.get("value") is None
    try:
        value = _VALUE.decode(raw)
    except msgspec.ValidationError:
        raise _General from None  # null, a wrong type, an unknown field: the general decoder says
    text = value.stringValue
    if text is not UNSET:
        return text
    number = value.intValue
    if number is not UNSET:
        if isinstance(number, int):
            if _INT_MIN <= number <= _INT_MAX:
                return number
            raise _General  # orjson makes it a float
        digits = number[1:] if number.startswith("-") else number
        if digits.isascii() and digits.isdigit() and len(digits) <= 19:
            return int(number)
        return Unsupported("malformed")
    if value.boolValue is not UNSET:
        return value.boolValue
    if value.doubleValue is not UNSET:
        return value.doubleValue
    if value.arrayValue:
        return Unsupported("arrayValue")
    if value.kvlistValue:
        return Unsupported("kvlistValue")
    if value.bytesValue:
        return Unsupported("bytesValue")
    return None


def _attrs(kvs: list[_KeyValue] | None, options: MappingOptions) -> dict[str, Any]:
    """The wanted names of a span's or resource's attributes, each value decoded only once its name is wanted."""
    out: dict[str, Any] = {}
    if not kvs:
        return out
    decisions = options._decisions
    for kv in kvs:
        key = kv.key
        keep = decisions.get(key)
        if keep is None:
            keep = options.wanted(key)
        if keep:
            out[key] = _value(kv.value)
    return out


def _time(value: int | str | None) -> int:
    if isinstance(value, int):
        if _INT_MIN <= value <= _INT_MAX:
            return value
        raise _General
    return _json_int(value)  # None -> 0; a decimal string; else BadValue


def typed_spans(body: bytes, options: MappingOptions) -> list[SpanView | Rejected] | None:
    """Every span of an OTLP/JSON body read by the typed decode, in order; None: take the general decoder."""
    try:
        request = _REQUEST.decode(body)
        if not body.isascii():
            body.decode("utf-8")  # the raw values are not decoded: orjson refuses invalid UTF-8 anywhere
        return _views(request, options)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError, _General):  # ValidationError is a DecodeError
        return None


def _views(request: _Request, options: MappingOptions) -> list[SpanView | Rejected]:
    views: list[SpanView | Rejected] = []
    append = views.append
    for resource_spans in request.resourceSpans or ():
        resource_obj = resource_spans.resource
        resource = _attrs(resource_obj.attributes, options) if resource_obj is not None else {}
        scope_list = resource_spans.scopeSpans
        for scope_spans in scope_list or ():
            scope = scope_spans.scope
            scope_name = (scope.name or "") if scope is not None else ""
            for span in scope_spans.spans or ():
                try:
                    append(SpanView(
                        _attrs(span.attributes, options),
                        resource,
                        scope_name,
                        _json_id(span.traceId, 16),
                        _json_id(span.spanId, 8),
                        _time(span.startTimeUnixNano),
                        _time(span.endTimeUnixNano),
                        _json_id(span.parentSpanId, 8),
                    ))
                except BadValue as bad:
                    append(Rejected(bad.reason, bad.detail))
    return views


__all__ = ["typed_spans"]
