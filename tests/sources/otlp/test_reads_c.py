"""The C reads (``_reads.c``) answer as their Python twins, and fail with the same error.

``first_string``, ``read_counts`` and ``usage_block`` run for every model-call
span; the product uses the C ones when the install built them. Random input
mixes plain values with every malformed kind the decoders can hand over (wrong
types, arrays, out-of-range and string counts, over-long strings, a str
subclass, bools for counts), attributes in a dict and in another mapping, keys
and pairs as tuples and as lists, so each fallback to the twin is taken too.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.engine.usage import MAX_COUNT
from exporter.sources.otlp.attributes import BadValue, Unsupported, c_reads, first_string_python
from exporter.sources.otlp.blocks import usage_block_python
from exporter.sources.otlp.dialects import DIALECTS
from exporter.sources.otlp.dialects.base import SOURCE_FLAGS, UsageCounts, read_counts_python

pytestmark = pytest.mark.skipif(c_reads is None, reason="_reads.c not built")

NAMES = ["a", "b", "c", "gen_ai.usage.input_tokens", "x" * 40]


class Text(str):
    """A str subclass: not a plain string to the fast paths."""


VALUES = st.one_of(
    st.none(),
    st.just(""),
    st.text(max_size=8),
    st.text(min_size=250, max_size=300),
    st.sampled_from(["abc", "y" * 256, "z" * 257]),  # at the limits drawn below, and one past
    st.builds(Text, st.text(max_size=4)),
    st.integers(-5, 10),
    st.sampled_from([MAX_COUNT, MAX_COUNT + 1, 2**63, 2**64 + 3, -(2**63) - 1]),
    st.booleans(),
    st.floats(allow_nan=False),
    st.sampled_from(["0", "0123", "9" * 16, "9" * 17, "-1", " 1", "1e3"]),
    st.builds(Unsupported, st.sampled_from(["array", "kvlist", "bytes"])),
)
ATTRS = st.dictionaries(st.sampled_from(NAMES), VALUES, max_size=5)


def outcome(call: Callable[..., Any], *args: Any) -> Any:
    """What ``call`` returns, or the error it raises as (type, reason, detail)."""
    try:
        return ("ok", call(*args))
    except BadValue as bad:
        return ("bad", bad.reason, bad.detail)
    except Exception as error:  # any other error must be the same too
        return ("error", type(error).__name__, str(error))


def in_a_mapping(attrs: dict[str, Any], proxy: bool) -> Any:
    return MappingProxyType(attrs) if proxy else attrs


@settings(max_examples=600, deadline=None)
@given(ATTRS, st.lists(st.sampled_from(NAMES), max_size=4), st.sampled_from([None, 0, 3, 256]), st.booleans(),
       st.booleans())
def test_first_string_is_its_twin(attrs: dict[str, Any], keys: list[str], limit: int | None, as_list: bool,
                                  proxy: bool) -> None:
    names = keys if as_list else tuple(keys)
    args = (in_a_mapping(attrs, proxy), names) if limit is None else (in_a_mapping(attrs, proxy), names, limit)
    assert outcome(c_reads.first_string, *args) == outcome(first_string_python, *args)


PAIRS = st.lists(st.tuples(st.integers(0, 4), st.sampled_from(NAMES)), max_size=6)


@settings(max_examples=600, deadline=None)
@given(ATTRS, PAIRS, st.sampled_from([None, True, False]), st.sampled_from([(), ("usage_no_cache_detail",)]),
       st.sampled_from(["tuple", "list", "list pairs", "negative index"]), st.booleans())
def test_read_counts_is_its_twin(attrs: dict[str, Any], pairs: list[tuple[int, str]], includes: bool | None,
                                 flags: tuple[str, ...], shape: str, proxy: bool) -> None:
    given_pairs: Any = tuple(pairs)
    if shape == "list":
        given_pairs = list(pairs)
    elif shape == "list pairs":
        given_pairs = tuple([index, name] for index, name in pairs)
    elif shape == "negative index" and pairs:
        given_pairs = ((-1, pairs[0][1]), *pairs)
    args = (in_a_mapping(attrs, proxy), given_pairs, includes, flags)
    mine, theirs = outcome(c_reads.read_counts, *args), outcome(read_counts_python, *args)
    assert mine == theirs
    if mine[0] == "ok":
        assert type(mine[1]) is UsageCounts
        assert [type(v) for v in mine[1]] == [type(v) for v in theirs[1]]


COUNT = st.one_of(st.none(), st.none(), st.integers(0, 2000), st.sampled_from([0, 1, MAX_COUNT, 2**61, -3]),
                  st.booleans())
FLAGS = st.lists(st.sampled_from(SOURCE_FLAGS), max_size=2, unique=True).map(tuple)


@settings(max_examples=1500, deadline=None)
@given(st.tuples(COUNT, COUNT, COUNT, COUNT, COUNT, COUNT, COUNT), st.sampled_from([None, True, False]), FLAGS,
       st.sampled_from(DIALECTS), st.sampled_from([None, True, False]), st.booleans())
def test_usage_block_is_its_twin(numbers: tuple[Any, ...], stated: bool | None, flags: tuple[str, ...],
                                 dialect: Any, forced: bool | None, consistent_total: bool) -> None:
    inp, out, read, write, total, w5, w1h = numbers
    if consistent_total and isinstance(inp, int) and isinstance(out, int):  # the total decides, either way
        total = inp + out + (((read or 0) + (write or 0)) if stated is None else 0)
    counts = UsageCounts(inp, out, read, write, total, w5, w1h, stated, flags)
    mine, theirs = outcome(c_reads.usage_block, counts, dialect, forced), outcome(usage_block_python, counts,
                                                                                  dialect, forced)
    assert mine == theirs
    if mine[0] == "ok":  # the same keys in the same order, and the same types of value
        usage, ordered = mine[1]
        assert list(usage) == list(theirs[1][0]) and ordered == theirs[1][1]
        assert {k: type(v) for k, v in usage.items()} == {k: type(v) for k, v in theirs[1][0].items()}


def test_the_c_reads_are_the_ones_the_mapping_uses() -> None:
    from exporter.sources.otlp import attributes, blocks, mapping
    from exporter.sources.otlp.dialects import base

    used = vars(mapping)  # the names the mapping module imported
    assert used["first_string"] is attributes.first_string is c_reads.first_string
    assert used["read_counts"] is base.read_counts is c_reads.read_counts
    assert used["usage_block"] is blocks.usage_block is c_reads.usage_block


LITELLM_USAGE = st.sampled_from([
    None, "not a dict", "{'prompt_tokens': 30, 'completion_tokens': 4}",
    "{'prompt_tokens': 30, 'completion_tokens': 4, 'prompt_tokens_details': {'cached_tokens': 10}}",
    "{'prompt_tokens': 30, 'completion_tokens': 4, 'cache_creation_input_tokens': 6}",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([True, False, "true", "TRUE", None]), LITELLM_USAGE,
                          st.dictionaries(st.sampled_from(["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
                                                           "gen_ai.usage.cache_read_input_tokens",
                                                           "gen_ai.usage.cache_creation_input_tokens"]),
                                          st.integers(0, 50), max_size=4)), min_size=1, max_size=6))
def test_the_c_loop_flags_litellm_cache_hits_as_map_span(drawn: list[tuple[Any, str | None, dict[str, int]]]) -> None:
    """The flags a dialect gives (LiteLLM's response-cache hit, its unparsed usage object) through the C
    loop's completeness, against ``map_span``: the random spans of test_fast_mapping seldom carry them."""
    from exporter.sources.otlp.mapping import _plans, map_span
    from exporter.sources.otlp.spans import MappingOptions, SpanView

    views = []
    for n, (hit, usage, counts) in enumerate(drawn):
        attrs: dict[str, Any] = {"litellm.call_id": f"call-{n}", "gen_ai.request.model": "gpt-4o", **counts}
        if hit is not None:
            attrs["litellm.cache_hit"] = hit
        if usage is not None:
            attrs["metadata.usage_object"] = usage
        views.append(SpanView(attrs, {}, "litellm", "ab" * 16, f"{n + 1:016x}", 0, 10**18))
    options = MappingOptions()
    mapped = c_reads.map_all(views, _plans(options), options.tenant_attributes, options.input_includes_cache)
    assert mapped is not None
    assert mapped[0] == [map_span(view, options) for view in views]
