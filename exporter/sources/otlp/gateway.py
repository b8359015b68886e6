"""The gateway keys of a span: ``service_tier``, ``response_cache``, ``requested_model``. Pure.

Any dialect's span may carry them, so they are read after the dialect's usage:

- ``service_tier`` (the tier the provider says it served, as it spells it):
  ``llm_savings.service_tier``, else ``openai.response.service_tier`` (current
  semconv; opentelemetry-instrumentation-openai-v2), else
  ``gen_ai.openai.response.service_tier`` (the older semconv name; LiteLLM,
  OpenLIT), else ``anthropic.response.service_tier`` (the anthropic SDK's own
  spans), else ``llm.openai.service_tier`` (OpenLLMetry).
- ``response_cache`` (``exact``, ``semantic``, ``unspecified``):
  ``llm_savings.response_cache``, else ``unspecified`` for a LiteLLM span with
  ``litellm.cache_hit`` true (its spans do not say which cache answered).
- ``requested_model`` (the model or alias the client asked for; ``model`` stays
  the one called): ``llm_savings.requested_model``, else ``litellm.model_group``
  (a LiteLLM Router's or proxy's model group, on its spans).

A value of the wrong type or length rejects the span (``BadValue``), as any
other attribute does; an unknown ``response_cache`` kind likewise (``invalid_field``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.sources.otlp.attributes import REJECT_FIELD, BadValue, first_string, read_string

S_SERVICE_TIER = "llm_savings.service_tier"
S_RESPONSE_CACHE = "llm_savings.response_cache"
S_REQUESTED_MODEL = "llm_savings.requested_model"
SERVICE_TIER_KEYS = (
    S_SERVICE_TIER,
    "openai.response.service_tier",
    "gen_ai.openai.response.service_tier",
    "anthropic.response.service_tier",
    "llm.openai.service_tier",
)
A_LITELLM_CACHE_HIT = "litellm.cache_hit"
REQUESTED_MODEL_KEYS = (S_REQUESTED_MODEL, "litellm.model_group")
RESPONSE_CACHE_KINDS = ("exact", "semantic", "unspecified")
# The exact names a decoder must keep (the llm_savings ones are under a kept prefix anyway).
KEYS = frozenset({*SERVICE_TIER_KEYS, A_LITELLM_CACHE_HIT, *REQUESTED_MODEL_KEYS})


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def gateway_keys(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The record keys a span gives (absent ones omitted); ``BadValue`` for a malformed one."""
    out: dict[str, Any] = {}
    tier = first_string(attrs, SERVICE_TIER_KEYS)
    if tier is not None:
        out["service_tier"] = tier
    kind = read_string(attrs, S_RESPONSE_CACHE)
    if kind is not None:
        if kind not in RESPONSE_CACHE_KINDS:
            raise BadValue(REJECT_FIELD,
                           f"{S_RESPONSE_CACHE} is not one of {', '.join(RESPONSE_CACHE_KINDS)}")
        out["response_cache"] = kind
    elif _truthy(attrs.get(A_LITELLM_CACHE_HIT)):
        out["response_cache"] = "unspecified"
    requested = first_string(attrs, REQUESTED_MODEL_KEYS)
    if requested is not None:
        out["requested_model"] = requested
    return out


__all__ = ["KEYS", "REQUESTED_MODEL_KEYS", "RESPONSE_CACHE_KINDS", "SERVICE_TIER_KEYS", "gateway_keys"]
