"""The msgspec fast path must agree with the reference parser on every line it accepts."""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.fastparse import fast_parse
from exporter.records import Record, parse_object, parse_ts

counts = st.one_of(st.integers(-5, 10**6), st.sampled_from([True, False, 2.0, 1.5, None, "7", 2**53, 2**53 - 1]))
labels = st.one_of(st.none(), st.text(max_size=8), st.integers(0, 99), st.booleans())
usage_blocks = st.one_of(
    st.none(),
    st.fixed_dictionaries({"prompt_tokens": counts, "completion_tokens": counts},
                          optional={"prompt_tokens_details": st.one_of(st.none(), st.fixed_dictionaries(
                              {}, optional={"cached_tokens": counts, "cache_write_tokens": counts}))}),
    st.fixed_dictionaries({"input_tokens": counts, "output_tokens": counts},
                          optional={"cache_read_input_tokens": counts, "cache_creation_input_tokens": counts,
                                    "cache_creation": st.fixed_dictionaries(
                                        {}, optional={"ephemeral_5m_input_tokens": counts,
                                                      "ephemeral_1h_input_tokens": counts})}),
    st.fixed_dictionaries({"promptTokenCount": counts},
                          optional={"cachedContentTokenCount": counts, "thoughtsTokenCount": counts}),
    st.fixed_dictionaries({"inputTokens": counts, "outputTokens": counts}),
    st.dictionaries(st.text(max_size=5), counts, max_size=3),
    st.integers(),
)
records = st.fixed_dictionaries(
    {},
    optional={
        "ts": st.one_of(st.integers(-10, 2 * 10**12), st.floats(allow_nan=False, allow_infinity=False),
                        st.sampled_from(["2026-11-03T10:00:00Z", "2026-11-03T10:00:00+05:30", "2026-11-03",
                                         "nope", "", True])),
        "model": st.one_of(st.sampled_from(["gpt-4o", "", "x"]), st.integers(), st.none()),
        "request_id": labels,
        "tenant": labels,
        "provider": labels,
        "count_method": st.one_of(st.none(), st.sampled_from(["provider", "tiktoken:o200k_base"]), st.integers()),
        "tokens_before": counts,
        "tokens_after": counts,
        "would_have_saved": counts,
        "components": st.one_of(st.none(), st.lists(st.fixed_dictionaries(
            {"name": st.sampled_from(["a", "", 3]), "tokens_saved": counts}), max_size=3), st.integers()),
        "usage": usage_blocks,
        "extra": st.integers(),
    },
)


@settings(max_examples=600, deadline=None)
@given(records)
def test_fast_path_equals_reference(obj: dict[str, Any]) -> None:
    line = json.dumps(obj).encode()
    fast = fast_parse(line, Record, parse_ts)
    reference = parse_object(orjson.loads(line))
    if fast is not None:
        assert fast == reference


def test_fast_path_takes_ordinary_lines() -> None:
    line = (b'{"ts":"2026-11-03T10:00:00Z","request_id":"r1","model":"gpt-4o","tokens_before":10,'
            b'"tokens_after":4,"usage":{"prompt_tokens":5,"completion_tokens":1}}')
    fast = fast_parse(line, Record, parse_ts)
    assert fast is not None and fast == parse_object(orjson.loads(line))


def test_lines_with_text_go_to_the_reference_path() -> None:
    line = b'{"ts":1,"model":"m","text_before":"a","text_after":"b"}'
    assert fast_parse(line, Record, parse_ts) is None
