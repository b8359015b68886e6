"""User YAML field mappings: load-time validation, path resolution, apply, replay end to end."""

from __future__ import annotations

import contextlib
import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.cli.main import main
from exporter.engine.records import Record, Rejection, parse_object
from exporter.sources.formats.mapping import (
    MappingError,
    PathError,
    compile_path,
    load_mapping,
    lookup,
    parse_mapping,
)
from exporter.yamlpos import YamlError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "formats"
MAPPING = FIXTURES / "mapping_gateway.yaml"
LOG = FIXTURES / "gateway_log.jsonl"


def lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in LOG.read_text(encoding="utf-8").splitlines()]


# ---------------------------------------------------------------------------
# a good mapping


def test_apply_the_documented_example():
    mapping = load_mapping(MAPPING)
    first = mapping.apply(lines()[0])
    assert first == {
        "source_dialect": "mapping",
        "ts": "2026-11-02T09:15:00Z",
        "request_id": "r-1",
        "model": "gpt-4o",
        "provider": "openai",
        "tenant": "search",
        "count_method": "tiktoken:o200k_base",
        "tokens_before": 12000,
        "tokens_after": 4000,
        "components": [
            {"name": "trim_history", "tokens_saved": 5000},
            {"name": "dedupe_tool_output", "tokens_saved": 3000},
        ],
        "usage": {
            "prompt_tokens": 4100,
            "completion_tokens": 300,
            "prompt_tokens_details": {"cached_tokens": 2048},
        },
    }
    record = parse_object(first)
    assert isinstance(record, Record)
    assert record.usage is not None and (record.usage.fresh_input, record.usage.cache_read) == (
        2052,
        2048,
    )


def test_defaults_and_absent_fields():
    mapping = load_mapping(MAPPING)
    third = mapping.apply(lines()[2])
    assert third["model"] == "unknown-model"  # default
    assert "tenant" not in third and "tokens_before" not in third  # absent paths are left out
    assert third["count_method"] == "tiktoken:o200k_base"  # constants always apply
    assert isinstance(parse_object(third), Record)


def test_values_are_not_coerced():
    bad_count = parse_object(load_mapping(MAPPING).apply(lines()[3]))
    assert isinstance(bad_count, Rejection) and bad_count.reason == "invalid_count"
    no_ts = parse_object(load_mapping(MAPPING).apply(lines()[4]))
    assert isinstance(no_ts, Rejection) and no_ts.reason == "missing_ts"


def test_gateway_keys_are_mapped_as_they_are():
    mapping = parse_mapping(
        "schema: llm-savings-mapping/v1\nfields:\n  ts: t\n  model: route.called\n"
        "  requested_model: route.asked\n  service_tier: upstream.service_tier\n"
        "  response_cache: {path: cache.kind, default: unspecified}\n",
        "m.yaml",
    )
    line = {"t": 1, "route": {"called": "gpt-4o-mini", "asked": "smart"},
            "upstream": {"service_tier": "flex"}, "cache": {"kind": "semantic"}}
    assert mapping.apply(line) == {"source_dialect": "mapping", "ts": 1, "model": "gpt-4o-mini",
                                   "requested_model": "smart", "service_tier": "flex",
                                   "response_cache": "semantic"}
    assert mapping.apply({"t": 1, "route": {"called": "m"}, "cache": {"kind": None}})["response_cache"] == "unspecified"
    assert "service_tier" not in mapping.apply({"t": 1, "route": {"called": "m"}})


def test_null_takes_the_default_and_non_objects_pass_through():
    mapping = parse_mapping(
        'schema: llm-savings-mapping/v1\nfields:\n  ts: t\n  model: {path: m, default: "x"}\n',
        "m.yaml",
    )
    assert mapping.apply({"t": 1, "m": None}) == {
        "source_dialect": "mapping",
        "ts": 1,
        "model": "x",
    }
    assert mapping.apply([1, 2]) == [1, 2]  # the record parser rejects it as not_object
    assert mapping.field_names == ("ts", "model")


def test_paths_with_indexes_and_quoted_keys():
    mapping = parse_mapping(
        textwrap.dedent("""\
            schema: llm-savings-mapping/v1
            fields:
              ts: {path: 'spans[0].attrs["start.time"]'}
              model: {path: "spans[-1].attrs['gen_ai.request.model']"}
              tokens_before: {path: 'spans[0].attrs["llm_savings.tokens_before"]'}
            """),
        "m.yaml",
    )
    obj = {
        "spans": [
            {"attrs": {"start.time": 5, "llm_savings.tokens_before": 7}},
            {"attrs": {"gen_ai.request.model": "gpt-4o"}},
        ]
    }
    assert mapping.apply(obj) == {
        "source_dialect": "mapping",
        "ts": 5,
        "model": "gpt-4o",
        "tokens_before": 7,
    }
    # wrong container types and out-of-range indexes are just "absent"
    assert mapping.apply({"spans": {"0": {}}}) == {"source_dialect": "mapping"}
    assert mapping.apply({"spans": [1]}) == {"source_dialect": "mapping"}


