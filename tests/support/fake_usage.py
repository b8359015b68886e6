"""Scenarios, ground-truth usage and the provider-shaped usage objects of the fake provider.

Every scenario fixes the token counts a call reports. The ground truth is normalised to
``fresh_input, cache_read, cache_write_5m, cache_write_1h, output``: *fresh* is input that was
neither read from nor written to a cache.

- OpenAI reports no cache writes: writes are billed as ordinary input, so for OpenAI endpoints the
  scenario's write tokens are folded into ``fresh_input`` and ``prompt_tokens``/``input_tokens``
  = fresh + cached (OpenAI's input count INCLUDES cached tokens).
- Anthropic's ``input_tokens`` EXCLUDES cache reads and writes, which come in
  ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` (5m + 1h, split in ``cache_creation``).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

SCENARIO_HEADER = "x-fake-scenario"
SCENARIO_MARKER = re.compile(r"\[scenario:([a-z0-9_]+)\]")


@dataclass(frozen=True)
class Usage:
    fresh_input: int
    cache_read: int
    cache_write_5m: int
    cache_write_1h: int
    output: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


# reasoning tokens (part of output) reported by the Responses API for each scenario
REASONING: dict[str, int] = {"plain": 0, "cache_read": 32, "cache_write_5m": 0, "cache_write_1h": 0, "mixed": 16}

SCENARIOS: dict[str, Usage] = {
    "plain": Usage(fresh_input=1200, cache_read=0, cache_write_5m=0, cache_write_1h=0, output=150),
    "cache_read": Usage(fresh_input=200, cache_read=3000, cache_write_5m=0, cache_write_1h=0, output=120),
    "cache_write_5m": Usage(fresh_input=300, cache_read=0, cache_write_5m=2500, cache_write_1h=0, output=100),
    "cache_write_1h": Usage(fresh_input=250, cache_read=0, cache_write_5m=0, cache_write_1h=1800, output=90),
    "mixed": Usage(fresh_input=150, cache_read=2000, cache_write_5m=600, cache_write_1h=400, output=80),
}
ERROR_SCENARIO = "error"  # answered with HTTP 400 in the provider's error shape, recorded with usage null


def openai_truth(scenario: str) -> Usage:
    """What an OpenAI endpoint reports for the scenario: writes are plain input there."""
    u = SCENARIOS[scenario]
    return Usage(u.fresh_input + u.cache_write_5m + u.cache_write_1h, u.cache_read, 0, 0, u.output)


def anthropic_truth(scenario: str) -> Usage:
    return SCENARIOS[scenario]


def chat_usage(u: Usage) -> dict[str, Any]:
    prompt = u.fresh_input + u.cache_read
    return {
        "prompt_tokens": prompt,
        "completion_tokens": u.output,
        "total_tokens": prompt + u.output,
        "prompt_tokens_details": {"cached_tokens": u.cache_read, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def responses_usage(u: Usage, reasoning: int) -> dict[str, Any]:
    inp = u.fresh_input + u.cache_read
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": u.cache_read},
        "output_tokens": u.output,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": inp + u.output,
    }


def anthropic_usage(u: Usage, output_tokens: int | None = None) -> dict[str, Any]:
    return {
        "input_tokens": u.fresh_input,
        "cache_creation_input_tokens": u.cache_write_5m + u.cache_write_1h,
        "cache_read_input_tokens": u.cache_read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": u.cache_write_5m,
            "ephemeral_1h_input_tokens": u.cache_write_1h,
        },
        "output_tokens": u.output if output_tokens is None else output_tokens,
        "service_tier": "standard",
    }


def _texts(content: Any) -> list[str]:
    """The text pieces of a message content: a string or a list of parts/blocks."""
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
    return out


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message of a chat, responses or messages request."""
    items: Any = body.get("messages")
    if items is None:
        items = body.get("input")
        if isinstance(items, str):
            return items
    if not isinstance(items, list):
        return ""
    for item in reversed(items):
        if isinstance(item, dict) and item.get("role", "user") == "user":
            return "\n".join(_texts(item.get("content")))
    return ""


def scenario_of(body: dict[str, Any], header: str | None) -> str:
    """The scenario named by the header, else by the last ``[scenario:NAME]`` marker, else plain."""
    if header:
        return header.strip()
    found = SCENARIO_MARKER.findall(last_user_text(body))
    return found[-1] if found else "plain"
