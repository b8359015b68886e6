"""What the exporter should count for a captured dialect fixture, from the fake provider's ground truth.

Independent of the code under test: it reads only the fixture's ``calls`` (what the provider
billed) and the table below of what each instrumentation is KNOWN not to carry or to get wrong
(docs/telemetry.md, from the captured spans). Everything not in the table must be exact.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

TIERS = ("fresh_input", "cache_read", "cache_write_5m", "cache_write_1h", "output")

# dialect fixture -> the instrumentation's own limits
NO_CACHE_DETAIL = {"otel_openai_v2", "otel_openai_v2_latest"}  # no cache attribute: all fresh, flagged
NOT_INSTRUMENTED = {  # endpoints the instrumentation emits no span for
    "otel_openai_v2": {"openai.responses"},
    "otel_openai_v2_latest": {"openai.responses"},
}
NO_TTL_SPLIT = {"openinference_anthropic", "openllmetry_anthropic", "openlit_anthropic"}  # 1h as 5m
STREAM_OUTPUT_PLUS_ONE = {"openllmetry_anthropic"}  # message_start's output count added
STREAM_CACHE_LOST = {"openlit_anthropic"}  # streaming: both cache counts reported as 0, flagged


@dataclass
class Expected:
    requests: int = 0
    tiers: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TIERS, 0))
    flags: Counter[str] = field(default_factory=Counter)
    records: list[dict[str, Any]] = field(default_factory=list)  # for pricing the expectation

    @property
    def exact(self) -> bool:
        return not self.flags


def expected_for(dialect: str, calls: list[dict[str, Any]], ts: float) -> Expected:
    out = Expected()
    for index, call in enumerate(calls):
        if call["endpoint"] in NOT_INSTRUMENTED.get(dialect, set()):
            continue
        out.requests += 1
        usage = dict(call["usage"] or dict.fromkeys(TIERS, 0))
        if dialect in NO_CACHE_DETAIL:
            usage["fresh_input"] += usage["cache_read"]
            usage["cache_read"] = 0
            out.flags["usage_no_cache_detail"] += 1
        if dialect in STREAM_CACHE_LOST and call["stream"]:
            usage["cache_read"] = usage["cache_write_5m"] = usage["cache_write_1h"] = 0
            out.flags["usage_no_cache_detail"] += 1
        elif dialect in NO_TTL_SPLIT and usage["cache_write_5m"] + usage["cache_write_1h"]:
            usage["cache_write_5m"] += usage["cache_write_1h"]
            usage["cache_write_1h"] = 0
            out.flags["usage_no_cache_ttl"] += 1
        if dialect in STREAM_OUTPUT_PLUS_ONE and call["stream"]:
            usage["output"] += 1
        for tier in TIERS:
            out.tiers[tier] += usage[tier]
        provider = call["endpoint"].split(".")[0]
        out.records.append({
            "ts": ts,
            "request_id": f"truth-{index}",
            "model": call["model"],
            "provider": provider,
            "usage": {
                "input_tokens": usage["fresh_input"],
                "cache_read_input_tokens": usage["cache_read"],
                "cache_creation_input_tokens": usage["cache_write_5m"] + usage["cache_write_1h"],
                "cache_creation": {"ephemeral_5m_input_tokens": usage["cache_write_5m"],
                                   "ephemeral_1h_input_tokens": usage["cache_write_1h"]},
                "output_tokens": usage["output"],
            },
        })
    return out


def deviates(dialect: str, calls: list[dict[str, Any]]) -> bool:
    """Whether the instrumentation's numbers differ from the provider's for this case."""
    for call in calls:
        u = call["usage"] or {}
        if call["endpoint"] in NOT_INSTRUMENTED.get(dialect, set()):
            return True
        if dialect in NO_CACHE_DETAIL and u.get("cache_read"):
            return True
        if dialect in NO_TTL_SPLIT and u.get("cache_write_1h"):
            return True
        if dialect in STREAM_OUTPUT_PLUS_ONE | STREAM_CACHE_LOST and call["stream"]:
            return True
    return False
