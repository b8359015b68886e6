"""The shape of a captured case that must not drift between two captures with the same pins.

Response ids, trace ids, timestamps and ports differ on every run; the scope names, span names, the
set of usage-relevant attribute keys, the token counts and the provider's ground truth do not.
"""

from __future__ import annotations

from typing import Any

from tests.live.spans import Span, decoded_spans, usage_attributes

# attributes present or not depending on timing alone
VOLATILE_KEYS = frozenset({"gen_ai.response.time_to_first_chunk", "gen_ai.server.time_to_first_token"})


def _tokens(span: Span) -> dict[str, Any]:
    return {
        k: v
        for k, v in usage_attributes(span).items()
        if "token" in k and isinstance(v, int) and not isinstance(v, bool)
    }


def span_signature(span: Span) -> tuple[Any, ...]:
    keys = tuple(sorted(k for k in usage_attributes(span) if k not in VOLATILE_KEYS))
    return (span.scope, span.name, keys, tuple(sorted(_tokens(span).items())))


def signature(doc: dict[str, Any]) -> dict[str, Any]:
    spans = decoded_spans(doc)
    calls = [{k: v for k, v in call.items() if k != "response_id"} for call in doc["calls"]]
    return {
        "scopes": sorted({s.scope for s in spans}),
        "spans": sorted(span_signature(s) for s in spans),
        "calls": calls,
    }


def payload_signature(lines: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The LiteLLM payload lines: status, provider, tokens and the usage object's keys."""
    out = []
    for line in lines:
        usage = (line.get("metadata") or {}).get("usage_object") or {}
        out.append(
            (
                line.get("status"),
                line.get("custom_llm_provider"),
                line.get("stream"),
                line.get("prompt_tokens"),
                line.get("completion_tokens"),
                tuple(sorted(usage)),
                tuple(sorted(line)),
            )
        )
    return out
