"""The C walk of the protobuf wire (``_views.c``) gives the views the upb path gives, on every body upb accepts.

``decode.views_of_protobuf`` parses each body with upb first (the validation)
and then reads its span views off the wire in C. These tests compare the C
views with ``spans_from_protobuf``'s, read from upb's message, on:
- every captured protobuf request (tests/fixtures/dialects), the real instrumentations' bytes;
- bodies written field by field here, with protobuf's corners: fields in any order,
  singular fields and messages repeated (last value wins, messages merge), map
  entries repeated or without a key or value, a oneof set twice, unknown fields of
  every wire type (groups too), a known field number under a foreign wire type,
  negative and 10-byte varints, ids of any length;
- those bodies with bytes flipped, cut or dropped: whatever upb still accepts.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.sources.otlp import decode
from exporter.sources.otlp.attributes import COMMON_KEYS, Unsupported
from exporter.sources.otlp.decode import (
    PROTOBUF_VIEWS,
    UndecodableRequest,
    parse_protobuf,
    spans_from_protobuf,
    views_of_protobuf,
)
from exporter.sources.otlp.dialects import DIALECT_KEYS
from exporter.sources.otlp.mapping import map_protobuf, map_spans
from exporter.sources.otlp.spans import MAX_REMEMBERED_NAME, MappingOptions, SpanView
from tests.live.spans import FIXTURES, request_bytes

NAMES = [*sorted(COMMON_KEYS | DIALECT_KEYS), "gen_ai.prompt", "llm.input_messages.0.message.content", ""]


def _plain(value: Any) -> Any:
    return ("unsupported", value.kind) if isinstance(value, Unsupported) else (type(value).__name__, value)


def _fields(view: SpanView) -> tuple[Any, ...]:
    """A view as comparable values (an ``Unsupported`` compared by its kind; float NaN by its text)."""
    attrs = {key: repr(_plain(value)) for key, value in view.attrs.items()}
    resource = {key: repr(_plain(value)) for key, value in view.resource.items()}
    return (attrs, resource, view.scope_name, view.trace_id, view.span_id, view.start_ns, view.end_ns,
            view.parent_span_id)


def _both(body: bytes, options: MappingOptions | None = None) -> tuple[list[Any], list[Any]] | None:
    """(upb path, C path) of a body; None when upb refuses it, and then the C walk must refuse it too."""
    opts = options or MappingOptions()
    assert decode._wire is not None
    try:
        reference = spans_from_protobuf(parse_protobuf(body), opts)
    except UndecodableRequest as refused:
        with pytest.raises(ValueError):
            decode._wire.validate(body)
        with pytest.raises(UndecodableRequest) as also:
            views_of_protobuf(body, opts)
        assert str(also.value) == str(refused)  # the same 400 text either way
        return None
    decode._wire.validate(body)  # accepted: what upb parses, the walk accepts
    walked = decode._wire.views(body, opts._decisions, opts.wanted, SpanView, Unsupported)
    assert all(type(view) is SpanView for view in walked)
    return [_fields(v) for v in reference], [_fields(v) for v in walked]


def test_the_c_walk_is_built_here() -> None:
    """The test environment installs with a C compiler: the C walk must be the one in use."""
    assert PROTOBUF_VIEWS == "c"


CAPTURED = sorted(
    (path.parent.name, path.stem, index)
    for path in FIXTURES.glob("*/*.json")
    for index, request in enumerate(__import__("json").loads(path.read_text()).get("requests", []))
    if "protobuf" in request.get("content_type", "")
) if FIXTURES.is_dir() else []


def test_captured_requests_are_there() -> None:
    assert len(CAPTURED) >= 50


@pytest.mark.parametrize(("dialect", "case", "index"), CAPTURED)
def test_captured_request_views_are_the_same(dialect: str, case: str, index: int) -> None:
    import json

    request = json.loads((FIXTURES / dialect / f"{case}.json").read_text())["requests"][index]
    both = _both(request_bytes(request))
    assert both is not None
    reference, walked = both
    assert walked == reference
    assert reference, "a captured request with no span"


# --- bodies written field by field ------------------------------------------------


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _padded(value: int, extra: int) -> bytes:
    """``value`` as a varint written in ``extra`` more bytes than it needs (continuation bits, zeros)."""
    short = bytearray(_varint(value))
    if extra:
        short[-1] |= 0x80
        short += b"\x80" * (extra - 1) + b"\x00"
    return bytes(short)


def _tag(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _len(field: int, payload: bytes) -> bytes:
    return _tag(field, 2) + _varint(len(payload)) + payload


texts = st.text(st.characters(codec="utf-8"), max_size=12)
unknown = st.one_of(
    st.builds(lambda f, v: _tag(f, 0) + _varint(v), st.integers(10, 40), st.integers(0, 2**64 - 1)),
    st.builds(lambda f, v: _tag(f, 1) + v, st.integers(10, 40), st.binary(min_size=8, max_size=8)),
    st.builds(lambda f, v: _tag(f, 5) + v, st.integers(10, 40), st.binary(min_size=4, max_size=4)),
    st.builds(lambda f, v: _len(f, v), st.integers(10, 40), st.binary(max_size=8)),
    st.builds(lambda f, v: _tag(f, 3) + _tag(1, 0) + _varint(v) + _tag(f, 4), st.integers(10, 40),
              st.integers(0, 300)),
)


def _any_value_field() -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.builds(lambda t: _len(1, t.encode()), texts),
        st.builds(lambda v: _tag(2, 0) + _varint(v), st.integers(0, 3)),
        st.builds(lambda v: _tag(3, 0) + _varint(v), st.integers(-(2**63), 2**63 - 1)),
        st.builds(lambda v: _tag(3, 0) + _varint(v) , st.integers(2**63, 2**64 - 1)),
        st.builds(lambda v: _tag(4, 1) + struct.pack("<d", v), st.floats(allow_nan=False)),
        st.builds(lambda: _len(5, _len(1, _len(1, b"x")))),  # an array of one string
        st.builds(lambda: _len(6, _len(1, _len(1, b"k")))),  # a kvlist of one key
        st.builds(lambda v: _len(7, v), st.binary(max_size=4)),
        st.builds(lambda: _tag(1, 0) + _varint(5)),  # string_value's number under a varint: unknown
        st.builds(lambda v: _tag(8, 0) + _varint(v), st.integers(0, 2**32)),  # string_value_strindex
        unknown,
    )


def _message(
    main: st.SearchStrategy[bytes], extra: st.SearchStrategy[bytes], most: int = 3
) -> st.SearchStrategy[bytes]:
    """A message of 1-``most`` ``main`` fields and 0-2 ``extra`` ones, in any order."""
    return st.tuples(st.lists(main, min_size=1, max_size=most), st.lists(extra, max_size=2)).flatmap(
        lambda parts: st.permutations(parts[0] + parts[1])
    ).map(b"".join)


key = st.builds(lambda name: _len(1, name.encode()), st.sampled_from(NAMES))
value = st.builds(lambda value: _len(2, value), _message(_any_value_field(), unknown, 2))
entry = st.one_of(
    st.builds(lambda k, v: k + v, key, value),  # the common entry
    _message(st.one_of(key, value), unknown, 3),  # any mix: repeated, missing key or value, unknown fields
)
ids = st.binary(max_size=17)
span = _message(
    st.builds(lambda v: _len(9, v), entry),
    st.one_of(
        st.builds(lambda v: _len(1, v), ids),
        st.builds(lambda v: _len(2, v), ids),
        st.builds(lambda v: _len(4, v), ids),
        st.builds(lambda v: _tag(7, 1) + struct.pack("<Q", v), st.integers(0, 2**64 - 1)),
        st.builds(lambda v: _tag(8, 1) + struct.pack("<Q", v), st.integers(0, 2**64 - 1)),
        st.builds(lambda v: _tag(8, 0) + _varint(v), st.integers(0, 2**20)),  # foreign wire type: unknown
        st.builds(lambda v: _len(5, v.encode()), texts),  # the span's name: not read
        unknown,
    ),
    6,
)
scope = _message(st.builds(lambda t: _len(1, t.encode()), texts), unknown, 2)
scope_spans = _message(
    st.builds(lambda v: _len(2, v), span), st.one_of(st.builds(lambda v: _len(1, v), scope), unknown)
)
resource = _message(st.builds(lambda v: _len(1, v), entry), unknown)
resource_spans = _message(
    st.builds(lambda v: _len(2, v), scope_spans), st.one_of(st.builds(lambda v: _len(1, v), resource), unknown), 2
)
bodies = _message(st.builds(lambda v: _len(1, v), resource_spans), unknown, 2)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies)
def test_written_bodies_give_the_same_views(body: bytes) -> None:
    both = _both(body)
    assert both is not None, "every written body is well formed"
    reference, walked = both
    assert walked == reference


# Anything the wire can hold: known numbers under any wire type, bad UTF-8, ends of groups anywhere.
raw_field = st.one_of(
    st.builds(lambda f, w, v: _tag(f, w) + v, st.integers(1, 12), st.integers(0, 7), st.binary(max_size=10)),
    st.builds(lambda f, v: _len(f, v), st.integers(1, 12),
              st.sampled_from([b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", "é".encode(), b"ok"])),
    st.just(b"\xff\xff\xff\xff\xff\x0f"),  # a tag longer than 5 bytes
    # a length written in more bytes than it needs (upb reads at most 5)
    st.builds(lambda f, v, pad: _tag(f, 2) + _padded(len(v), pad) + v, st.integers(1, 12), st.binary(max_size=4),
              st.integers(0, 6)),
    st.builds(lambda f, v: _tag(f, 3) + v + _tag(f, 4), st.integers(1, 20),
              st.sampled_from([b"\x00\x01", b"\x03\x04", b"\x01" + b"\xff" * 8])),  # field 0 inside a group
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.recursive(st.lists(raw_field, max_size=4).map(b"".join),
                    lambda inner: st.builds(lambda f, v, tail: _len(f, v) + tail, st.integers(1, 9), inner,
                                            st.lists(raw_field, max_size=2).map(b"".join)), max_leaves=12))
def test_raw_bodies_are_refused_exactly_when_upb_refuses_them(body: bytes) -> None:
    both = _both(body)
    if both is not None:
        assert both[1] == both[0]


def _one_span(*fields: bytes) -> bytes:
    """A request of one span (in one scope, one resource) made of ``fields``."""
    return _len(1, _len(2, _len(2, b"".join(fields))))


def _span_attribute(entry: bytes) -> bytes:
    return _one_span(_len(9, entry))


def _nested_array(depth: int) -> bytes:
    value = _len(1, b"x")
    for _ in range(depth):
        value = _len(5, _len(1, value))  # ArrayValue -> AnyValue: two levels each
    return _span_attribute(_len(1, b"k") + _len(2, value))


def _groups_in_span(depth: int) -> bytes:
    group = b""
    for _ in range(depth):
        group = _tag(15, 3) + group + _tag(15, 4)
    return _one_span(group)


@pytest.mark.parametrize(
    ("body", "accepted"),
    [
        (_nested_array(47), True),  # 5 + 2 x 47 = 99 levels
        (_nested_array(48), False),  # 101: past upb's 100
        (_groups_in_span(97), True),  # the span is level 3: 100 in all
        (_groups_in_span(98), False),
        (_tag(15, 3) + _tag(15, 4), True),
        (_tag(15, 3) + _tag(16, 4), False),  # an end that is not the group's
        (_tag(15, 4), False),  # an end outside any group
        (_tag(15, 6), False),
        (b"\x00\x01", False),  # field number 0
        (_tag(15, 3) + b"\x00\x01" + _tag(15, 4), True),  # ... but inside a group upb takes it
        (_tag(15, 3) + b"\x03\x04" + _tag(15, 4), True),  # a group numbered 0 inside a group
        (_tag(15, 2) + _padded(1, 4) + b"a", True),  # a length in 5 bytes
        (_tag(15, 2) + _padded(1, 5) + b"a", False),  # in 6: upb refuses it
        (_span_attribute(_len(1, b"k") + _tag(2, 2) + _padded(3, 5) + _len(1, b"v")), False),  # a value's, too
        (_tag(15, 0) + b"\xff" * 9 + b"\x7f", True),  # a 10-byte varint, high bits dropped
        (_tag(15, 0) + b"\xff" * 10 + b"\x01", False),  # 11 bytes
        (b"\xfa\xff\xff\xff\x0f\x00", True),  # a 5-byte tag (field 2^29 - 1)
        (b"\xfa\xff\xff\xff\x8f\x00\x00", False),  # a 6-byte tag
        (_len(1, _len(2, _len(1, _len(1, b"\xff")))), False),  # the scope's name is a string
        (_len(1, _len(2, _len(1, _len(2, b"\xff")))), True),  # the scope's version is not in the schema
        (_one_span(_len(5, b"\xff")), True),  # nor the span's name
        (_span_attribute(_len(1, b"\xc3")), False),  # an attribute name
        (_span_attribute(_len(1, b"k") + _len(2, _len(1, b"\xed\xa0\x80"))), False),  # a surrogate in a value
        (_span_attribute(_len(1, b"k") + _len(2, _len(7, b"\xff"))), True),  # bytes are not UTF-8
        (_span_attribute(_len(1, b"k") + _len(2, _len(6, _len(1, _len(1, b"\xff"))))), False),  # a kvlist's key
    ],
)
def test_the_walk_refuses_what_upb_refuses(body: bytes, accepted: bool) -> None:
    assert (_both(body) is not None) is accepted


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies, st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255), st.sampled_from("xcd")), max_size=4))
def test_damaged_bodies_upb_accepts_give_the_same_views(body: bytes, damage: list[tuple[int, int, str]]) -> None:
    data = bytearray(body)
    for where, byte, how in damage:
        if not data:
            break
        at = where % len(data)
        if how == "x":
            data[at] ^= byte or 1
        elif how == "c":
            del data[at:]
        else:
            del data[at]
    both = _both(bytes(data))
    if both is not None:
        reference, walked = both
        assert walked == reference


def test_a_repeated_name_keeps_its_last_value_and_merges_nothing_else() -> None:
    """Worked example of the merge rules: the second occurrence of a map entry wins, the resource's
    two occurrences merge, the scope's name is the last given, a oneof set twice keeps the last."""
    name = b"gen_ai.request.model"
    first = _len(9, _len(1, name) + _len(2, _len(1, b"gpt-a")))
    second = _len(9, _len(1, name) + _len(2, _len(1, b"gpt-b")) + _len(2, _tag(3, 0) + _varint(-7)))
    the_span = _len(1, b"\x01" * 16) + _len(2, b"\x02" * 8) + first + second
    body = _len(1, _len(2, _len(1, _len(1, b"one")) + _len(2, the_span) + _len(1, _len(1, b"two")))
                + _len(1, _len(1, _len(1, b"tenant.id") + _len(2, _len(1, b"t1")))))
    views = views_of_protobuf(body)
    assert [(v.attrs, v.resource, v.scope_name, v.trace_id) for v in views] == [
        ({"gen_ai.request.model": -7}, {"tenant.id": "t1"}, "two", "01" * 16)
    ]
    both = _both(body)
    assert both is not None and both[0] == both[1]


