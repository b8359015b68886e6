#!/usr/bin/env python3
"""Generate ``exporter/data/prices.yaml``, the bundled price table.

Why a generator: every version of the table must be complete on its own
(docs/prices.md) and the loader does not implement YAML merge keys, so the
versions are written out in full from one catalogue below plus the few
price changes we know the date of. Edit this file, then run

    python scripts/gen_prices.py            # rewrite exporter/data/prices.yaml
    python scripts/gen_prices.py --check    # exit 1 if the committed file is stale
    python scripts/gen_prices.py --cross-check-genai   # every disagreement with genai-prices

Two community files cross-check the transcription: LiteLLM's (``LITELLM_CHECK``) and
pydantic's genai-prices (``--cross-check-genai``: every catalogue model at every version,
priced by genai-prices at noon UTC of the version's date, outside DeepSeek's windows). Where
they disagree, the provider's published rate (the transcription) wins; the report names the
source of each figure. The check only reports: it never rewrites the bundled table.

Rates are USD per million tokens, list prices of the providers' pricing
pages (``source`` per model). Long-context tiers (e.g. > 200k prompt tokens)
are not modelled: the table carries the base tier, which understates spend
for very long prompts. Batch, flex and priority tiers are not modelled.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "exporter" / "data" / "prices.yaml"
RETRIEVED = "2026-11-30"
LITELLM_CHECK = "litellm 1.110.2 model_prices_and_context_window.json"

OPENAI = "https://openai.com/api/pricing/"
ANTHROPIC = "https://docs.anthropic.com/en/docs/about-claude/pricing"
GOOGLE = "https://ai.google.dev/gemini-api/docs/pricing"
BEDROCK = "https://aws.amazon.com/bedrock/pricing/"
MISTRAL = "https://mistral.ai/pricing#api-pricing"
DEEPSEEK = "https://api-docs.deepseek.com/quick_start/pricing"

# Provider prefixes under which gateways (LiteLLM, OpenRouter-style) name models.
PREFIXES = {
    "openai": ("openai/",),
    "anthropic": ("anthropic/",),
    "google": ("gemini/", "google/"),  # not vertex_ai/: Vertex lists some Gemini models higher
    "bedrock": ("bedrock/",),
    "mistral": ("mistral/",),
    "deepseek": ("deepseek/",),
}

Rates = dict[str, float]


@dataclass
class Model:
    name: str
    provider: str
    family: str
    source: str
    rates: Rates
    aliases: list[str] = field(default_factory=list)
    note: str = ""


def m(name: str, provider: str, family: str, source: str, input: float, output: float,
      cache_read: float | None = None, aliases: tuple[str, ...] = (), note: str = "",
      **extra: float) -> Model:
    rates: Rates = {"input": input, "output": output}
    if cache_read is not None:
        rates["cache_read"] = cache_read
    rates.update(extra)
    return Model(name, provider, family, source, rates, list(aliases), note)


NEWER = f"rate as listed in {LITELLM_CHECK}; not independently checked"

# ---------------------------------------------------------------------------
# The newest prices (the last version). Anthropic cache writes come from the
# family multipliers (1.25x for 5 minutes, 2x for 1 hour) unless given.

CATALOGUE: list[Model] = [
    # OpenAI: cached input is a discount, writes cost the plain input rate.
    m("gpt-4o", "openai", "openai", OPENAI, 2.50, 10.00, 1.25,
      ("gpt-4o-2024-08-06", "gpt-4o-2024-11-20")),
    m("gpt-4o-2024-05-13", "openai", "openai", OPENAI, 5.00, 15.00),
    m("gpt-4o-mini", "openai", "openai", OPENAI, 0.15, 0.60, 0.075, ("gpt-4o-mini-2024-07-18",)),
    m("gpt-4.1", "openai", "openai", OPENAI, 2.00, 8.00, 0.50, ("gpt-4.1-2025-04-14",)),
    m("gpt-4.1-mini", "openai", "openai", OPENAI, 0.40, 1.60, 0.10, ("gpt-4.1-mini-2025-04-14",)),
    m("gpt-4.1-nano", "openai", "openai", OPENAI, 0.10, 0.40, 0.025, ("gpt-4.1-nano-2025-04-14",)),
    m("o1", "openai", "openai", OPENAI, 15.00, 60.00, 7.50, ("o1-2024-12-17",)),
    m("o3-mini", "openai", "openai", OPENAI, 1.10, 4.40, 0.55, ("o3-mini-2025-01-31",)),
    m("o3", "openai", "openai", OPENAI, 2.00, 8.00, 0.50, ("o3-2025-04-16",)),
    m("o3-pro", "openai", "openai", OPENAI, 20.00, 80.00, None, ("o3-pro-2025-06-10",)),
    m("o4-mini", "openai", "openai", OPENAI, 1.10, 4.40, 0.275, ("o4-mini-2025-04-16",)),
    m("gpt-5", "openai", "openai", OPENAI, 1.25, 10.00, 0.125,
      ("gpt-5-2025-08-07", "gpt-5-chat-latest", "gpt-5-codex")),
    m("gpt-5-mini", "openai", "openai", OPENAI, 0.25, 2.00, 0.025, ("gpt-5-mini-2025-08-07",)),
    m("gpt-5-nano", "openai", "openai", OPENAI, 0.05, 0.40, 0.005, ("gpt-5-nano-2025-08-07",)),
    m("gpt-5-pro", "openai", "openai", OPENAI, 15.00, 120.00, None, ("gpt-5-pro-2025-10-06",)),
    m("gpt-5.1", "openai", "openai", OPENAI, 1.25, 10.00, 0.125,
      ("gpt-5.1-2025-11-13", "gpt-5.1-chat-latest", "gpt-5.1-codex")),
    m("gpt-5.2", "openai", "openai", OPENAI, 1.75, 14.00, 0.175,
      ("gpt-5.2-2025-12-11", "gpt-5.2-codex"), NEWER),
    m("gpt-5.4", "openai", "openai", OPENAI, 2.50, 15.00, 0.25, ("gpt-5.4-2026-03-05",), NEWER),
    m("gpt-5.4-mini", "openai", "openai", OPENAI, 0.75, 4.50, 0.075, ("gpt-5.4-mini-2026-03-17",),
      NEWER),
    m("gpt-5.4-nano", "openai", "openai", OPENAI, 0.20, 1.25, 0.02, ("gpt-5.4-nano-2026-03-17",),
      NEWER),
    m("gpt-5.5", "openai", "openai", OPENAI, 5.00, 30.00, 0.50, ("gpt-5.5-2026-04-23",), NEWER),
    # Anthropic, first party.
    m("claude-opus-4-7", "anthropic", "anthropic", ANTHROPIC, 5.00, 25.00, 0.50,
      ("claude-opus-4-7-20260416",), NEWER),
    m("claude-opus-4-6", "anthropic", "anthropic", ANTHROPIC, 5.00, 25.00, 0.50,
      ("claude-opus-4-6-20260205",), NEWER),
    m("claude-opus-4-5", "anthropic", "anthropic", ANTHROPIC, 5.00, 25.00, 0.50,
      ("claude-opus-4-5-20251101",)),
    m("claude-opus-4-1", "anthropic", "anthropic", ANTHROPIC, 15.00, 75.00, 1.50,
      ("claude-opus-4-1-20250805",)),
    m("claude-opus-4-0", "anthropic", "anthropic", ANTHROPIC, 15.00, 75.00, 1.50,
      ("claude-opus-4-20250514", "claude-opus-4")),
    m("claude-sonnet-4-6", "anthropic", "anthropic", ANTHROPIC, 3.00, 15.00, 0.30, (), NEWER),
    m("claude-sonnet-4-5", "anthropic", "anthropic", ANTHROPIC, 3.00, 15.00, 0.30,
      ("claude-sonnet-4-5-20250929",)),
    m("claude-sonnet-4-0", "anthropic", "anthropic", ANTHROPIC, 3.00, 15.00, 0.30,
      ("claude-sonnet-4-20250514", "claude-sonnet-4")),
    m("claude-haiku-4-5", "anthropic", "anthropic", ANTHROPIC, 1.00, 5.00, 0.10,
      ("claude-haiku-4-5-20251001",)),
    m("claude-3-7-sonnet", "anthropic", "anthropic", ANTHROPIC, 3.00, 15.00, 0.30,
      ("claude-3-7-sonnet-20250219", "claude-3-7-sonnet-latest")),
    m("claude-3-5-sonnet", "anthropic", "anthropic", ANTHROPIC, 3.00, 15.00, 0.30,
      ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet-20240620", "claude-3-5-sonnet-latest")),
    m("claude-3-5-haiku", "anthropic", "anthropic", ANTHROPIC, 0.80, 4.00, 0.08,
      ("claude-3-5-haiku-20241022", "claude-3-5-haiku-latest")),
    m("claude-3-opus", "anthropic", "anthropic", ANTHROPIC, 15.00, 75.00, 1.50,
      ("claude-3-opus-20240229", "claude-3-opus-latest")),
    # Haiku 3 is the exception to the 1.25x rule: its page lists $0.30 and $0.50 writes.
    m("claude-3-haiku", "anthropic", "anthropic", ANTHROPIC, 0.25, 1.25, 0.03,
      ("claude-3-haiku-20240307",), "", cache_write_5m=0.30, cache_write_1h=0.50),
    # Google Gemini API (<= 200k prompt tier where the page has two tiers).
    m("gemini-3.1-pro-preview", "google", "google", GOOGLE, 2.00, 12.00, 0.20, (), NEWER),
    m("gemini-3-pro-preview", "google", "google", GOOGLE, 2.00, 12.00, 0.20),
    m("gemini-3-flash-preview", "google", "google", GOOGLE, 0.50, 3.00, 0.05, (), NEWER),
    m("gemini-2.5-pro", "google", "google", GOOGLE, 1.25, 10.00, 0.125),
    m("gemini-2.5-flash", "google", "google", GOOGLE, 0.30, 2.50, 0.03),
    m("gemini-2.5-flash-lite", "google", "google", GOOGLE, 0.10, 0.40, 0.01),
    m("gemini-2.0-flash", "google", "google", GOOGLE, 0.10, 0.40, 0.025, ("gemini-2.0-flash-001",)),
    m("gemini-2.0-flash-lite", "google", "google", GOOGLE, 0.075, 0.30, None,
      ("gemini-2.0-flash-lite-001",)),
    # AWS Bedrock. Global cross-region profiles cost the on-demand rate (aliases);
    # for Claude 4.5 and later, geographic profiles (us., eu., jp., au.) cost 10% more
    # and are their own entries; for older models us./eu./apac. cost the same (aliases).
    m("anthropic.claude-opus-4-5-20251101-v1:0", "bedrock", "anthropic", BEDROCK,
      5.00, 25.00, 0.50, ("global.anthropic.claude-opus-4-5-20251101-v1:0",)),
    m("us.anthropic.claude-opus-4-5-20251101-v1:0", "bedrock", "anthropic", BEDROCK,
      5.50, 27.50, 0.55, ("eu.anthropic.claude-opus-4-5-20251101-v1:0",)),
    m("anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock", "anthropic", BEDROCK,
      3.00, 15.00, 0.30, ("global.anthropic.claude-sonnet-4-5-20250929-v1:0",)),
    m("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock", "anthropic", BEDROCK,
      3.30, 16.50, 0.33, ("eu.anthropic.claude-sonnet-4-5-20250929-v1:0",
                          "jp.anthropic.claude-sonnet-4-5-20250929-v1:0",
                          "au.anthropic.claude-sonnet-4-5-20250929-v1:0")),
    m("anthropic.claude-haiku-4-5-20251001-v1:0", "bedrock", "anthropic", BEDROCK,
      1.00, 5.00, 0.10, ("global.anthropic.claude-haiku-4-5-20251001-v1:0",)),
    m("us.anthropic.claude-haiku-4-5-20251001-v1:0", "bedrock", "anthropic", BEDROCK,
      1.10, 5.50, 0.11, ("eu.anthropic.claude-haiku-4-5-20251001-v1:0",
                         "jp.anthropic.claude-haiku-4-5-20251001-v1:0",
                         "au.anthropic.claude-haiku-4-5-20251001-v1:0",
                         "apac.anthropic.claude-haiku-4-5-20251001-v1:0")),
    m("anthropic.claude-opus-4-1-20250805-v1:0", "bedrock", "anthropic", BEDROCK,
      15.00, 75.00, 1.50, ("us.anthropic.claude-opus-4-1-20250805-v1:0",
                           "eu.anthropic.claude-opus-4-1-20250805-v1:0")),
    m("anthropic.claude-opus-4-20250514-v1:0", "bedrock", "anthropic", BEDROCK,
      15.00, 75.00, 1.50, ("us.anthropic.claude-opus-4-20250514-v1:0",
                           "eu.anthropic.claude-opus-4-20250514-v1:0")),
    m("anthropic.claude-sonnet-4-20250514-v1:0", "bedrock", "anthropic", BEDROCK,
      3.00, 15.00, 0.30, ("us.anthropic.claude-sonnet-4-20250514-v1:0",
                          "eu.anthropic.claude-sonnet-4-20250514-v1:0",
                          "apac.anthropic.claude-sonnet-4-20250514-v1:0",
                          "global.anthropic.claude-sonnet-4-20250514-v1:0")),
    m("anthropic.claude-3-7-sonnet-20250219-v1:0", "bedrock", "anthropic", BEDROCK,
      3.00, 15.00, 0.30, ("us.anthropic.claude-3-7-sonnet-20250219-v1:0",
                          "eu.anthropic.claude-3-7-sonnet-20250219-v1:0")),
    m("anthropic.claude-3-5-sonnet-20241022-v2:0", "bedrock", "anthropic", BEDROCK,
      3.00, 15.00, 0.30, ("us.anthropic.claude-3-5-sonnet-20241022-v2:0",
                          "eu.anthropic.claude-3-5-sonnet-20241022-v2:0")),
    m("anthropic.claude-3-5-sonnet-20240620-v1:0", "bedrock", "anthropic", BEDROCK,
      3.00, 15.00, 0.30, ("us.anthropic.claude-3-5-sonnet-20240620-v1:0",
                          "eu.anthropic.claude-3-5-sonnet-20240620-v1:0")),
    m("anthropic.claude-3-5-haiku-20241022-v1:0", "bedrock", "anthropic", BEDROCK,
      0.80, 4.00, 0.08, ("us.anthropic.claude-3-5-haiku-20241022-v1:0",
                         "eu.anthropic.claude-3-5-haiku-20241022-v1:0")),
    m("anthropic.claude-3-haiku-20240307-v1:0", "bedrock", "anthropic", BEDROCK,
      0.25, 1.25, None, ("us.anthropic.claude-3-haiku-20240307-v1:0",
                         "eu.anthropic.claude-3-haiku-20240307-v1:0")),
    # Amazon Nova: cache reads at 25% of input, cache writes not charged extra.
    m("amazon.nova-premier-v1:0", "bedrock", "amazon", BEDROCK, 2.50, 12.50, 0.625,
      ("us.amazon.nova-premier-v1:0",)),
    m("amazon.nova-pro-v1:0", "bedrock", "amazon", BEDROCK, 0.80, 3.20, 0.20,
      ("us.amazon.nova-pro-v1:0",)),
    m("amazon.nova-lite-v1:0", "bedrock", "amazon", BEDROCK, 0.06, 0.24, 0.015,
      ("us.amazon.nova-lite-v1:0",)),
    m("amazon.nova-micro-v1:0", "bedrock", "amazon", BEDROCK, 0.035, 0.14, 0.00875,
      ("us.amazon.nova-micro-v1:0",)),
    # Mistral (dated ids only: the -latest names move between models).
    m("mistral-large-2512", "mistral", "mistral", MISTRAL, 0.50, 1.50, None, (), NEWER),
    m("mistral-large-2411", "mistral", "mistral", MISTRAL, 2.00, 6.00),
    m("mistral-medium-2505", "mistral", "mistral", MISTRAL, 0.40, 2.00),
    m("mistral-small-2503", "mistral", "mistral", MISTRAL, 0.10, 0.30, None,
      ("mistral-small-2506",)),
    m("codestral-2501", "mistral", "mistral", MISTRAL, 0.30, 0.90, None, ("codestral-2508",)),
    m("ministral-8b-2410", "mistral", "mistral", MISTRAL, 0.10, 0.10),
    m("ministral-3b-2410", "mistral", "mistral", MISTRAL, 0.04, 0.04),
    # DeepSeek: cache hits are the cache_read rate, misses the input rate.
    m("deepseek-chat", "deepseek", "deepseek", DEEPSEEK, 0.28, 0.42, 0.028),
    m("deepseek-reasoner", "deepseek", "deepseek", DEEPSEEK, 0.28, 0.42, 0.028),
]

# ---------------------------------------------------------------------------
# Versions, oldest first. Each maps a model to the rates it had *before* the
# next version (None: the entry is replaced as listed). A model not named in
# an older version's overrides carries its newest rates back to 2024-01-01:
# the table does not know every historical change, and says so in its header.

VERSIONS: list[tuple[str, str, dict[str, Rates]]] = [
    ("2024-01-01",
     "baseline for older traffic: newest list prices, except the changes dated below",
     {
         # gpt-4o pointed at gpt-4o-2024-05-13 until 2024-10-02; no prompt caching before 2024-10-01
         "gpt-4o": {"input": 5.00, "output": 15.00},
         "gpt-4o-mini": {"input": 0.15, "output": 0.60},
         "o1": {"input": 15.00, "output": 60.00},
         "deepseek-chat": {"input": 0.14, "output": 0.28, "cache_read": 0.014},
         "deepseek-reasoner": {"input": 0.55, "output": 2.19, "cache_read": 0.14},
         "o3": {"input": 10.00, "output": 40.00, "cache_read": 2.50},
     }),
    ("2024-10-01",
     "OpenAI prompt caching (50% cached input) and gpt-4o moved to gpt-4o-2024-08-06",
     {
         "deepseek-chat": {"input": 0.14, "output": 0.28, "cache_read": 0.014},
         "deepseek-reasoner": {"input": 0.55, "output": 2.19, "cache_read": 0.14},
         "o3": {"input": 10.00, "output": 40.00, "cache_read": 2.50},
     }),
    ("2025-02-08",
     "DeepSeek-V3 standard pricing after the launch promotion",
     {
         "deepseek-chat": {"input": 0.27, "output": 1.10, "cache_read": 0.07},
         "deepseek-reasoner": {"input": 0.55, "output": 2.19, "cache_read": 0.14},
         "o3": {"input": 10.00, "output": 40.00, "cache_read": 2.50},
     }),
    ("2025-06-10",
     "OpenAI o3 price cut (80%)",
     {
         "deepseek-chat": {"input": 0.27, "output": 1.10, "cache_read": 0.07},
         "deepseek-reasoner": {"input": 0.55, "output": 2.19, "cache_read": 0.14},
     }),
    ("2025-09-29",
     "DeepSeek-V3.2 pricing",
     {}),
    ("2026-11-01",
     f"newest list prices, re-checked on {RETRIEVED} (no change found since 2025-09-29)",
     {}),
]


# ---------------------------------------------------------------------------
# Model-level `tokenizer` keys: models that tokenize text alike share one, so
# `calibrate` measures one billed-token factor per key, never pooling models
# whose counts differ. Only what is known is keyed; a model without a key is
# calibrated on its own. OpenAI: tiktoken's model table (every model here maps
# to o200k_base). Anthropic publishes no tokenizer: the keys below are the
# groupings this table assumes, haiku apart from sonnet/opus (their counts of
# the same text differ) and each newer line apart until measured alike; first
# prefix wins. Gemini 2.x share one SentencePiece vocabulary; Gemini 3 is kept
# apart. DeepSeek's chat and reasoner are one model (V3.2). Amazon Nova and
# Mistral: unknown, no key.

ANTHROPIC_TOKENIZERS: tuple[tuple[str, str], ...] = (
    ("claude-opus-4-7", "anthropic-claude-opus-4-7"),
    ("claude-haiku-4", "anthropic-claude-4-haiku"),
    ("claude-opus-4", "anthropic-claude-4"),
    ("claude-sonnet-4", "anthropic-claude-4"),
    ("claude-3-5-haiku", "anthropic-claude-3-haiku"),
    ("claude-3-haiku", "anthropic-claude-3-haiku"),
    ("claude-3", "anthropic-claude-3"),
)


def tokenizer_of(model: Model) -> str | None:
    """The `tokenizer` key of a catalogue entry, or None when it is not known."""
    if model.provider == "openai":
        return "o200k_base"
    if model.family == "anthropic":
        name = model.name.partition("anthropic.")[2] or model.name  # Bedrock ids: [geo.]anthropic.<model>
        for prefix, key in ANTHROPIC_TOKENIZERS:
            if name.startswith(prefix):
                return key
        raise ValueError(f"{model.name}: no tokenizer key rule matches this Anthropic model")
    if model.name.startswith("gemini-2"):
        return "gemini-2"
    if model.name.startswith("gemini-3"):
        return "gemini-3"
    if model.provider == "deepseek":
        return "deepseek-v3"
    return None


def _fmt(value: float) -> str:
    return repr(float(value))


def _model_lines(model: Model, rates: Rates, aliases: list[str]) -> list[str]:
    lines = []
    if model.note:
        lines.append(f"      # {model.note}")
    lines.append(f"      {json.dumps(model.name)}:")
    lines.append(f"        family: {model.family}")
    lines.append(f"        provider: {model.provider}")
    lines.append(f"        source: \"{model.source}\"")
    lines.append(f"        retrieved: \"{RETRIEVED}\"")
    tokenizer = tokenizer_of(model)
    if tokenizer is not None:
        lines.append(f"        tokenizer: {tokenizer}")
    if aliases:
        lines.append("        aliases: [" + ", ".join(json.dumps(a) for a in aliases) + "]")
    for key in ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h"):
        if key in rates:
            lines.append(f"        {key}: {_fmt(rates[key])}")
    return lines


def _aliases(model: Model, split_gpt4o: bool) -> list[str]:
    own = [a for a in model.aliases if not (split_gpt4o and a == "gpt-4o-2024-08-06")]
    names = [model.name, *own]
    prefixed = [p + n for p in PREFIXES[model.provider] for n in names]
    return own + prefixed


HEADER = f"""\
# Bundled default price table (USD per million tokens). GENERATED by
# scripts/gen_prices.py -- edit that script and rerun it, do not edit this file.
#
# These are list prices as published on each provider's pricing page (the
# `source` of every model), transcribed on {RETRIEVED} (`retrieved`) and
# cross-checked against the community file of {LITELLM_CHECK};
# entries marked "not independently checked" come from that file only.
# They are NOT fetched live: check them against your invoices, and import or
# override your own (`llm-savings-exporter prices import-litellm`, `--prices FILE`).
#
# What the table does not model: long-context tiers (the base tier is used,
# e.g. Gemini 2.5 Pro and Claude Sonnet 4/4.5 above 200k prompt tokens cost
# more), batch/flex/priority tiers, DeepSeek off-peak discounts, regional
# Vertex/Bedrock surcharges other than the Bedrock geographic profiles listed,
# and historical price changes other than the dated versions below (older
# versions otherwise carry the newest rates back so older traffic is priced).
#
# Families: only `anthropic` charges a cache-write premium (5m writes 1.25x,
# 1h writes 2x the input rate); the others get no invented premium. No
# billed_token_factor is shipped: the ratio of a provider's tokens to tiktoken
# counts depends on your traffic; measure it with `llm-savings-exporter calibrate`
# and add it to your own table, e.g.
#   families:
#     anthropic:
#       billed_token_factor:
#         "tiktoken:o200k_base": 1.15   # an estimate, replace by calibrate's figure
#
# `tokenizer` (per model): models that tokenize text alike share a key, and
# `calibrate` measures one factor per key. OpenAI's are tiktoken's names; the
# Anthropic, Gemini and DeepSeek keys are groupings (no public tokenizer):
# haiku is kept apart from sonnet/opus. Models without a key are calibrated alone.
"""

FAMILIES = """\
    families:
      anthropic:
        cache_write_5m_multiplier: 1.25
        cache_write_1h_multiplier: 2.0
      openai: {}
      google: {}
      amazon: {}
      mistral: {}
      deepseek: {}