# ---------------------------------------------------------------------------
# bad mappings: refused at load with file:line: key

HEAD = "schema: llm-savings-mapping/v1\nfields:\n"
BAD = [
    (
        "wrong schema",
        "schema: x\nfields:\n  ts: t\n",
        1,
        "schema",
        "expected 'llm-savings-mapping/v1'",
    ),
    (
        "unknown top key",
        HEAD + "  ts: t\n  model: m\nextra: 1\n",
        5,
        "extra",
        "unknown key 'extra'",
    ),
    ("no fields", "schema: llm-savings-mapping/v1\n", 1, "fields", "non-empty mapping"),
    ("fields a list", HEAD + "  - ts\n", 2, "fields", "non-empty mapping"),
    (
        "unknown field",
        HEAD + "  ts: t\n  model: m\n  tokens_saved: {path: x}\n",
        5,
        "fields.tokens_saved",
        "unknown field",
    ),
    (
        "path and value",
        HEAD + "  ts: {path: t, value: 1}\n  model: m\n",
        3,
        "fields.ts",
        "exactly one of",
    ),
    ("neither", HEAD + "  ts: {default: 1}\n  model: m\n", 3, "fields.ts", "exactly one of"),
    (
        "unknown entry key",
        HEAD + "  ts: {path: t, dflt: 1}\n  model: m\n",
        3,
        "fields.ts.dflt",
        "unknown key 'dflt'",
    ),
    (
        "default with value",
        HEAD + "  ts: t\n  model: {value: m, default: n}\n",
        4,
        "fields.model.default",
        "only goes with",
    ),
    (
        "path not a string",
        HEAD + "  ts: {path: 3}\n  model: m\n",
        3,
        "fields.ts.path",
        "expected a string",
    ),
    (
        "bad path",
        HEAD + "  ts: {path: 'a..b'}\n  model: m\n",
        3,
        "fields.ts.path",
        "cannot read it at character 3",
    ),
    (
        "dangling dot",
        HEAD + "  ts: t\n  model: {path: 'route.'}\n",
        4,
        "fields.model.path",
        "ends with a dot",
    ),
    (
        "bracket after dot",
        HEAD + "  ts: 'a.[0]'\n  model: m\n",
        3,
        "fields.ts",
        "bracket cannot follow a dot",
    ),
    ("entry a number", HEAD + "  ts: 5\n  model: m\n", 3, "fields.ts", "expected {path: ...}"),
    (
        "count constant",
        HEAD + "  ts: t\n  model: m\n  tokens_before: {value: '12'}\n",
        5,
        "fields.tokens_before.value",
        "non-negative integer",
    ),
    (
        "negative default",
        HEAD + "  ts: t\n  model: m\n  tokens_after: {path: a, default: -1}\n",
        5,
        "fields.tokens_after.default",
        "non-negative integer",
    ),
    (
        "label constant",
        HEAD + "  ts: t\n  model: {value: 7}\n",
        4,
        "fields.model.value",
        "non-empty string",
    ),
    (
        "usage constant",
        HEAD + "  ts: t\n  model: m\n  usage: {value: [1]}\n",
        5,
        "fields.usage.value",
        "an object",
    ),
    (
        "components constant",
        HEAD + "  ts: t\n  model: m\n  components: {value: x}\n",
        5,
        "fields.components.value",
        "a list",
    ),
    (
        "ts constant",
        HEAD + "  ts: {value: true}\n  model: m\n",
        3,
        "fields.ts.value",
        "RFC 3339 string or epoch",
    ),
    (
        "response_cache kind",
        HEAD + "  ts: t\n  model: m\n  response_cache: {value: hit}\n",
        5,
        "fields.response_cache.value",
        "one of exact, semantic, unspecified",
    ),
    (
        "service_tier constant",
        HEAD + "  ts: t\n  model: m\n  service_tier: {value: 2}\n",
        5,
        "fields.service_tier.value",
        "a non-empty string",
    ),
    ("missing model", HEAD + "  ts: t\n", 2, "fields", "missing field 'model'"),
    ("missing ts", HEAD + "  model: m\n", 2, "fields", "missing field 'ts'"),
    ("duplicate field", HEAD + "  ts: t\n  ts: u\n  model: m\n", 4, "fields.ts", "duplicate key"),
    ("invalid YAML", HEAD + "  ts: {path: t\n", None, None, "invalid YAML"),
    ("not a mapping", "[1, 2]\n", 1, "(top level)", "expected a mapping"),
]


