"""OTLP trace export requests -> ``SpanView`` values: the protobuf and OTLP/JSON decoders.

Each decoder keeps only the attributes the mapping reads
(``MappingOptions.wanted``), never prompt or completion text. A request whose
envelope is not an export request raises ``UndecodableRequest`` (HTTP 400);
in OTLP/JSON a malformed span inside a good envelope is rejected alone
(``invalid_otlp``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
from google.protobuf.message import DecodeError

from exporter.sources.otlp.attributes import REJECT_OTLP, BadValue, Unsupported
from exporter.sources.otlp.pb_schema import TraceRequest, schema_table
from exporter.sources.otlp.spans import DEFAULT_OPTIONS, MAX_REMEMBERED_NAME, MappingOptions, Rejected, SpanView

try:  # the C walk of the wire (_views.c), built when the install had a C compiler
    from exporter.sources.otlp import _views as _wire

    _wire.configure(*schema_table())
except (ImportError, ValueError):  # an install without a C compiler (or a schema the walk cannot check)
    _wire = None  # type: ignore[assignment]

# Which reads a protobuf span's views: "c" (the wire, in C) or "python" (upb's messages, below).
PROTOBUF_VIEWS = "c" if _wire is not None else "python"


class UndecodableRequest(ValueError):
    """The body is not an OTLP trace export request (HTTP 400, not retryable)."""


# --- protobuf ------------------------------------------------------------------


def _pb_value(value: Any) -> Any:
    """An AnyValue's scalar (``Unsupported`` for an array, kvlist or bytes; None when unset)."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        return value.double_value
    if kind is None:
        return None
    return Unsupported(kind)


def parse_protobuf(body: bytes) -> Any:
    """Decode an ``application/x-protobuf`` body with the read schema (``pb_schema``);
    ``UndecodableRequest`` on failure."""
    request = TraceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, ValueError, RuntimeError) as exc:  # upb raises DecodeError; be broad
        raise UndecodableRequest(
            f"not an ExportTraceServiceRequest: {type(exc).__name__}"
        ) from None
    return request


def _map_attributes(attributes: Any, options: MappingOptions) -> dict[str, Any]:
    """The wanted names of an attributes map (``pb_schema``), each value read once its name is wanted."""
    out: dict[str, Any] = {}
    decisions = options._decisions
    for key in attributes:
        keep = decisions.get(key)
        if keep is None:
            keep = options.wanted(key)
        if keep:
            out[key] = _pb_value(attributes[key])
    return out


_MAX_KINDS = 4096  # names whose value kind is remembered, per options (clients choose the names: each
# at most MAX_REMEMBERED_NAME long)


def _kinds(options: MappingOptions) -> dict[str, str]:
    """Per wanted name, the kind its string or int value had last (``string_value``/``int_value``).

    The decode reads that member first: a value that is not the member's default (0, "") proves
    the kind, since an unset member of a oneof reads as its default, so one read replaces
    ``WhichOneof`` and a read. A default or another kind falls back to ``WhichOneof``.
    """
    kinds = options._memory.get("value_kinds")
    if kinds is None:
        kinds = options._memory.setdefault("value_kinds", {})
    return kinds  # type: ignore[no-any-return]


def spans_from_protobuf(request: Any, options: MappingOptions | None = None) -> list[SpanView]:
    """Every span of a request ``parse_protobuf`` parsed, its wanted attributes read off the upb messages.

    The attribute loop is ``_map_attributes`` written inline (one Python call per span, not one per
    attribute): a name is looked up in the options' decisions before its value is touched, so
    an unwanted value (a prompt) is never read into a Python object.
    """
    opts = options or DEFAULT_OPTIONS
    decisions = opts._decisions
    wanted = opts.wanted
    kinds = _kinds(opts)
    views: list[SpanView] = []
    append = views.append
    for resource_spans in request.resource_spans:
        resource = _map_attributes(resource_spans.resource.attributes, opts)
        for scope_spans in resource_spans.scope_spans:
            scope_name = scope_spans.scope.name
            for span in scope_spans.spans:
                attrs: dict[str, Any] = {}
                attributes = span.attributes
                for key in attributes:
                    keep = decisions.get(key)
                    if keep is None:
                        keep = wanted(key)
                    if keep:
                        value = attributes[key]
                        kind = kinds.get(key)
                        if kind is not None:
                            got = getattr(value, kind)
                            if got:  # not the default: the value IS of this kind (one oneof member is set)
                                attrs[key] = got
                                continue
                        kind = value.WhichOneof("value")
                        if kind == "string_value":
                            attrs[key] = value.string_value
                        elif kind == "int_value":
                            attrs[key] = value.int_value
                        elif kind is None:
                            attrs[key] = None
                            continue
                        else:
                            attrs[key] = _pb_value(value)
                            continue
                        if len(kinds) < _MAX_KINDS and len(key) <= MAX_REMEMBERED_NAME:
                            kinds[key] = kind
                append(
                    SpanView(
                        attrs,
                        resource,
                        scope_name,
                        span.trace_id.hex(),
                        span.span_id.hex(),
                        span.start_time_unix_nano,
                        span.end_time_unix_nano,
                        span.parent_span_id.hex(),
                    )
                )
    return views