"""


def render() -> str:
    out = [HEADER, "schema: llm-savings-prices/v1", "versions:"]
    for label, why, overrides in VERSIONS:
        out.append(f"  - version: \"{label}\"")
        out.append(f"    effective_from: \"{label}T00:00:00Z\"")
        out.append(f"    source: \"{why}\"")
        out.append(FAMILIES.rstrip("\n"))
        out.append("    models:")
        split_gpt4o = "gpt-4o" in overrides
        for model in CATALOGUE:
            rates = dict(overrides.get(model.name, model.rates))
            out.extend(_model_lines(model, rates, _aliases(model, split_gpt4o)))
        if split_gpt4o:
            early = Model("gpt-4o-2024-08-06", "openai", "openai", OPENAI,
                          {"input": 2.50, "output": 10.00})
            out.extend(_model_lines(early, early.rates, _aliases(early, False)))
    return "\n".join(out) + "\n"


GENAI_PROVIDER = {"openai": "openai", "anthropic": "anthropic", "google": "google", "bedrock": "aws",
                  "mistral": "mistral", "deepseek": "deepseek"}
_KEYS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")


def _ours(model: Model, rates: Rates) -> tuple[float, ...]:
    """A catalogue entry's five rates as the loader derives them (family multipliers, input fallback)."""
    premium = model.family == "anthropic"
    base = rates["input"]
    return (base, rates["output"], rates.get("cache_read", base),
            rates.get("cache_write_5m", base * 1.25 if premium else base),
            rates.get("cache_write_1h", base * 2.0 if premium else base))