def test_an_unwanted_value_is_never_read() -> None:
    """A prompt's value is skipped on the wire: the C walk never makes a str of it."""
    prompt = "the secret prompt " * 4
    body = _one_span(_entry(b"gen_ai.prompt", prompt.encode()), _entry(b"gen_ai.request.model", b"m"))
    opts = MappingOptions()
    (view,) = views_of_protobuf(body, opts)
    assert view.attrs == {"gen_ai.request.model": "m"}
    assert opts._decisions["gen_ai.prompt"] is False


def test_records_are_the_same_either_way() -> None:
    """map_protobuf with the C walk and with upb's message: the same records, on every captured request."""
    import json

    for path in sorted(FIXTURES.glob("*/*.json")):
        for request in json.loads(path.read_text()).get("requests", []):
            if "protobuf" not in request.get("content_type", ""):
                continue
            body = request_bytes(request)
            fast, n_fast = map_protobuf(body, MappingOptions(correlate=False))
            opts = MappingOptions(correlate=False)
            from exporter.sources.otlp.mapping import map_spans

            views = views_of_protobuf(body, opts, accelerated=False)
            slow = map_spans(views, opts)
            assert (fast.records, fast.ignored, fast.rejected, n_fast) == (
                slow.records, slow.ignored, slow.rejected, len(views)
            ), path


