"""Convert LiteLLM's community price file into a price table v1 (docs/prices.md).

LiteLLM keeps ``model_prices_and_context_window.json``: one object per model
name with USD *per token* rates. This module turns it into our per-million
YAML, one version, pure (data in, text out); ``prices_cli`` does the I/O.

What is taken, per entry:

=========================================  ==================================
LiteLLM key                                price table v1
=========================================  ==================================
the entry's name                           model name (quoted; may hold ``:``)
``litellm_provider``                       ``provider``; also the family (below)
``input_cost_per_token``                   ``input`` (required)
``output_cost_per_token``                  ``output`` (required)
``cache_read_input_token_cost``            ``cache_read`` (else
                                           ``input_cost_per_token_cache_hit``)
``cache_creation_input_token_cost``        ``cache_write_5m`` (0 is read as
                                           "not listed": no invented discount)
``cache_creation_input_token_cost_above_1hr``  ``cache_write_1h``
``mode``                                   only ``chat``, ``completion``,
                                           ``responses`` are priced
=========================================  ==================================

Families: a model whose name contains ``claude`` is ``anthropic`` wherever it
is hosted (Bedrock, Vertex, Azure), so an unlisted cache-write rate gets
Anthropic's documented multipliers; ``amazon.nova`` models are ``amazon``;
otherwise the provider's family from ``PROVIDER_FAMILY``, else the provider
name itself (a family with no premium). Rates are converted through the
shortest decimal text of each float, so ``2.5e-06`` becomes ``2.5`` and never
``2.4999999999999996``. Everything skipped is counted by reason.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from exporter.prices.importers.yamltext import quoted

CHAT_MODES = frozenset({"chat", "completion", "responses"})

PROVIDER_FAMILY = {
    "openai": "openai",
    "text-completion-openai": "openai",
    "azure": "openai",
    "azure_text": "openai",
    "anthropic": "anthropic",
    "vertex_ai-anthropic_models": "anthropic",
    "gemini": "google",
    "vertex_ai-language-models": "google",
    "deepseek": "deepseek",
    "mistral": "mistral",
    "bedrock": "bedrock",
    "bedrock_converse": "bedrock",
}

ANTHROPIC_FAMILY = {"cache_write_5m_multiplier": "1.25", "cache_write_1h_multiplier": "2.0"}

_QUANTUM = Decimal("1e-9")  # per-million rates finer than a billionth of a dollar are float noise
_FAMILY_NAME = re.compile(r"[^a-z0-9_.-]+")


class LiteLLMImportError(ValueError):
    """The input is not a LiteLLM price file at all."""


@dataclass
class ImportResult:
    text: str
    models: int
    skipped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    notes: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        """One line per reason, for the CLI's report."""
        lines = [f"converted {self.models} models, skipped {sum(self.skipped.values())}"]
        for reason, count in sorted(self.skipped.items(), key=lambda item: (-item[1], item[0])):
            sample = ", ".join(self.examples.get(reason, [])[:3])
            example = f"  (e.g. {sample})" if sample else ""
            lines.append(f"  skipped {count:5d}  {reason}{example}")
        for note, count in sorted(self.notes.items()):
            lines.append(f"  note    {count:5d}  {note}")
        return "\n".join(lines)


