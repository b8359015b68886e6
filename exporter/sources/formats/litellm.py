"""LiteLLM's StandardLoggingPayload -> canonical record v1 (docs/record-format.md).

The LiteLLM proxy hands every callback (and its JSON/file loggers) one
``StandardLoggingPayload`` per call; its shape is ``litellm/types/utils.py``
(checked against litellm 1.110.2). Which payload field becomes which record
field is the table in docs/integrations.md ("The payload, field by field");
this module is that table, and a change here changes the doc.

Why the usage is rewritten: LiteLLM's chat convention puts *all* input
tokens in ``prompt_tokens`` (for Anthropic and Bedrock it adds cache reads and
writes to the provider's ``input_tokens``), so fresh input = prompt − cached −
written. We emit the disjoint tiers as an Anthropic-shaped block (the one
native shape whose fields are disjoint and carry the 5m/1h split), which
``exporter.engine.usage`` normalises without any double counting; a block in
another native shape is passed through for ``exporter.engine.usage`` to
detect. Contradictory numbers raise ``FormatError`` with reason
``inconsistent_usage``: the line is rejected and counted, never clipped.
Cache writes with a TTL other than 5m/1h (LiteLLM knows 30m and 12h) are
counted as 1h writes, the longer-TTL tier we price.

The three keys the record format gained for gateways (docs/integrations.md):
``service_tier`` is the tier the provider says it served (``response.service_tier``,
else LiteLLM's ``cost_breakdown.service_tier``, else the usage object's own, which
Anthropic spells ``standard``); ``requested_model`` is ``model_group`` (the alias
or model group the client asked a Router/proxy for) while ``model`` stays the
deployment's model that was called; a ``cache_hit`` of LiteLLM's response cache
becomes ``response_cache`` with the payload's usage kept: LiteLLM logs the
cached response's usage, what the original call billed (a kind LiteLLM names:
its semantic caches give ``semantic``, its key caches ``exact``; otherwise
``unspecified``).

No prompt text is read: ``messages`` and the response's content are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.engine.usage import UsageError, count_value
from exporter.sources.formats.errors import FormatError

SAVINGS_KEYS = ("tokens_before", "tokens_after", "count_method", "would_have_saved", "components", "optimizer")
_TENANT_KEYS = ("user_api_key_team_alias", "user_api_key_team_id", "team_alias", "team_id")
_DETECT_KEYS = ("call_type", "custom_llm_provider", "hidden_params", "model_map_information",
                "response_cost")


def detect(obj: Any) -> bool:
    """True for something shaped like a StandardLoggingPayload (for ``--format auto``).

    A canonical record has ``ts``; the payload has ``startTime`` and at least
    one of LiteLLM's own keys, so a user record that happens to carry a
    ``startTime`` is not taken for one.
    """
    if not isinstance(obj, dict) or "ts" in obj or "startTime" not in obj:
        return False
    return any(key in obj for key in _DETECT_KEYS)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(block: Mapping[str, Any], key: str, where: str) -> int:
    value = block.get(key)
    if value is None:
        return 0
    try:
        return count_value(value, f"{where}.{key}")
    except UsageError as exc:
        raise FormatError(exc.reason, exc.detail) from None


def _agree(a: int, b: int, what: str) -> int:
    if a and b and a != b:
        raise FormatError("inconsistent_usage", f"usage: {what} disagree ({a} != {b})")
    return a or b


def usage_from_chat(block: Mapping[str, Any], where: str = "usage") -> dict[str, Any]:
    """LiteLLM's chat-convention usage -> a disjoint Anthropic-shaped block."""
    details = _mapping(block.get("prompt_tokens_details"))
    dw = f"{where}.prompt_tokens_details"
    prompt = _count(block, "prompt_tokens", where)
    output = _count(block, "completion_tokens", where)
    read = _agree(_count(details, "cached_tokens", dw),
                  _count(block, "cache_read_input_tokens", where),
                  "cached_tokens and cache_read_input_tokens")
    if "prompt_cache_hit_tokens" in block:  # DeepSeek's own field, if LiteLLM passed it through
        read = _agree(read, _count(block, "prompt_cache_hit_tokens", where),
                      "cached_tokens and prompt_cache_hit_tokens")
    written = _agree(_count(details, "cache_creation_tokens", dw),
                     _count(block, "cache_creation_input_tokens", where),
                     "cache_creation_tokens and cache_creation_input_tokens")
    split = _mapping(details.get("cache_creation_token_details") or block.get("cache_creation"))
    sw = f"{dw}.cache_creation_token_details"
    w5 = _count(split, "ephemeral_5m_input_tokens", sw)
    w1h = sum(_count(split, key, sw) for key in split
              if key.startswith("ephemeral_") and key != "ephemeral_5m_input_tokens")
    if w5 + w1h != written:
        w5, w1h = written, 0  # no usable split: all writes are 5m writes, as Anthropic's default
    if read + written > prompt:
        raise FormatError("inconsistent_usage",
                          f"{where}: cached {read} + cache-write {written} tokens exceed "
                          f"prompt_tokens {prompt}")
    return {
        "input_tokens": prompt - read - written,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
        "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1h},
        "output_tokens": output,
    }