def views_of_protobuf(
    body: bytes, options: MappingOptions | None = None, *, accelerated: bool = True
) -> list[SpanView]:
    """A protobuf body's span views; ``UndecodableRequest`` when it is not a trace export request.

    With the C walk built (``PROTOBUF_VIEWS``), the body is checked and its views read
    off the wire in C: it refuses exactly the bodies upb refuses and gives the views
    ``spans_from_protobuf`` reads from upb's message, at about a third of their cost.
    ``accelerated=False`` (or no C walk) parses with upb and reads the message.
    """
    opts = options or DEFAULT_OPTIONS
    if accelerated and _wire is not None:
        try:
            _wire.validate(body)
        except ValueError:
            raise UndecodableRequest(f"not an ExportTraceServiceRequest: {DecodeError.__name__}") from None
        try:
            views: list[SpanView] = _wire.views(body, opts._decisions, opts.wanted, SpanView, Unsupported)
            return views
        except ValueError:  # never seen on a body validate() accepted; upb's reading has the answer anyway
            pass
    return spans_from_protobuf(parse_protobuf(body), opts)


# --- OTLP/JSON -------------------------------------------------------------------
# OTLP/JSON differs from protobuf's canonical JSON: ids are hex strings and
# 64-bit integers (intValue, *TimeUnixNano) may be JSON strings. Keys are
# lowerCamelCase; the protobuf field names (snake_case) are accepted too, as
# the OTLP spec asks receivers to. Objects are checked as ``dict`` (what a JSON
# decoder returns), which is much faster than an ABC check per attribute.