@pytest.mark.parametrize(("name", "text", "line", "key", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_mappings_are_refused_with_file_line_key(name, text, line, key, message):
    with pytest.raises(MappingError) as info:
        parse_mapping(text, "bad.yaml")
    error = str(info.value)
    assert error.startswith(f"bad.yaml:{line}: " if line is not None else "bad.yaml:"), error
    if key is not None:
        assert f": {key}: " in error, error
    assert message in error, error


def test_load_mapping_file_errors(tmp_path):
    with pytest.raises(MappingError, match="cannot read"):
        load_mapping(tmp_path / "missing.yaml")
    bad = tmp_path / "m.yaml"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(MappingError, match="not UTF-8"):
        load_mapping(bad)
    bad.write_text(HEAD + "  ts: t\n  model: {path: 'x]'}\n", encoding="utf-8")
    with pytest.raises(MappingError, match=re.escape(f"{bad}:4: fields.model.path: ")):
        load_mapping(bad)


# ---------------------------------------------------------------------------
# path resolution, by property

_keys = st.one_of(
    st.sampled_from(
        ["a", "usage", "b.c", "x-team", 'q"x', "[0]", "0", "-1", " s", "ü", "it's", "b\\s"]
    ),
    st.text(min_size=1, max_size=4),
)
_leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
_docs = st.recursive(
    _leaves,
    lambda children: st.one_of(
        st.lists(children, min_size=1, max_size=4),
        st.dictionaries(_keys, children, min_size=1, max_size=4),
    ),
    max_leaves=12,
)

_PLAIN = re.compile(r"[^.\[\]\"'\s]+")


def _render(path: list[str | int]) -> str:
    out = ""
    for segment in path:
        if isinstance(segment, int):
            out += f"[{segment}]"
        elif _PLAIN.fullmatch(segment) and not segment.lstrip("-").isdigit():
            out += ("." if out else "") + segment
        else:
            out += '["' + segment.replace("\\", "\\\\").replace('"', '\\"') + '"]'
    return out


@st.composite
def _doc_and_path(draw: st.DrawFn) -> tuple[Any, list[str | int], Any]:
    doc = draw(st.dictionaries(_keys, _docs, min_size=1, max_size=4))
    node: Any = doc
    path: list[str | int] = []
    while (isinstance(node, dict | list) and node and draw(st.booleans())) or not path:
        if isinstance(node, dict):
            key = draw(st.sampled_from(sorted(node)))
            path.append(key)
            node = node[key]
        else:
            index = draw(st.integers(-len(node), len(node) - 1))
            path.append(index)
            node = node[index]
        if not isinstance(node, dict | list) or not node:
            break
    return doc, path, node


@settings(max_examples=100, deadline=None)
@given(_doc_and_path())
def test_rendered_paths_round_trip_and_resolve(case):
    doc, path, expected = case
    text = _render(path)
    assert list(compile_path(text)) == path
    assert lookup(doc, text) == expected or (expected is None and lookup(doc, text) is None)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30), _docs)
def test_any_text_either_compiles_or_raises_path_error_and_resolution_never_raises(text, doc):
    try:
        path = compile_path(text)
    except PathError:
        return
    assert path
    lookup({"root": doc}, text)  # never raises, whatever the shapes


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abtsmodel:{}[]'\"-., \n0123")), max_size=80))
def test_mapping_loader_fuzz(text):
    with contextlib.suppress(MappingError, YamlError):
        parse_mapping(HEAD + text, "fuzz.yaml")


# ---------------------------------------------------------------------------
# end to end


def test_replay_with_a_mapping(capsys):
    args = ["replay", str(LOG), "--format", "mapping", "--mapping", str(MAPPING), "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    month = out["months"]["2026-11"]
    assert month["requests"] == 3 and month["unpriced"] == 1  # r-3 falls back to unknown-model
    assert month["rejected"] == 1 and out["months"]["unknown"]["rejected"] == 1
    assert out["rejected_by_reason"] == {"invalid_count": 1, "missing_ts": 1}
    assert month["tokens_saved"] == 8000
    assert month["usd_saved"] == pytest.approx(8000 * 2.5 / 1e6)
    spend = (2052 * 2.5 + 2048 * 1.25 + 300 * 10) + (200 * 3 + 25000 * 0.3 + 5000 * 3.75 + 800 * 15)
    assert month["spend_usd"] == pytest.approx(spend / 1e6)
