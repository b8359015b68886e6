"""LiteLLM StandardLoggingPayload -> canonical record v1, and through replay end to end."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.cli.main import main
from exporter.engine.records import Record, Rejection, parse_object
from exporter.sources.formats.errors import FormatError
from exporter.sources.formats.litellm import detect, to_canonical, usage_from_chat
from exporter.sources.formats.registry import make_line_decoder

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "litellm_payloads.jsonl"


def payloads() -> dict[str, dict]:
    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    return {row["id"]: row for row in rows}


def record_of(payload: dict) -> Record:
    result = parse_object(to_canonical(payload))
    assert isinstance(result, Record), result
    return result


def tiers(record: Record) -> tuple[int, int, int, int, int]:
    assert record.usage is not None
    u = record.usage
    return (u.fresh_input, u.cache_read, u.cache_write_5m, u.cache_write_1h, u.output)


def test_openai_with_cached_tokens():
    record = record_of(payloads()["chatcmpl-openai-1"])
    assert record.ts == 1764547200.25
    assert record.request_id == "chatcmpl-openai-1"
    assert (record.model, record.provider, record.tenant) == ("gpt-4o", "openai", "search")
    assert record.source_dialect == "litellm"
    # prompt 5400 includes the 4096 cached: fresh is the rest, nothing counted twice
    assert tiers(record) == (1304, 4096, 0, 0, 212)
    assert record.usage is not None and record.usage.prompt_tokens == 5400


def test_anthropic_with_cache_creation_split():
    record = record_of(payloads()["chatcmpl-anthropic-1"])
    assert (record.model, record.provider, record.tenant) == (
        "claude-sonnet-4-5-20250929",
        "anthropic",
        "agents",
    )
    # LiteLLM's prompt_tokens (31250) = 250 fresh + 20000 read + 11000 written (1000 5m + 10000 1h)
    assert tiers(record) == (250, 20000, 1000, 10000, 530)
    assert record.usage is not None and record.usage.prompt_tokens == 31250


def test_bedrock_write_without_split_is_5m_and_team_id_is_the_fallback_tenant():
    record = record_of(payloads()["chatcmpl-bedrock-1"])
    assert record.model == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert record.tenant == "team-bedrock"
    assert tiers(record) == (1000, 0, 8000, 0, 100)


def test_gemini_cached_inside_prompt():
    assert tiers(record_of(payloads()["chatcmpl-gemini-1"])) == (3000, 9000, 0, 0, 800)


def test_litellm_response_cache_hit_keeps_the_cached_usage():
    payload = payloads()["chatcmpl-openai-1_cache_hit1764561600.5"]
    assert to_canonical(payload)["response_cache"] == "unspecified"
    record = record_of(payload)
    cached = payload["metadata"]["usage_object"]
    assert tiers(record) == (cached["prompt_tokens"], 0, 0, 0, cached["completion_tokens"])
    assert "response_cache_hit" in record.flags and record.response_cache == "unspecified"
    assert record.request_id == "chatcmpl-openai-1_cache_hit1764561600.5"


@pytest.mark.parametrize(("cache_type", "kind"), [
    ("redis-semantic", "semantic"), ("qdrant-semantic", "semantic"), ("local", "exact"), ("redis", "exact"),
    ("disk", "exact"), ("s3", "exact"), (None, "unspecified"), ("something-new", "unspecified"), (7, "unspecified"),
])
def test_cache_kind_of_litellm_cache_types(cache_type, kind):
    payload = dict(payloads()["chatcmpl-openai-1_cache_hit1764561600.5"], cache_type=cache_type)
    assert to_canonical(payload)["response_cache"] == kind


def test_model_group_is_the_requested_model_and_model_the_deployment():
    payload = dict(payloads()["chatcmpl-openai-1"], model="gpt-4o-mini", model_group="smart")
    canonical = to_canonical(payload)
    assert (canonical["model"], canonical["requested_model"]) == ("gpt-4o-mini", "smart")
    assert "requested_model" not in to_canonical(dict(payload, model_group=""))
    assert "response_cache" not in canonical


def test_service_tier_from_the_response_then_cost_breakdown():
    base = payloads()["chatcmpl-openai-1"]
    assert to_canonical(dict(base, response={"service_tier": "flex"}))["service_tier"] == "flex"
    both = dict(base, response={"service_tier": None}, cost_breakdown={"service_tier": "priority"})
    assert to_canonical(both)["service_tier"] == "priority"
    with pytest.raises(FormatError) as bad:
        to_canonical(dict(base, response={"service_tier": 3}))
    assert bad.value.reason == "invalid_field" and "response.service_tier" in str(bad.value)


def test_failed_call_is_a_record_with_zero_usage():
    record = record_of(payloads()["chatcmpl-fail-1"])
    assert tiers(record) == (0, 0, 0, 0, 0)


def test_savings_fields_from_requester_metadata():
    record = record_of(payloads()["chatcmpl-openai-2"])
    assert (record.tokens_before, record.tokens_after) == (9000, 3000)
    assert record.count_method == "tiktoken:o200k_base"
    assert record.components == (("dedupe_tool_output", 6000),)


def test_savings_fields_from_spend_logs_metadata():
    payload = copy.deepcopy(payloads()["chatcmpl-openai-1"])
    payload["metadata"]["spend_logs_metadata"] = {
        "llm_savings": {"tokens_before": 10, "tokens_after": 4}
    }
    record = record_of(payload)
    assert (record.tokens_before, record.tokens_after) == (10, 4)


def test_no_prompt_or_response_text_reaches_the_record():
    for payload in payloads().values():
        text = json.dumps(to_canonical(payload))
        assert "SECRET" not in text
        assert "messages" not in text


def test_usage_fallback_order():
    payload = copy.deepcopy(payloads()["chatcmpl-openai-1"])
    payload["metadata"]["usage_object"] = None
    assert tiers(record_of(payload)) == (1304, 4096, 0, 0, 212)  # hidden_params.usage_object
    payload["hidden_params"]["usage_object"] = None
    assert tiers(record_of(payload)) == (1304, 4096, 0, 0, 212)  # response.usage
    del payload["response"]["usage"]
    # only the top-level counts are left: no cache breakdown is known
    assert tiers(record_of(payload)) == (5400, 0, 0, 0, 212)


def test_responses_api_block_in_response_is_passed_to_the_shape_detector():
    payload = copy.deepcopy(payloads()["chatcmpl-fail-1"])
    payload.update(
        status="success", call_type="aresponses", prompt_tokens=None, completion_tokens=None
    )
    payload["response"] = {
        "usage": {
            "input_tokens": 900,
            "output_tokens": 40,
            "input_tokens_details": {"cached_tokens": 512},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
    }
    record = record_of(payload)
    assert tiers(record) == (388, 512, 0, 0, 40)
    assert record.usage is not None and record.usage.shape == "openai_responses"


def test_model_fallbacks():
    payload = copy.deepcopy(payloads()["chatcmpl-openai-1"])
    payload["model"] = ""
    assert record_of(payload).model == "gpt-4o"  # model_group
    payload["model_group"] = None
    payload["hidden_params"]["litellm_model_name"] = "gpt-4o-2024-08-06"
    assert record_of(payload).model == "gpt-4o-2024-08-06"
    payload["hidden_params"]["litellm_model_name"] = None
    rejected = parse_object(to_canonical(payload))
    assert isinstance(rejected, Rejection) and rejected.reason == "missing_model"


def test_missing_start_time_is_rejected_by_the_record_parser():
    payload = copy.deepcopy(payloads()["chatcmpl-openai-1"])
    del payload["startTime"]
    rejected = parse_object(to_canonical(payload))
    assert isinstance(rejected, Rejection) and rejected.reason == "missing_ts"


@pytest.mark.parametrize(
    ("usage", "reason"),
    [
        (
            {
                "prompt_tokens": 10,
                "completion_tokens": 1,
                "prompt_tokens_details": {"cached_tokens": 11},
            },
            "inconsistent_usage",
        ),
        (
            {
                "prompt_tokens": 100,
                "completion_tokens": 1,
                "prompt_tokens_details": {"cached_tokens": 60},
                "cache_read_input_tokens": 50,
            },
            "inconsistent_usage",
        ),
        (
            {
                "prompt_tokens": 100,
                "completion_tokens": 1,
                "prompt_tokens_details": {"cached_tokens": 60, "cache_creation_tokens": 50},
            },
            "inconsistent_usage",
        ),
        ({"prompt_tokens": -1, "completion_tokens": 1}, "invalid_count"),
        ({"prompt_tokens": 1.5, "completion_tokens": 1}, "invalid_count"),
        ({"prompt_tokens": "12", "completion_tokens": 1}, "invalid_count"),
    ],
)
def test_contradictory_or_bad_usage_is_refused(usage, reason):
    payload = copy.deepcopy(payloads()["chatcmpl-openai-1"])
    payload["metadata"]["usage_object"] = usage
    with pytest.raises(FormatError) as info:
        to_canonical(payload)
    assert info.value.reason == reason


def test_usage_object_of_the_wrong_type_is_refused():
    payload = copy.deepcopy(payloads()["chatcmpl-openai-1"])
    payload["metadata"]["usage_object"] = [1, 2]
    with pytest.raises(FormatError) as info:
        to_canonical(payload)
    assert info.value.reason == "invalid_usage"


def test_non_object_is_refused():
    with pytest.raises(FormatError) as info:
        to_canonical([1])
    assert info.value.reason == "not_object"


def test_other_cache_ttls_count_as_1h_writes():
    block = usage_from_chat(
        {
            "prompt_tokens": 100,
            "completion_tokens": 5,
            "prompt_tokens_details": {
                "cached_tokens": 0,
                "cache_creation_tokens": 90,
                "cache_creation_token_details": {
                    "ephemeral_5m_input_tokens": 10,
                    "ephemeral_30m_input_tokens": 30,
                    "ephemeral_1h_input_tokens": 50,
                },
            },
        }
    )
    assert block["cache_creation"] == {
        "ephemeral_5m_input_tokens": 10,
        "ephemeral_1h_input_tokens": 80,
    }
    assert block["input_tokens"] == 10


def test_detect():
    for payload in payloads().values():
        assert detect(payload)
    assert not detect({"ts": 1, "model": "m", "startTime": 1, "call_type": "x"})  # canonical wins
    assert not detect({"startTime": 1, "model": "m"})
    assert not detect([])
    assert not detect("startTime")


@given(
    prompt=st.integers(0, 10**7),
    read=st.integers(0, 10**7),
    w5=st.integers(0, 10**7),
    w1h=st.integers(0, 10**7),
    out=st.integers(0, 10**7),
)
def test_tiers_always_add_up_to_prompt_tokens(prompt, read, w5, w1h, out):
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": out,
        "prompt_tokens_details": {
            "cached_tokens": read,
            "cache_creation_tokens": w5 + w1h,
            "cache_creation_token_details": {
                "ephemeral_5m_input_tokens": w5,
                "ephemeral_1h_input_tokens": w1h,
            },
        },
    }
    if read + w5 + w1h > prompt:
        with pytest.raises(FormatError):
            usage_from_chat(usage)
        return
    result = parse_object({"ts": 1, "model": "m", "usage": usage_from_chat(usage)})
    assert isinstance(result, Record) and result.usage is not None
    assert result.usage.prompt_tokens == prompt
    assert (result.usage.cache_read, result.usage.cache_write_5m, result.usage.cache_write_1h) == (
        read,
        w5,
        w1h,
    )


# ---------------------------------------------------------------------------
# end to end through the lead's decoder and replay


def test_decoders_litellm_and_auto():
    lines = FIXTURE.read_bytes().splitlines()
    for fmt in ("litellm", "auto"):
        decode = make_line_decoder(fmt)
        results = [decode(line) for line in lines]
        assert all(isinstance(r, Record) for r in results), (fmt, results)
    auto = make_line_decoder("auto")
    canonical = auto(b'{"ts": 1764547200, "model": "gpt-4o", "request_id": "c1"}')
    assert isinstance(canonical, Record) and canonical.source_dialect is None
    bad = make_line_decoder("litellm")(
        json.dumps(
            {
                "startTime": 1764547200,
                "call_type": "acompletion",
                "model": "gpt-4o",
                "metadata": {
                    "usage_object": {
                        "prompt_tokens": 1,
                        "prompt_tokens_details": {"cached_tokens": 2},
                    }
                },
            }
        ).encode()
    )
    assert isinstance(bad, Rejection) and bad.reason == "inconsistent_usage"


def test_replay_litellm_totals_by_hand(capsys):
    # The response-cache hit line carries the usage of the call that paid (what its answer would
    # have billed): it is avoided spend, in the response-cache counters, not in requests or spend.
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    assert sum(json.loads(line).get("cache_hit") is True for line in lines) == 1 and len(lines) == 7
    assert main(["replay", str(FIXTURE), "--format", "litellm", "--json"]) == 0
    month = json.loads(capsys.readouterr().out)["months"]["2025-12"]
    assert month["requests"] == 6 and month["rejected"] == 0 and month["unpriced"] == 0
    assert (month["response_cache_hits"], month["response_cache_unpriced_hits"]) == (1, 0)
    assert month["response_cache_avoided_usd"] > 0
    assert month["fresh_input_tokens"] == 1304 + 250 + 1000 + 3000 + 3000
    assert month["cache_read_tokens"] == 4096 + 20000 + 9000
    assert month["cache_write_tokens"] == 1000 + 10000 + 8000
    assert month["output_tokens"] == 212 + 530 + 100 + 800 + 150
    spend = (
        (1304 * 2.5 + 4096 * 1.25 + 212 * 10)  # gpt-4o
        + (
            250 * 3 + 20000 * 0.3 + 1000 * 3.75 + 10000 * 6 + 530 * 15
        )  # sonnet 4.5, 5m and 1h writes
        + (1000 * 3.3 + 8000 * 4.125 + 100 * 16.5)  # Bedrock us. geographic profile (+10%)
        + (3000 * 0.3 + 9000 * 0.03 + 800 * 2.5)  # gemini-2.5-flash
        + (3000 * 0.15 + 150 * 0.6)  # gpt-4o-mini
    ) / 1e6
    assert month["spend_usd"] == pytest.approx(spend, abs=1e-9)
    cache = (4096 * 1.25 + 20000 * 2.7 - 1000 * 0.75 - 10000 * 3 - 8000 * 0.825 + 9000 * 0.27) / 1e6
    assert month["cache_savings_usd"] == pytest.approx(cache, abs=1e-9)
    assert month["tokens_saved"] == 6000
    assert month["usd_saved"] == pytest.approx(6000 * 0.15 / 1e6)
