"""What the files of examples/ should count, worked out without the exporter's code.

Each input kind is turned into canonical records here by hand, from what
docs/integrations.md says about it (LiteLLM's payload, the YAML mapping, OTel
GenAI spans), and fed to the independent oracle of ``tests.support.oracle``
(its own usage shapes and its own reading of the price table with
``yaml.safe_load``). None of this imports ``exporter``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from tests.support import oracle

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BUNDLED_PRICES = ROOT / "exporter" / "data" / "prices.yaml"


def lines(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


# --- LiteLLM's StandardLoggingPayload -------------------------------------------------------


def litellm_record(payload: dict[str, Any]) -> dict[str, Any]:
    """The record the LiteLLM field table of docs/integrations.md describes."""
    metadata = payload.get("metadata") or {}
    record: dict[str, Any] = {"ts": payload["startTime"], "request_id": payload["id"], "model": payload["model"],
                              "provider": payload.get("custom_llm_provider"),
                              "tenant": metadata.get("user_api_key_team_alias")}
    savings = (metadata.get("requester_metadata") or {}).get("llm_savings") or {}
    record.update(savings)
    usage = metadata.get("usage_object")
    if payload.get("cache_hit") is True:
        record["response_cache"] = "unspecified"  # a response-cache hit: no provider call
    if payload.get("cache_hit") is True or not usage:
        return record  # a failed call has no usage
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") or 0
    written = details.get("cache_creation_tokens") or 0
    split = details.get("cache_creation_token_details") or {}
    w5, w1h = split.get("ephemeral_5m_input_tokens", written), split.get("ephemeral_1h_input_tokens", 0)
    # LiteLLM's prompt_tokens holds every input token: fresh = prompt - cache reads - cache writes
    record["usage"] = {"input_tokens": usage["prompt_tokens"] - cached - written, "cache_read_input_tokens": cached,
                       "cache_creation_input_tokens": written,
                       "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1h},
                       "output_tokens": usage["completion_tokens"]}
    return record


# --- a YAML field mapping -------------------------------------------------------------------

_SEGMENT = re.compile(r'\.?([^.\[\]"]+)|\[(-?\d+)\]|\["([^"]*)"\]')


def _walk(obj: Any, path: str) -> Any:
    for match in _SEGMENT.finditer(path):
        key, index, quoted = match.groups()
        if index is not None:
            if not isinstance(obj, list) or not -len(obj) <= int(index) < len(obj):
                return None
            obj = obj[int(index)]
        else:
            name = quoted if quoted is not None else key
            if not isinstance(obj, dict) or name not in obj:
                return None
            obj = obj[name]
    return obj


def mapped_record(mapping: dict[str, Any], line: dict[str, Any]) -> dict[str, Any]:
    """``{path}``, ``{path, default}``, ``{value}`` and the ``field: path`` shorthand, as documented."""
    record: dict[str, Any] = {}
    for name, entry in mapping["fields"].items():
        entry = {"path": entry} if isinstance(entry, str) else entry
        if "value" in entry:
            record[name] = entry["value"]
            continue
        found = _walk(line, entry["path"])
        if found is None and "default" in entry:
            found = entry["default"]
        if found is not None:
            record[name] = found
    return record


# --- OTLP/JSON spans (the collector's file exporter) -----------------------------------------


def _attributes(items: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        value = item["value"]
        if "intValue" in value:
            out[item["key"]] = int(value["intValue"])  # OTLP/JSON writes int64 as a string
        else:
            out[item["key"]] = next(iter(value.values()))
    return out


def span_records(export: dict[str, Any]) -> list[dict[str, Any]]:
    """Model-call spans (those with ``gen_ai.usage.input_tokens``) as records: input includes cached tokens."""
    records = []
    for resource_spans in export["resourceSpans"]:
        resource = _attributes(resource_spans.get("resource", {}).get("attributes", []))
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                attrs = _attributes(span["attributes"])
                if "gen_ai.usage.input_tokens" not in attrs:
                    continue
                read = attrs.get("gen_ai.usage.cache_read.input_tokens", 0)
                written = attrs.get("gen_ai.usage.cache_write.input_tokens",
                                    attrs.get("gen_ai.usage.cache_creation.input_tokens", 0))
                w1h = attrs.get("anthropic.usage.cache_creation.ephemeral_1h_input_tokens", 0)
                record = {
                    "ts": int(span["endTimeUnixNano"]) / 1e9,
                    "request_id": attrs.get("llm_savings.request_id", attrs.get("gen_ai.response.id")),
                    "model": attrs.get("gen_ai.response.model", attrs.get("gen_ai.request.model")),
                    "provider": attrs.get("gen_ai.provider.name"),
                    "tenant": attrs.get("llm_savings.tenant", resource.get("llm_savings.tenant")),
                    "usage": {"input_tokens": attrs["gen_ai.usage.input_tokens"] - read - written,
                              "cache_read_input_tokens": read, "cache_creation_input_tokens": written,
                              "cache_creation": {"ephemeral_5m_input_tokens": written - w1h,
                                                 "ephemeral_1h_input_tokens": w1h},
                              "output_tokens": attrs.get("gen_ai.usage.output_tokens", 0)},
                }
                for key in ("tokens_before", "tokens_after", "count_method", "would_have_saved"):
                    if f"llm_savings.{key}" in attrs:
                        record[key] = attrs[f"llm_savings.{key}"]
                records.append(record)
    return records


# --- every example input, as records ------------------------------------------------------------


def canonical_records() -> list[dict[str, Any]]:
    return list(lines(EXAMPLES / "records.jsonl"))


def litellm_records() -> list[dict[str, Any]]:
    return [litellm_record(payload) for payload in lines(EXAMPLES / "litellm-payloads.jsonl")]


def mapping_records() -> list[dict[str, Any]]:
    mapping = yaml.safe_load((EXAMPLES / "mapping.yaml").read_text(encoding="utf-8"))
    return [mapped_record(mapping, line) for line in lines(EXAMPLES / "gateway.jsonl")]


def otlp_records() -> list[dict[str, Any]]:
    return [record for export in lines(EXAMPLES / "otlp-file.jsonl") for record in span_records(export)]


def totals(records: list[dict[str, Any]], prices: Path = BUNDLED_PRICES) -> dict[str, Any]:
    """What ``replay --json`` prints for these records."""
    counted = oracle.Oracle(oracle.load_prices(prices))
    for record in records:
        counted.record(oracle.parse(record))
    return counted.result()


def components(records: list[dict[str, Any]]) -> dict[str, int]:
    """Tokens saved by component: each component's share in order, the remainder ``unattributed``."""
    out: dict[str, int] = {}
    for record in records:
        if record.get("tokens_before") is None or record.get("tokens_after") is None:
            continue
        remaining = max(0, record["tokens_before"] - record["tokens_after"])
        for item in record.get("components") or []:
            share = min(item["tokens_saved"], remaining)
            if share:
                out[item["name"]] = out.get(item["name"], 0) + share
            remaining -= share
        if remaining or not record.get("components"):
            out["unattributed"] = out.get("unattributed", 0) + remaining
    return out