def _usage(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    metadata = _mapping(obj.get("metadata"))
    hidden = _mapping(obj.get("hidden_params"))
    response = _mapping(obj.get("response"))
    for where, block in (("metadata.usage_object", metadata.get("usage_object")),
                         ("hidden_params.usage_object", hidden.get("usage_object")),
                         ("response.usage", response.get("usage"))):
        if block is None:
            continue
        if not isinstance(block, Mapping):
            raise FormatError("invalid_usage", f"{where} is {type(block).__name__}, not an object")
        if not block:
            continue
        if "prompt_tokens" in block or "completion_tokens" in block:
            return usage_from_chat(block, where)
        return dict(block)  # another native shape: exporter.engine.usage detects it
    if obj.get("prompt_tokens") is not None or obj.get("completion_tokens") is not None:
        return usage_from_chat(obj, "payload")
    return None


def _savings(metadata: Mapping[str, Any]) -> dict[str, Any]:
    for holder in ("requester_metadata", "spend_logs_metadata"):
        block = _mapping(metadata.get(holder)).get("llm_savings")
        if isinstance(block, Mapping):
            return {key: block[key] for key in SAVINGS_KEYS if key in block}
    return {}


# LiteLLM's cache types (litellm.types.caching.LiteLLMCacheType values, and its disk cache): key
# caches answer an exact repeat, the semantic ones a similar prompt. The payload does not name the
# cache; exporter.integrations.litellm_logger adds ``cache_type`` to a hit's line. A semantic cache
# also stamps ``semantic-similarity`` into the request metadata.
SEMANTIC_CACHE_TYPES = frozenset({"redis-semantic", "qdrant-semantic", "valkey-semantic"})
EXACT_CACHE_TYPES = frozenset({"local", "redis", "s3", "gcs", "azure-blob", "disk"})
_CACHE_TYPE_KEYS = ("cache_type",)
MAX_TIER_CHARS = 64


def cache_kind(cache_type: Any) -> str:
    """LiteLLM's cache type -> the record's ``response_cache`` kind."""
    if not isinstance(cache_type, str):
        return "unspecified"
    name = cache_type.strip().lower().replace("_", "-")
    if name in SEMANTIC_CACHE_TYPES or name.endswith("-semantic"):
        return "semantic"
    return "exact" if name in EXACT_CACHE_TYPES else "unspecified"


def _string(value: Any, where: str) -> str | None:
    """An optional string field: None/'' absent, anything but a short string a ``FormatError``."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise FormatError("invalid_field", f"{where} is {type(value).__name__}, not a string")
    if len(value) > MAX_TIER_CHARS:
        raise FormatError("invalid_field", f"{where} is longer than {MAX_TIER_CHARS} characters")
    return value


def _service_tier(obj: Mapping[str, Any]) -> str | None:
    metadata = _mapping(obj.get("metadata"))
    for where, holder in (("response", _mapping(obj.get("response"))),
                          ("cost_breakdown", _mapping(obj.get("cost_breakdown"))),
                          ("hidden_params", _mapping(obj.get("hidden_params"))),
                          ("metadata.usage_object", _mapping(metadata.get("usage_object"))),
                          ("response.usage", _mapping(_mapping(obj.get("response")).get("usage")))):
        tier = _string(holder.get("service_tier"), f"{where}.service_tier")
        if tier is not None:
            return tier
    return None


def _cache_type(obj: Mapping[str, Any]) -> Any:
    for holder in (obj, _mapping(obj.get("hidden_params")), _mapping(obj.get("metadata"))):
        for key in _CACHE_TYPE_KEYS:
            if holder.get(key) is not None:
                return holder[key]
    return None


def gateway_keys(obj: Mapping[str, Any], model: Any) -> dict[str, Any]:
    """``service_tier``, ``requested_model`` and ``response_cache`` of one payload (absent keys omitted)."""
    out: dict[str, Any] = {}
    tier = _service_tier(obj)
    if tier is not None:
        out["service_tier"] = tier
    group = obj.get("model_group")
    if isinstance(group, str) and group and model is not None:
        out["requested_model"] = group
    if obj.get("cache_hit") is True:
        kind = cache_kind(_cache_type(obj))
        if kind == "unspecified" and "semantic-similarity" in _mapping(obj.get("metadata")):
            kind = "semantic"  # only LiteLLM's semantic caches stamp a similarity
        out["response_cache"] = kind
    return out


def _first_label(*values: Any) -> Any:
    for value in values:
        if value is not None and value != "":
            return value
    return None


def to_canonical(obj: Any) -> dict[str, Any]:
    """One StandardLoggingPayload -> a canonical record v1 dict (validated later by
    ``records.parse_object``). Raises ``FormatError`` (a ``ValueError`` with a
    bounded ``reason``) for a payload that cannot be read at all."""
    if not isinstance(obj, dict):
        kind = type(obj).__name__
        raise FormatError("not_object", f"a LiteLLM payload must be an object, got {kind}")
    metadata = _mapping(obj.get("metadata"))
    hidden = _mapping(obj.get("hidden_params"))
    record: dict[str, Any] = {"source_dialect": "litellm"}
    if obj.get("startTime") is not None:
        record["ts"] = obj["startTime"]
    request_id = _first_label(obj.get("id"), obj.get("litellm_call_id"))
    if request_id is not None:
        record["request_id"] = request_id
    model = _first_label(obj.get("model"), obj.get("model_group"), hidden.get("litellm_model_name"))
    if model is not None:
        record["model"] = model
    provider = _first_label(obj.get("custom_llm_provider"))
    if provider is not None:
        record["provider"] = provider
    tenant = _first_label(*(metadata.get(key) for key in _TENANT_KEYS))
    if tenant is not None:
        record["tenant"] = tenant
    usage = _usage(obj)  # on a cache hit: the cached response's usage, what the original call billed
    if usage is not None:
        record["usage"] = usage
    record.update(gateway_keys(obj, model))
    if obj.get("cache_hit") is True:  # LiteLLM's response cache answered: no provider call
        record["source_flags"] = ["response_cache_hit"]
    record.update(_savings(metadata))
    return record


__all__ = ["FormatError", "cache_kind", "detect", "gateway_keys", "to_canonical", "usage_from_chat"]
