"""The protobuf schema the receiver parses trace requests with: OTLP's, cut to what the mapping reads.

Same field numbers and wire types as ``ExportTraceServiceRequest``
(opentelemetry-proto's ``trace.proto``), so every OTLP body parses; the fields
the mapping never reads (span names, kinds, events, links, status, dropped
counts) are kept as unknown fields and never validated or turned into Python
objects. One difference matters for speed: ``attributes`` (a repeated
``KeyValue``: ``key`` = 1, ``value`` = 2) is declared a ``map<string,
AnyValue>``, whose entries have exactly that encoding. Iterating a map gives
the names as plain strings, with no ``KeyValue`` object made per attribute
(most of a span's decode time was those); a value is read only by name, once
the name is wanted, so a prompt's text is still never read into Python.

What the map changes, measured against the full schema by
``tests/sources/otlp/test_fast_mapping.py``: a repeated name keeps its last
value, as the decoder's dict always did; names come in the map's order, not
the span's (nothing the mapping decides depends on their order).
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from opentelemetry.proto.common.v1 import common_pb2

_PACKAGE = "llm_savings_exporter.otlp_read.v1"
_ANY_VALUE = ".opentelemetry.proto.common.v1.AnyValue"
_F = descriptor_pb2.FieldDescriptorProto
_ONE, _MANY = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED


def _attributes_entry() -> descriptor_pb2.DescriptorProto:
    """``map<string, AnyValue>``'s entry message: OTLP's ``KeyValue`` on the wire."""
    entry = descriptor_pb2.DescriptorProto(name="AttributesEntry")
    entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_ONE)
    entry.field.add(name="value", number=2, type=_F.TYPE_MESSAGE, label=_ONE, type_name=_ANY_VALUE)
    entry.options.map_entry = True
    return entry


# (message, [(field, number, type, repeated, message type)], has an attributes map at this number)
_MESSAGES: tuple[tuple[str, tuple[tuple[str, int, int, bool, str], ...], int | None], ...] = (
    ("Request", (("resource_spans", 1, _F.TYPE_MESSAGE, True, "ResourceSpans"),), None),
    ("ResourceSpans", (("resource", 1, _F.TYPE_MESSAGE, False, "Resource"),
                       ("scope_spans", 2, _F.TYPE_MESSAGE, True, "ScopeSpans")), None),
    ("Resource", (), 1),
    ("ScopeSpans", (("scope", 1, _F.TYPE_MESSAGE, False, "Scope"),
                    ("spans", 2, _F.TYPE_MESSAGE, True, "Span")), None),
    ("Scope", (("name", 1, _F.TYPE_STRING, False, ""),), None),
    ("Span", (("trace_id", 1, _F.TYPE_BYTES, False, ""),
              ("span_id", 2, _F.TYPE_BYTES, False, ""),
              ("parent_span_id", 4, _F.TYPE_BYTES, False, ""),
              ("start_time_unix_nano", 7, _F.TYPE_FIXED64, False, ""),
              ("end_time_unix_nano", 8, _F.TYPE_FIXED64, False, "")), 9),
)


def _file() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(
        name="llm_savings_exporter/otlp_read.proto",
        package=_PACKAGE,
        syntax="proto3",
        dependency=[common_pb2.DESCRIPTOR.name],
    )
    for name, fields, attributes_at in _MESSAGES:
        message = file.message_type.add(name=name)
        for field, number, kind, repeated, type_name in fields:
            added = message.field.add(name=field, number=number, type=kind, label=_MANY if repeated else _ONE)
            if type_name:
                added.type_name = f".{_PACKAGE}.{type_name}"
        if attributes_at is not None:
            message.nested_type.add().CopyFrom(_attributes_entry())
            message.field.add(name="attributes", number=attributes_at, type=_F.TYPE_MESSAGE, label=_MANY,
                              type_name=f".{_PACKAGE}.{name}.AttributesEntry")
    return file


def _request_class() -> Any:
    """The request message class, in a pool of its own (nothing added to protobuf's default pool)."""
    pool = descriptor_pool.DescriptorPool()
    common = descriptor_pb2.FileDescriptorProto()
    common_pb2.DESCRIPTOR.CopyToProto(common)
    pool.Add(common)
    pool.Add(_file())
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.Request"))


TraceRequest: Any = _request_class()

# The wire type of each field type (descriptor.proto's FieldDescriptorProto.Type).
_WIRE = {_F.TYPE_DOUBLE: 1, _F.TYPE_FLOAT: 5, _F.TYPE_INT64: 0, _F.TYPE_UINT64: 0, _F.TYPE_INT32: 0,
         _F.TYPE_FIXED64: 1, _F.TYPE_FIXED32: 5, _F.TYPE_BOOL: 0, _F.TYPE_STRING: 2, _F.TYPE_MESSAGE: 2,
         _F.TYPE_BYTES: 2, _F.TYPE_UINT32: 0, _F.TYPE_ENUM: 0, _F.TYPE_SFIXED32: 5, _F.TYPE_SFIXED64: 1,
         _F.TYPE_SINT32: 0, _F.TYPE_SINT64: 0}
F_MESSAGE, F_STRING, F_OTHER = 1, 2, 3  # what a field holds, for the C walk (_views.c)

SchemaTable = tuple[tuple[tuple[int, int, int, int], ...], ...]


def schema_table(root: Any = None) -> tuple[SchemaTable, tuple[tuple[int, int, str], ...]]:
    """The read schema for the C walk's validation: per message (the request first), its fields as
    (number, wire type, what it holds, the message's index); and AnyValue's oneof members other than
    the four scalars as (number, wire type, name). ``ValueError`` for a schema the walk cannot check
    (a group, or a repeated scalar that could come packed): the decoder then keeps to upb."""
    request = root or TraceRequest.DESCRIPTOR
    order: list[Any] = [request]
    index = {request.full_name: 0}
    table: list[tuple[tuple[int, int, int, int], ...]] = []
    any_value = None
    while len(table) < len(order):
        message = order[len(table)]
        if message.full_name == _ANY_VALUE.lstrip("."):
            any_value = message
        fields = []
        for field in message.fields:
            if field.type not in _WIRE:
                raise ValueError(f"{message.full_name}.{field.name}: a field type the C walk does not read")
            if field.is_repeated and field.type not in (_F.TYPE_MESSAGE, _F.TYPE_STRING, _F.TYPE_BYTES):
                raise ValueError(f"{message.full_name}.{field.name}: a repeated scalar (it may come packed)")
            child = 0
            if field.type == _F.TYPE_MESSAGE:
                name = field.message_type.full_name
                if name not in index:
                    index[name] = len(order)
                    order.append(field.message_type)
                child = index[name]
                kind = F_MESSAGE
            else:
                kind = F_STRING if field.type == _F.TYPE_STRING else F_OTHER
            fields.append((field.number, _WIRE[field.type], kind, child))
        table.append(tuple(fields))
    if any_value is None:
        raise ValueError("the schema has no AnyValue")
    others = tuple((f.number, _WIRE[f.type], f.name) for f in any_value.fields
                   if f.number > 4 and f.containing_oneof is not None)
    return tuple(table), others


__all__ = ["TraceRequest", "schema_table"]