def per_million(value: Any) -> Decimal | None:
    """USD per token -> USD per million tokens, exactly; None for a non-number or negative."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    try:
        rate = Decimal(repr(value)).scaleb(6).quantize(_QUANTUM)
    except InvalidOperation:  # astronomically large: not a price
        return None
    return rate.normalize() if rate else Decimal(0)


def format_rate(rate: Decimal) -> str:
    """Fixed-point text YAML reads as a float (never ``1E-7``, which YAML 1.1 reads as a string)."""
    text = format(rate, "f")
    return text if "." in text else text + ".0"


def family_of(name: str, provider: str) -> str:
    lowered = name.lower()
    if "claude" in lowered:
        return "anthropic"
    if "amazon.nova" in lowered:
        return "amazon"
    family = PROVIDER_FAMILY.get(provider)
    if family:
        return family
    return _FAMILY_NAME.sub("_", provider.lower()).strip("_") or "other"



def convert(
    data: Any,
    *,
    version: str,
    effective_from: str,
    source: str = "LiteLLM model_prices_and_context_window.json",
    retrieved: str | None = None,
) -> ImportResult:
    """LiteLLM's decoded JSON -> the text of a one-version price table v1."""
    if not isinstance(data, dict):
        raise LiteLLMImportError(f"expected a JSON object of models, got {type(data).__name__}")
    result = ImportResult(text="", models=0)

    def skip(reason: str, name: str) -> None:
        result.skipped[reason] += 1
        bucket = result.examples.setdefault(reason, [])
        if len(bucket) < 5:
            bucket.append(name)

    models: dict[str, tuple[str, str, dict[str, Decimal]]] = {}
    for name, entry in data.items():
        if name == "sample_spec":
            continue  # LiteLLM's documentation entry, not a model
        if not isinstance(entry, dict):
            skip("not an object", name)
            continue
        if not name.strip():
            skip("empty model name", name)
            continue
        mode = entry.get("mode")
        if mode is None:
            skip("no mode", name)
            continue
        if mode not in CHAT_MODES:
            skip(f"mode {mode!s} (not chat/completion/responses)", name)
            continue
        provider = entry.get("litellm_provider")
        if not isinstance(provider, str) or not provider:
            skip("no litellm_provider", name)
            continue
        if "input_cost_per_token" not in entry:
            skip("no input_cost_per_token", name)
            continue
        if "output_cost_per_token" not in entry:
            skip("no output_cost_per_token", name)
            continue
        rates: dict[str, Decimal] = {}
        bad = False
        required = (("input", "input_cost_per_token"), ("output", "output_cost_per_token"))
        for ours, theirs in required:
            rate = per_million(entry[theirs])
            if rate is None:
                bad = True
                break
            rates[ours] = rate
        if bad:
            skip("input/output cost is not a non-negative number", name)
            continue
        read = entry.get("cache_read_input_token_cost", entry.get("input_cost_per_token_cache_hit"))
        optional = (
            ("cache_read", read),
            ("cache_write_5m", entry.get("cache_creation_input_token_cost")),
            ("cache_write_1h", entry.get("cache_creation_input_token_cost_above_1hr")),
        )
        for ours, raw in optional:
            if raw is None:
                continue
            rate = per_million(raw)
            if rate is None:
                result.notes[f"{ours} ignored: not a non-negative number"] += 1
                continue
            if ours.startswith("cache_write") and rate == 0 and rates["input"] > 0:
                result.notes[f"{ours} of 0 ignored (read as not listed)"] += 1
                continue
            rates[ours] = rate
        models[name] = (provider, family_of(name, provider), rates)

    aliases: dict[str, list[str]] = {}
    taken = set(models)
    for name in sorted(models):
        provider = models[name][0]
        if "/" in name:
            continue
        alias = f"{provider}/{name}"
        if alias not in taken:
            taken.add(alias)
            aliases.setdefault(name, []).append(alias)

    families = sorted({family for _, family, _ in models.values()})
    out = [
        f"# Converted from {source} by `llm-savings-exporter prices import-litellm`.",
        "# LiteLLM's community file, per token, converted to USD per million tokens.",
        "# Check against your invoices; long-context/batch/priority tiers are not imported.",
        "schema: llm-savings-prices/v1",
        "versions:",
        f"  - version: {quoted(version)}",
        f"    effective_from: {quoted(effective_from)}",
        f"    source: {quoted(source)}",
        "    families:" if families else "    families: {}",
    ]
    for family in families:
        if family == "anthropic":
            out.append(f"      {quoted(family)}:")
            out.extend(f"        {key}: {value}" for key, value in ANTHROPIC_FAMILY.items())
        else:
            out.append(f"      {quoted(family)}: {{}}")
    out.append("    models:" if models else "    models: {}")
    for name in sorted(models):
        provider, family, rates = models[name]
        out.append(f"      {quoted(name)}:")
        out.append(f"        family: {quoted(family)}")
        out.append(f"        provider: {quoted(provider)}")
        out.append(f"        source: {quoted(source)}")
        if retrieved:
            out.append(f"        retrieved: {quoted(retrieved)}")
        if name in aliases:
            out.append("        aliases: [" + ", ".join(quoted(a) for a in aliases[name]) + "]")
        for key in ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h"):
            if key in rates:
                out.append(f"        {key}: {format_rate(rates[key])}")
    result.text = "\n".join(out) + "\n"
    result.models = len(models)
    return result