def load_json(body: bytes) -> Any:
    """Parse an OTLP/JSON body; ``UndecodableRequest`` when it is not JSON."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        raise UndecodableRequest("the body is not JSON") from None


def _j(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    if value is None:
        value = obj.get(snake)
    return value


def _json_int(value: Any) -> int:
    if value is None:
        return 0
    if type(value) is int:
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 20:
        return int(value)
    raise BadValue(REJECT_OTLP, "a 64-bit integer field is neither a number nor a decimal string")


def _json_id(value: Any, size: int) -> str:
    """Hex per OTLP/JSON (the common case, first); base64 (protobuf canonical JSON) tolerated."""
    if isinstance(value, str) and len(value) == size * 2:
        # bytes.fromhex takes ASCII hex digits only, and a string of this length with whitespace in it
        # gives fewer than ``size`` bytes: it accepts exactly the hex ids a [0-9a-fA-F] pattern does
        try:
            raw = bytes.fromhex(value)
        except ValueError:
            raw = b""
        if len(raw) == size:
            return raw.hex()
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise BadValue(REJECT_OTLP, "a span id is not a string")
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise BadValue(REJECT_OTLP, "a span id is neither hex nor base64") from None
    if len(raw) != size:
        raise BadValue(REJECT_OTLP, "a span id has the wrong length")
    return raw.hex()


def _json_value(value: Any) -> Any:
    if not isinstance(value, dict):
        return Unsupported("malformed")
    if "stringValue" in value:
        v = value["stringValue"]
        return v if isinstance(v, str) else Unsupported("malformed")
    if "intValue" in value:
        v = value["intValue"]
        if type(v) is int:
            return v
        if isinstance(v, str):
            text = v[1:] if v.startswith("-") else v
            if text.isascii() and text.isdigit() and len(text) <= 19:
                return int(v)
        return Unsupported("malformed")
    if "boolValue" in value:
        v = value["boolValue"]
        return v if isinstance(v, bool) else Unsupported("malformed")
    if "doubleValue" in value:
        v = value["doubleValue"]
        return (
            float(v)
            if isinstance(v, int | float) and not isinstance(v, bool)
            else Unsupported("malformed")
        )
    for key in ("arrayValue", "kvlistValue", "bytesValue"):
        if key in value:
            return Unsupported(key)
    return None


def _json_attrs(kvs: Any, options: MappingOptions) -> dict[str, Any]:
    if kvs is None:
        return {}
    if not isinstance(kvs, list):
        raise BadValue(REJECT_OTLP, "attributes is not a list")
    out: dict[str, Any] = {}
    decisions = options._decisions
    for kv in kvs:
        if type(kv) is not dict:
            raise BadValue(REJECT_OTLP, "an attribute is not an object")
        key = kv.get("key")
        if type(key) is not str:
            raise BadValue(REJECT_OTLP, "an attribute key is not a string")
        keep = decisions.get(key)
        if keep is None:
            keep = options.wanted(key)
        if keep:
            value = kv.get("value")
            if type(value) is dict:  # the common cases inline: a string, a decimal-string or JSON int
                text = value.get("stringValue")
                if type(text) is str:
                    out[key] = text
                    continue
                if text is None and "stringValue" not in value:
                    number = value.get("intValue")
                    if type(number) is int:
                        out[key] = number
                        continue
                    if type(number) is str and number.isdigit() and number.isascii() and len(number) <= 19:
                        out[key] = int(number)
                        continue
            out[key] = _json_value(value)
    return out


def _json_list(obj: Mapping[str, Any], camel: str, snake: str) -> list[Any]:
    value = _j(obj, camel, snake)
    if value is None:
        return []
    if not isinstance(value, list):
        raise UndecodableRequest(f"{camel} is not a list")
    return value


def spans_from_json(doc: Any, options: MappingOptions) -> Iterator[SpanView | Rejected]:
    """A decoded OTLP/JSON ExportTraceServiceRequest -> each span's view, or its rejection.

    The envelope (resourceSpans/scopeSpans lists) must be well formed, else
    ``UndecodableRequest`` (raised when the iteration reaches the bad part).
    """
    if not isinstance(doc, dict):
        raise UndecodableRequest("the body is not a JSON object")
    for resource_spans in _json_list(doc, "resourceSpans", "resource_spans"):
        if not isinstance(resource_spans, dict):
            raise UndecodableRequest("a resourceSpans entry is not an object")
        resource_obj = resource_spans.get("resource") or {}
        if not isinstance(resource_obj, dict):
            raise UndecodableRequest("resource is not an object")
        scope_list = _json_list(resource_spans, "scopeSpans", "scope_spans") or _json_list(
            resource_spans, "instrumentationLibrarySpans", "instrumentation_library_spans"
        )
        try:
            resource = _json_attrs(resource_obj.get("attributes"), options)
        except BadValue:
            resource = None  # every span under it is rejected below
        for scope_spans in scope_list:
            if not isinstance(scope_spans, dict):
                raise UndecodableRequest("a scopeSpans entry is not an object")
            scope = scope_spans.get("scope") or scope_spans.get("instrumentationLibrary") or {}
            scope_name = scope.get("name") if isinstance(scope, dict) else None
            for span in _json_list(scope_spans, "spans", "spans"):
                yield _json_span(
                    span, resource, scope_name if isinstance(scope_name, str) else "", options
                )


def _json_span(
    span: Any, resource: dict[str, Any] | None, scope_name: str, options: MappingOptions
) -> SpanView | Rejected:
    try:
        if not isinstance(span, dict) or resource is None:
            raise BadValue(REJECT_OTLP, "a span is not an object of the OTLP shape")
        get = span.get  # each field by its lowerCamelCase name, else the protobuf one (_j inline)
        attrs = _json_attrs(get("attributes"), options)
        trace_id = get("traceId")
        trace_id = _json_id(get("trace_id") if trace_id is None else trace_id, 16)
        span_id = get("spanId")
        span_id = _json_id(get("span_id") if span_id is None else span_id, 8)
        start = get("startTimeUnixNano")
        start = get("start_time_unix_nano") if start is None else start
        start_ns = start if type(start) is int else _json_int(start)
        end = get("endTimeUnixNano")
        end = get("end_time_unix_nano") if end is None else end
        end_ns = end if type(end) is int else _json_int(end)
        parent = get("parentSpanId")
        parent_id = _json_id(get("parent_span_id") if parent is None else parent, 8)
        return SpanView(attrs, resource, scope_name, trace_id, span_id, start_ns, end_ns, parent_id)
    except BadValue as bad:
        return Rejected(bad.reason, bad.detail)


__all__ = [
    "PROTOBUF_VIEWS",
    "UndecodableRequest",
    "load_json",
    "parse_protobuf",
    "spans_from_json",
    "spans_from_protobuf",
    "views_of_protobuf",
]
