"""``litellm``: LiteLLM's built-in OpenTelemetry callback (``callbacks: ["otel"]``).

Captured (litellm 1.110.2; tests/fixtures/dialects/litellm_otel*): scope
``litellm`` (``OTEL_TRACER_NAME``), span ``litellm_request`` (default mode) or
``chat <model>`` (``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``),
``litellm.call_id`` and ``litellm.cache_hit`` on every span.

- ``gen_ai.usage.input_tokens`` is LiteLLM's ``prompt_tokens``: it INCLUDES
  cache reads AND cache writes (Anthropic: 150 fresh + 2000 read + 1000
  written -> 3150). In default mode no cache attribute is set at all; in
  latest mode ``gen_ai.usage.cache_read.input_tokens`` /
  ``cache_creation.input_tokens`` (only when non-zero), never the 5m/1h split.
- ``metadata.usage_object`` carries the whole usage, as a Python ``repr`` of
  a dict (``{'prompt_tokens': 3150, ..., 'prompt_tokens_details':
  {'cached_tokens': 2000, 'cache_creation_tokens': 1000,
  'cache_creation_token_details': {'ephemeral_5m_input_tokens': 600,
  'ephemeral_1h_input_tokens': 400, ...}}}``), in both modes. It is read with
  ``attributes.parse_literal`` (literals only, size-capped; never ``eval``) and
  converted like the ``litellm`` log format does (``usage_from_chat``): exact,
  5m/1h split included. When it is absent or unreadable the plain attributes
  are used and the record is flagged ``usage_object_unparsed``.
- ``gen_ai.response.id`` is the provider's id for OpenAI, LiteLLM's own
  ``chatcmpl-<uuid>`` for Anthropic; ``litellm.call_id`` is the dedupe id when
  there is no response id.
- ``litellm.cache_hit`` true: LiteLLM's response cache answered, no provider
  was called. The span's usage is the cached response's (what the call that
  paid was billed) and is kept; the record gets ``response_cache``
  ``unspecified`` (``exporter.sources.otlp.gateway``: the span does not say
  which cache), the flag ``response_cache_hit``, and ``litellm.call_id`` as its
  id (the response id is the cached response's, that of the call that paid).
- ``gen_ai.openai.response.service_tier`` is the tier (``gateway`` reads it).

The ``raw_gen_ai_request`` child span (default mode, when content capture is
on) carries the provider's raw usage (``llm.<provider>.usage``) and no model:
it is not a model-call record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.sources.formats.errors import FormatError
from exporter.sources.formats.litellm import usage_from_chat
from exporter.sources.otlp.attributes import (
    A_RESPONSE_ID,
    MAX_ID_CHARS,
    BadValue,
    parse_literal,
    read_string,
)
from exporter.sources.otlp.dialects import gen_ai
from exporter.sources.otlp.dialects.base import (
    MISSING_USAGE_OBJECT,
    RESPONSE_CACHE_HIT,
    Dialect,
    UsageCounts,
)

A_CALL_ID = "litellm.call_id"
A_CACHE_HIT = "litellm.cache_hit"
A_USAGE_OBJECT = "metadata.usage_object"
MAX_USAGE_OBJECT_CHARS = 16384


def detect(attrs: Mapping[str, Any], scope_name: str) -> bool:
    return A_CALL_ID in attrs or A_USAGE_OBJECT in attrs or A_CACHE_HIT in attrs


def _cache_hit(attrs: Mapping[str, Any]) -> bool:
    value = attrs.get(A_CACHE_HIT)
    return value is True or (isinstance(value, str) and value.lower() == "true")


def request_id(attrs: Mapping[str, Any]) -> str | None:
    if not _cache_hit(attrs):
        response_id = read_string(attrs, A_RESPONSE_ID, MAX_ID_CHARS)
        if response_id is not None:
            return response_id
    return read_string(attrs, A_CALL_ID, MAX_ID_CHARS)


def _from_usage_object(block: Mapping[str, Any]) -> UsageCounts:
    try:
        tiers = usage_from_chat(block, A_USAGE_OBJECT)
    except FormatError as exc:
        raise BadValue(exc.reason, exc.detail) from None
    split = tiers["cache_creation"]
    return UsageCounts(
        tiers["input_tokens"],
        tiers["output_tokens"],
        tiers["cache_read_input_tokens"],
        tiers["cache_creation_input_tokens"],
        None,
        write_5m=split["ephemeral_5m_input_tokens"],
        write_1h=split["ephemeral_1h_input_tokens"],
        includes_cache=False,
    )


def usage(attrs: Mapping[str, Any]) -> UsageCounts:
    hit: tuple[str, ...] = (RESPONSE_CACHE_HIT,) if _cache_hit(attrs) else ()
    raw = attrs.get(A_USAGE_OBJECT)
    if isinstance(raw, str):
        block = parse_literal(raw, MAX_USAGE_OBJECT_CHARS)
        if isinstance(block, dict) and ("prompt_tokens" in block or "completion_tokens" in block):
            return _from_usage_object(block)._replace(flags=hit)
    return gen_ai.semconv_counts(attrs, includes_cache=True, flags=(MISSING_USAGE_OBJECT, *hit))


DIALECT = Dialect(
    name="litellm",
    detect=detect,
    usage=usage,
    keys=gen_ai.KEYS | {A_CALL_ID, A_CACHE_HIT, A_USAGE_OBJECT},
    request_id=request_id,
)
