"""Who the simulated gateway serves: the models (with their providers' usage shapes) and the tenants.

The catalogue changes when a provider or a pricing case is added; how a turn is
generated (``simulator``) does not. Names must resolve in the bundled price
table (a test checks it), except :data:`UNPRICED_MODEL`: ``llama-3.3-70b-instruct``
served by a self-hosted vLLM is deliberately absent from it, so the demo shows
unpriced traffic.
"""

from __future__ import annotations

from dataclasses import dataclass

UNPRICED_MODEL = "llama-3.3-70b-instruct"


@dataclass(frozen=True)
class ModelSpec:
    """A model as the gateway names it, with the usage shape its provider returns."""

    model: str
    provider: str
    shape: str  # openai_chat | openai_responses | anthropic | gemini | bedrock | deepseek | plain
    token_factor: float  # provider tokens per o200k token for the same text
    output_mean: int  # mean completion tokens
    min_cache: int = 1024  # shortest prefix the provider caches
    route: str = "/v1/chat/completions"
    thinking: bool = False


# Names must resolve in exporter/data/prices.yaml (tests check it), except UNPRICED_MODEL.
MODELS: dict[str, ModelSpec] = {
    spec.model: spec
    for spec in (
        ModelSpec("gpt-4.1", "openai", "openai_chat", 1.0, 420),
        ModelSpec("gpt-4o-mini", "openai", "openai_chat", 1.0, 260),
        ModelSpec(
            "gpt-5-mini",
            "openai",
            "openai_responses",
            1.0,
            700,
            route="/v1/responses",
            thinking=True,
        ),
        ModelSpec("claude-sonnet-4-5", "anthropic", "anthropic", 1.18, 520, route="/v1/messages"),
        ModelSpec(
            "anthropic/claude-sonnet-4-5", "anthropic", "anthropic", 1.18, 520, route="/v1/messages"
        ),
        ModelSpec(
            "claude-haiku-4-5", "anthropic", "anthropic", 1.18, 300, 2048, route="/v1/messages"
        ),
        ModelSpec(
            "gemini-2.5-pro", "google", "gemini", 1.07, 600, 2048, ":generateContent", thinking=True
        ),
        ModelSpec("gemini-2.5-flash", "google", "gemini", 1.07, 350, 1024, ":generateContent"),
        ModelSpec(
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "bedrock",
            "bedrock",
            1.18,
            500,
            route="/model/converse",
        ),
        ModelSpec("amazon.nova-pro-v1:0", "bedrock", "bedrock", 1.05, 300, route="/model/converse"),
        ModelSpec("deepseek-chat", "deepseek", "deepseek", 1.1, 380, 64),
        ModelSpec(UNPRICED_MODEL, "vllm", "plain", 1.12, 330),
    )
}


@dataclass(frozen=True)
class TenantSpec:
    """A tenant: its share of traffic, its models and count methods, and how its proxy behaves."""

    name: str
    weight: float
    models: tuple[tuple[str, float], ...]
    methods: tuple[tuple[str, float], ...]
    budget: int  # o200k tokens of context the proxy keeps before it trims history
    shadow: bool = False
    ttl_1h_share: float = 0.0  # sessions that cache their system prompt for 1h (Anthropic)
    attributes_whitespace: bool = True  # False: that proxy step is left unattributed


TENANTS: tuple[TenantSpec, ...] = (
    TenantSpec(
        "acme-search",
        3.0,
        (("gpt-4.1", 3), ("gpt-4o-mini", 2), ("claude-sonnet-4-5", 2), ("gemini-2.5-flash", 1)),
        (("tiktoken:o200k_base", 0.92), ("estimate:chars/4", 0.08)),
        32_000,
    ),
    TenantSpec(
        "globex-support",
        2.0,
        (("claude-haiku-4-5", 3), ("anthropic/claude-sonnet-4-5", 2), ("gemini-2.5-flash", 1)),
        (("provider", 1.0),),
        24_000,
        ttl_1h_share=0.6,
    ),
    TenantSpec(
        "initech-agents",
        3.0,
        (
            ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", 3),
            ("gemini-2.5-pro", 2),
            ("gpt-5-mini", 2),
            ("deepseek-chat", 1),
            ("amazon.nova-pro-v1:0", 1),
        ),
        (("tiktoken:o200k_base", 0.9), ("provider", 0.1)),
        60_000,
    ),
    TenantSpec(
        "umbrella-labs",
        1.5,
        (("gpt-4.1", 2), ("claude-sonnet-4-5", 2), ("deepseek-chat", 1)),
        (("tiktoken:o200k_base", 1.0),),
        40_000,
        shadow=True,
    ),
    TenantSpec(
        "hooli-dev",
        1.0,
        ((UNPRICED_MODEL, 3), ("gpt-4o-mini", 1), ("gemini-2.5-flash", 1)),
        (("estimate:chars/4", 0.5), ("tiktoken:o200k_base", 0.5)),
        16_000,
        attributes_whitespace=False,
    ),
)


__all__ = ["MODELS", "TENANTS", "UNPRICED_MODEL", "ModelSpec", "TenantSpec"]