def _entry(name: bytes, value: bytes) -> bytes:
    return _len(9, _len(1, name) + _len(2, _len(1, value)))


def test_a_call_reentered_from_a_callback_keeps_its_own_decisions() -> None:
    """The C walk remembers each name's decision for the decisions dict of its call. A callback
    (``wanted``) may run another thread's call with other options before it returns (the GIL is
    released in Python code): each call must still read its own dict's decisions, and leave the
    other's alone. Here the other call is made from inside the callback, deterministically."""
    wire = decode._wire
    assert wire is not None
    wants_tenant: dict[str, bool] = {"tenant": True}
    no_tenant: dict[str, bool] = {"tenant": False}

    def other_wanted(name: str) -> bool:
        no_tenant[name] = False
        return False

    def wanted(name: str) -> bool:  # the first undecided name: the other options' call runs meanwhile
        assert [v.attrs for v in wire.views(_one_span(_entry(b"tenant", b"acme")), no_tenant, other_wanted,
                                             SpanView, Unsupported)] == [{}]
        wants_tenant[name] = False
        return False

    body = _one_span(_entry(b"fresh", b"x"), _entry(b"tenant", b"acme"))
    assert [v.attrs for v in wire.views(body, wants_tenant, wanted, SpanView, Unsupported)] == [{"tenant": "acme"}]
    # and afterwards each dict's decision stands
    assert [v.attrs for v in wire.views(body, no_tenant, other_wanted, SpanView, Unsupported)] == [{}]
    assert [v.attrs for v in wire.views(body, wants_tenant, wanted, SpanView, Unsupported)] == [{"tenant": "acme"}]


