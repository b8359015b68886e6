"""The optimizer block (net savings) through the LiteLLM and mapping formats."""

from __future__ import annotations

import copy
import textwrap

import pytest

from exporter.engine.records import Record, Rejection, parse_object
from exporter.engine.usage import OptimizerCall, Usage
from exporter.sources.formats.litellm import to_canonical
from exporter.sources.formats.mapping import MappingError, parse_mapping
from tests.sources.formats.test_formats_litellm import payloads

BLOCK = {"model": "gpt-4o-mini", "usage": {"prompt_tokens": 1200, "completion_tokens": 80}}
CALL = OptimizerCall("gpt-4o-mini", None, Usage(1200, 0, 0, 0, 80, "openai_chat"))


def test_litellm_metadata_carries_the_optimizer_block() -> None:
    payload = copy.deepcopy(payloads()["chatcmpl-openai-1"])
    payload["metadata"]["spend_logs_metadata"] = {"llm_savings": {"tokens_before": 10, "tokens_after": 4,
                                                                  "optimizer": BLOCK}}
    record = parse_object(to_canonical(payload))
    assert isinstance(record, Record) and record.optimizer == CALL


MAPPING = textwrap.dedent("""\
    schema: llm-savings-mapping/v1
    fields:
      ts: time
      model: route.model
      optimizer.model: {value: "gpt-4o-mini"}
      optimizer.provider: {path: "compressor.vendor", default: "openai"}
      optimizer.usage: compressor.usage
    """)


def test_mapping_builds_the_optimizer_block_from_its_keys() -> None:
    mapping = parse_mapping(MAPPING, "m.yaml")
    line = {"time": "2026-11-03T10:00:00Z", "route": {"model": "gpt-4o"},
            "compressor": {"usage": BLOCK["usage"]}}
    record = parse_object(mapping.apply(line))
    assert isinstance(record, Record)
    assert record.optimizer == OptimizerCall("gpt-4o-mini", "openai", CALL.usage)


def test_a_mapped_whole_object_and_its_keys_merge_without_changing_the_input() -> None:
    mapping = parse_mapping(MAPPING.replace("      optimizer.usage: compressor.usage\n",
                                            "      optimizer: compressor\n"), "m.yaml")
    line = {"time": "2026-11-03T10:00:00Z", "route": {"model": "gpt-4o"},
            "compressor": {"model": "ignored", "usage": BLOCK["usage"]}}
    out = mapping.apply(line)
    assert out["optimizer"] == {"model": "gpt-4o-mini", "provider": "openai", "usage": BLOCK["usage"]}
    assert line["compressor"]["model"] == "ignored"  # the decoded line is not mutated


def test_a_mapped_optimizer_without_usage_rejects_the_record_naming_the_field() -> None:
    mapping = parse_mapping(MAPPING, "m.yaml")
    result = parse_object(mapping.apply({"time": "2026-11-03T10:00:00Z", "route": {"model": "gpt-4o"}}))
    assert isinstance(result, Rejection)
    assert (result.reason, result.detail) == ("invalid_usage", "optimizer.usage is missing")


@pytest.mark.parametrize(("field", "value", "message"), [
    ("optimizer.model", 3, "expected a non-empty string for 'optimizer.model'"),
    ("optimizer.usage", [1], "expected an object for 'optimizer.usage'"),
    ("optimizer", "x", "expected an object for 'optimizer'"),
])
def test_mapping_constants_of_the_wrong_type_are_refused_at_load(field: str, value: object, message: str) -> None:
    text = f"schema: llm-savings-mapping/v1\nfields:\n  ts: t\n  model: m\n  {field}: {{value: {value!r}}}\n"
    with pytest.raises(MappingError, match=message):
        parse_mapping(text, "m.yaml")


def test_mapping_maps_the_optimizer_s_service_tier() -> None:
    mapping = parse_mapping(MAPPING + '  optimizer.service_tier: compressor.tier\n', "m.yaml")
    line = {"time": "2026-11-03T10:00:00Z", "route": {"model": "gpt-4o"},
            "compressor": {"usage": BLOCK["usage"], "tier": "batch"}}
    record = parse_object(mapping.apply(line))
    assert isinstance(record, Record)
    assert record.optimizer == OptimizerCall("gpt-4o-mini", "openai", CALL.usage, "batch")
