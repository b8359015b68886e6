"""examples/ is run, not just shown: the config loads, every example input replays to the totals an
independent reading of the docs computes from the record values and the bundled price table."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from exporter.cli.main import main
from exporter.engine.usage import detect_shape, normalise_usage
from exporter.sidecar.config import config_from_dict, load_config
from exporter.sidecar.sidecar import Sidecar
from exporter.sources.formats.mapping import load_mapping
from tests.support import examples
from tests.support.sidecar import WALL, drain

EXAMPLES = examples.EXAMPLES
INT_KEYS = ("requests", "duplicates", "rejected", "unpriced", "tokens_saved", "would_have_saved_tokens",
            "fresh_input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
FLOAT_KEYS = ("usd_saved", "would_have_saved_usd", "spend_usd", "cache_savings_usd", "cache_hit_rate")


def replay(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["replay", *args, "--json", "--jobs", "1"]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


def assert_same_totals(got: dict[str, Any], expected: dict[str, Any]) -> None:
    assert set(got["months"]) == set(expected["months"])
    for month, want in expected["months"].items():
        have = got["months"][month]
        for key in INT_KEYS:
            assert have[key] == want[key], (month, key)
        for key in FLOAT_KEYS:
            assert math.isclose(have[key], want[key], rel_tol=1e-9, abs_tol=1e-12), (month, key, have[key], want[key])
    assert got["rejected_by_reason"] == expected["rejected_by_reason"]


def test_the_sidecar_config_loads_with_the_real_loader() -> None:
    config = load_config(EXAMPLES / "sidecar.yaml", environ={})
    assert [(s.name, s.type, s.format) for s in config.sources] == [
        ("gateway", "jsonl", "canonical"), ("litellm", "jsonl", "litellm"),
        ("custom-gateway", "jsonl", "mapping"), ("collector", "otlp_file", "canonical")]
    assert config.otlp.enabled and config.listen == "0.0.0.0:9464"


def test_records_cover_every_usage_shape_and_savings_field() -> None:
    records = examples.canonical_records()
    shapes = {detect_shape(r["usage"]) for r in records if "usage" in r}
    assert shapes == {"openai_chat", "openai_responses", "anthropic", "gemini", "bedrock_converse"}
    details = [r["usage"].get("prompt_tokens_details") or {} for r in records if "usage" in r]
    assert any("cache_write_tokens" in d for d in details) and any("cache_creation_tokens" in d for d in details)
    assert any("prompt_cache_hit_tokens" in r.get("usage", {}) for r in records)  # DeepSeek
    assert any("cache_creation" in r.get("usage", {}) for r in records)  # Anthropic's 5m/1h split
    for key in ("tokens_before", "tokens_after", "count_method", "would_have_saved", "components", "tenant",
                "provider"):
        assert any(key in r for r in records), key
    assert {type(r["ts"]) for r in records} == {str, int}  # RFC 3339 strings and epoch numbers (s and ms)
    assert any(isinstance(r["ts"], int) and r["ts"] > 1e11 for r in records)


def test_every_usage_block_normalises_to_disjoint_tiers_the_provider_billed() -> None:
    """The input tokens the provider billed (its own total) equal the sum of the tiers: nothing counted twice."""
    for record in examples.canonical_records():
        block = record.get("usage")
        if block is None:
            continue
        usage = normalise_usage(block)
        assert usage is not None
        billed_input = (block.get("prompt_tokens") or block.get("input_tokens") or block.get("promptTokenCount")
                        or block.get("inputTokens"))
        if usage.shape in ("anthropic", "bedrock_converse"):  # cache tokens beside the input count
            billed_input = (billed_input + (block.get("cache_read_input_tokens") or block.get("cacheReadInputTokens")
                                            or 0) + (block.get("cache_creation_input_tokens")
                                                     or block.get("cacheWriteInputTokens") or 0))
        assert usage.prompt_tokens == billed_input, record["request_id"]


def test_canonical_records_replay_to_the_independent_totals(capsys: pytest.CaptureFixture[str]) -> None:
    got = replay(capsys, str(EXAMPLES / "records.jsonl"))
    expected = examples.totals(examples.canonical_records())
    assert_same_totals(got, expected)
    month = got["months"]["2026-11"]
    assert month["requests"] == 12 and month["unpriced"] == 1 and month["rejected"] == 0
    assert month["tokens_saved"] > 0 and month["would_have_saved_tokens"] > 0 and month["cache_write_tokens"] > 0


def test_litellm_payloads_replay_to_the_independent_totals(capsys: pytest.CaptureFixture[str]) -> None:
    got = replay(capsys, str(EXAMPLES / "litellm-payloads.jsonl"), "--format", "litellm")
    assert_same_totals(got, examples.totals(examples.litellm_records()))
    assert got == replay(capsys, str(EXAMPLES / "litellm-payloads.jsonl"), "--format", "auto")


def test_mapping_example_replays_to_the_independent_totals(capsys: pytest.CaptureFixture[str]) -> None:
    load_mapping(EXAMPLES / "mapping.yaml")  # refused with file, line and key if it were wrong
    got = replay(capsys, str(EXAMPLES / "gateway.jsonl"), "--format", "mapping",
                 "--mapping", str(EXAMPLES / "mapping.yaml"))
    assert_same_totals(got, examples.totals(examples.mapping_records()))
    assert got["months"]["2026-11"]["unpriced"] == 1  # the line without a model gets the mapping's default


def _example_config(tmp_path: Path) -> Any:
    """examples/sidecar.yaml with its paths moved into tmp_path and the example inputs copied there."""
    raw = json.loads(json.dumps(load_config(EXAMPLES / "sidecar.yaml", environ={}), default=lambda o: o.__dict__))
    inputs = {"gateway": "records.jsonl", "litellm": "litellm-payloads.jsonl", "custom-gateway": "gateway.jsonl",
              "collector": "otlp-file.jsonl"}
    sources = []
    for source in raw["sources"]:
        folder = tmp_path / "logs" / source["name"]
        folder.mkdir(parents=True)
        shutil.copy(EXAMPLES / inputs[source["name"]], folder / "a.jsonl")
        source.update(paths=[str(folder / "*.jsonl*")], watch=False, poll_interval_seconds=0.05)
        if source["mapping"]:
            source["mapping"] = str(EXAMPLES / "mapping.yaml")
        sources.append(source)
    raw.pop("origin")
    raw.update(sources=sources, listen="127.0.0.1:0", state_dir=str(tmp_path / "state"),
               otlp={**raw["otlp"], "enabled": False})
    return config_from_dict(raw, origin="examples/sidecar.yaml")


def test_the_example_sidecar_tails_every_example_input(tmp_path: Path) -> None:
    """The whole path a newcomer takes: the example config, the example files, a tailing sidecar."""
    records = (examples.canonical_records() + examples.litellm_records() + examples.mapping_records()
               + examples.otlp_records())
    sidecar = Sidecar(_example_config(tmp_path), wall_clock=lambda: WALL)
    try:
        drain(sidecar)
        with sidecar.pipeline.lock:
            got = {"months": sidecar.pipeline.aggregates.month_totals(), "rejected_by_reason": {}}
            by_component: dict[str, int] = {}
            for key, tokens in sidecar.pipeline.aggregates.components.items():
                by_component[key.component] = by_component.get(key.component, 0) + tokens
    finally:
        sidecar.close()
    assert_same_totals(got, examples.totals(records))
    month = got["months"]["2026-11"]
    # one record is LiteLLM's response-cache hit: no provider call, so a hit and not a request
    assert (month["requests"], month["response_cache_hits"]) == (20, 1) and len(records) == 21
    assert {k: v for k, v in by_component.items() if v} == {
        k: v for k, v in examples.components(records).items() if v}
