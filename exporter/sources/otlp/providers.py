"""Provider names as instrumentations send them -> the price table's provider families. Pure.

Semantic-convention names (``aws.bedrock``, ``gcp.gemini``, ``az.ai.openai``) and the ones
instrumentations use fold to the families the price table names; any other name is kept,
trimmed and lowercased. Remembered per name as sent, for at most ``_MAX_FOLDED`` names
(clients choose them).
"""

from __future__ import annotations

# Semconv / instrumentation provider names -> the price table's families.
PROVIDER_ALIASES: dict[str, str] = {
    "aws.bedrock": "bedrock",
    "aws": "bedrock",
    "bedrock": "bedrock",
    "gcp.gemini": "google",
    "gcp.vertex_ai": "google",
    "gcp.gen_ai": "google",
    "gemini": "google",
    "vertex_ai": "google",
    "vertexai": "google",
    "google.ai.studio": "google",
    "google": "google",
    "az.ai.openai": "azure",
    "azure.ai.openai": "azure",
    "az.ai.inference": "azure",
    "azure.ai.inference": "azure",
    "azure": "azure",
    "mistral_ai": "mistral",
    "mistralai": "mistral",
    "x_ai": "xai",
    "x-ai": "xai",
}


_FOLDED: dict[str, str] = {}  # provider name as sent -> folded; bounded (clients choose the names)
_MAX_FOLDED = 4096


def normalise_provider(name: str) -> str:
    folded = _FOLDED.get(name)
    if folded is None:
        lowered = name.strip().lower()
        folded = PROVIDER_ALIASES.get(lowered, lowered)
        if len(_FOLDED) < _MAX_FOLDED:
            _FOLDED[name] = folded
    return folded


__all__ = ["PROVIDER_ALIASES", "normalise_provider"]