def cross_check_genai() -> list[str]:
    """Every rate where genai-prices disagrees with the transcription, or has no such model."""
    from datetime import UTC, datetime
    from decimal import Decimal

    import genai_prices
    from genai_prices import data_snapshot

    sys.path.insert(0, str(OUT.parent.parent.parent))
    from exporter.prices.importers.genai_prices import _flat, _prices_dict

    snapshot = data_snapshot.get_snapshot()
    found: list[str] = [f"genai-prices {genai_prices.__version__} vs the transcription (provider pages win):"]
    for label, _why, overrides in VERSIONS:
        moment = datetime.fromisoformat(f"{label}T12:00:00").replace(tzinfo=UTC)
        for model in CATALOGUE:
            rates = dict(overrides.get(model.name, model.rates))
            try:
                _, info = snapshot.find_provider_model(model.name, None, GENAI_PROVIDER[model.provider], None)
            except LookupError:
                if label == VERSIONS[-1][0]:
                    found.append(f"  {model.name}: genai-prices does not know this model")
                continue
            theirs = _flat(_prices_dict(info.get_prices(moment)), None)
            for key, mine, other in zip(_KEYS, _ours(model, rates), theirs, strict=True):
                if abs(Decimal(repr(mine)) - other) > Decimal("1e-9"):
                    found.append(f"  {label} {model.name} {key}: ours {mine:g} ({model.source}) vs "
                                 f"genai-prices {other} ({info.id})")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed file is stale")
    parser.add_argument("--cross-check-genai", action="store_true",
                        help="print every disagreement with genai-prices (needs the genai-prices extra); "
                             "writes nothing")
    args = parser.parse_args()
    if args.cross_check_genai:
        print("\n".join(cross_check_genai()))
        return 0
    text = render()
    if args.check:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is stale: run python scripts/gen_prices.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