def test_a_view_class_that_is_not_a_span_view_layout_is_refused_and_leaves_the_walk_sound() -> None:
    """The walk fills a view's slots by their offsets: a class whose slots it cannot prove its own
    is refused, and a refused class (half of whose fields looked right) changes nothing."""
    wire = decode._wire
    assert wire is not None
    body = _one_span(_entry(b"gen_ai.request.model", b"m"))
    names = ("attrs", "resource", "scope_name", "trace_id", "span_id", "start_ns", "end_ns", "parent_span_id")
    big = type("Big", (), {"__slots__": tuple(f"pad{i}" for i in range(2000)) + names})
    half = type("Half", (), {"__slots__": (*tuple(f"pad{i}" for i in range(2000)), "attrs"), "resource": 1})
    borrowed = type("Borrowed", (), {"__slots__": (), **{name: big.__dict__[name] for name in names}})
    for wrong in (half, borrowed):
        with pytest.raises(ValueError, match="not slots"):
            wire.views(body, {}, lambda name: True, wrong, Unsupported)
        (view,) = wire.views(body, {}, lambda name: True, SpanView, Unsupported)
        assert view.attrs == {"gen_ai.request.model": "m"} and view.scope_name == ""


def test_a_long_name_is_decided_each_time_not_remembered() -> None:
    """Names are the client's to choose: one longer than any convention's is not kept by the options."""
    long_name = "llm_savings." + "x" * 300
    opts = MappingOptions()
    (view,) = views_of_protobuf(_one_span(_entry(long_name.encode(), b"v"), _entry(b"gen_ai.prompt", b"p")), opts)
    assert view.attrs == {long_name: "v"}
    assert long_name not in opts._decisions and opts._decisions["gen_ai.prompt"] is False


def test_a_long_name_or_scope_is_planned_each_time_not_remembered() -> None:
    """The shape plans and the value kinds are remembered by count for the options' life, keyed by
    names and a scope the client chose: one longer than any convention's (up to a body's size) is
    planned and read each time instead, with the same result."""
    long_name, long_scope = "llm_savings." + "x" * 300, b"s" * 300
    fields = _entry(long_name.encode(), b"v") + _entry(b"gen_ai.request.model", b"m")
    for body in (_one_span(fields), _len(1, _len(2, _len(1, _len(1, long_scope)) + _len(2, fields)))):
        for accelerated in (True, False):
            opts = MappingOptions()
            views = views_of_protobuf(body, opts, accelerated=accelerated)
            first, again = map_spans(views, opts), map_spans(views, opts)
            assert first.records == again.records and first.records[0]["model"] == "m"
            assert all(max(map(len, shape)) <= MAX_REMEMBERED_NAME for shape in opts._memory["plans"])
            assert long_name not in opts._memory.get("value_kinds", {})
