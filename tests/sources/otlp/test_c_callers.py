"""The C loops survive callers the decoders never are, and answer as the Python code does.

The decoders hand the mapping plain views of plain values; these tests call the
C loops (``_reads.c``, ``_correlator.c``) with what only other Python code could
pass: a view with a field deleted, a value whose ``==`` changes the view or
empties the lists being walked, a usage that is not a tuple, a model that is not
a string, a NaN count, a key that is a tuple. Each case once crashed the
interpreter or answered otherwise than the Python code (found by review); each
must now raise the Python code's error or give its answer, never crash.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from exporter.sources.otlp.attributes import c_reads, first_string_python
from exporter.sources.otlp.correlate import correlate
from exporter.sources.otlp.correlator import NATIVE, Member, SpanCorrelator
from exporter.sources.otlp.mapping import map_spans
from exporter.sources.otlp.spans import Mapped, MappingOptions, SpanView

pytestmark = pytest.mark.skipif(c_reads is None or not NATIVE, reason="the C modules are not built")
NAN = float("nan")


def _view(attrs: dict[str, Any], span_id: str = "cd") -> SpanView:
    return SpanView(attrs, {}, "scope", "ab", span_id, 1, 2)


@pytest.mark.parametrize("field", ["attrs", "resource", "scope_name", "trace_id", "end_ns"])
def test_a_view_with_a_field_deleted_raises_as_python_does(field: str) -> None:
    view = _view({"gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 3})
    delattr(view, field)
    with pytest.raises(AttributeError, match=field):
        map_spans([view], MappingOptions(correlate=False))


def test_a_value_that_replaces_the_views_attributes_while_read() -> None:
    views: list[SpanView] = []

    class Sneaky(str):
        def __eq__(self, other: object) -> bool:
            if views:
                views[0].attrs = {"gen_ai.request.model": "other"}
                views.clear()
            return str.__eq__(self, other)

        __hash__ = str.__hash__

    views.append(_view({"gen_ai.response.model": Sneaky("m" * 10), "gen_ai.request.model": "gpt-4o",
                        "gen_ai.usage.input_tokens": 3}))
    result = map_spans(list(views), MappingOptions(correlate=False))
    # the attributes it began with (the str subclass is passed over, as the Python loop does), not "other"
    assert [(r["model"], r["usage"]) for r in result.records] == [("gpt-4o", {"prompt_tokens": 3})]


def test_owns_flags_that_empty_the_lists_being_gathered() -> None:
    views = [_view({}, f"{i:02x}") for i in range(3)]
    outcomes: list[Any] = [Mapped({"usage": {"prompt_tokens": 3}, "model": "m", "source_dialect": "gen_ai"})
                           for _ in range(3)]

    class Own:
        def __bool__(self) -> bool:
            views.clear()
            outcomes.clear()
            return False

    correlate(views, outcomes, MappingOptions(), [Own(), False, False])  # no crash; nothing left to answer
    assert outcomes == []


def test_an_error_in_the_middle_of_a_request_keeps_family_numbers_unique() -> None:
    correlator = SpanCorrelator()
    first = Member("t:1", "", "gen_ai", (100, 0, 0, 7), "gpt-4o", 10**18, None, "r-a", (1, 0, 0))
    bad = Member("t:2", "", "gen_ai", (100, 0, 0, 7), 5, 10**18, None, "r-bad", (1, 0, 0))  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        correlator.resolve([("t:1", ""), ("t:2", "")], [first, bad])
    later = Member("u:1", "", "gen_ai", (5, 0, 0, 1), "claude", 10**18, None, "r-later", (1, 0, 0))
    correlator.resolve([("u:1", "")], [later])
    assert later.family != first.family and correlator._family_of["t:1"] == first.family


def test_a_usage_that_is_not_a_tuple_is_refused_not_read_past_its_end() -> None:
    short = Member("t:1", "", "gen_ai", (100,), "gpt-4o", 10**18, None, "r1", (1, 0, 0))  # type: ignore[arg-type]
    with pytest.raises((TypeError, IndexError)):
        SpanCorrelator().resolve([("t:1", "")], [short])


@pytest.mark.parametrize("native", [True, False])
def test_a_nan_count_is_not_equal_to_itself(native: bool) -> None:
    views = [SpanView({}, {}, "s", "aa", "01", 1, 2), SpanView({}, {}, "s", "aa", "02", 1, 2, parent_span_id="01")]
    outcomes: list[Any] = [Mapped({"usage": {"prompt_tokens": NAN, "completion_tokens": 1}, "model": "m",
                                   "source_dialect": "gen_ai", "request_id": f"r{i}"}) for i in range(2)]
    options = MappingOptions()
    options._memory["correlator"] = SpanCorrelator(native=native)
    correlate(views, outcomes, options, [False, False])
    assert [type(o) for o in outcomes] == [Mapped, Mapped]  # two calls: NaN == NaN is false


def test_a_tuple_key_in_another_mapping_is_one_key() -> None:
    attrs = MappingProxyType({("a", "b"): "x", "a": "y"})
    keys = (("a", "b"),)
    assert c_reads.first_string(attrs, keys) == first_string_python(attrs, keys) == "x"  # type: ignore[arg-type]


def test_links_that_are_lists_are_read_as_pairs() -> None:
    member = Member("t:2", "t:1", "gen_ai", (100, 0, 0, 7), "gpt-4o", 10**18, None, "r2", (1, 0, 0))
    correlator = SpanCorrelator()
    correlator.resolve([["t:1", ""], ["t:2", "t:1"]], [member])  # type: ignore[list-item]
    assert correlator._parent == {"t:2": "t:1"}
