"""OTLP trace spans -> canonical request records v1 (DESIGN.md §2). Pure: no I/O, no metrics.

Two decoders (protobuf ``ExportTraceServiceRequest`` and OTLP/JSON) reduce a
request to ``SpanView`` values holding only the attributes this module reads
(never prompt or completion text), and ``map_span`` turns one view into a
record dict, or says why it is ignored or rejected.

Output contract: one model-call span -> one record dict that
``exporter.engine.records.parse_object`` validates, with the usage block in the
OpenAI-compatible shape ``{"prompt_tokens", "completion_tokens",
"prompt_tokens_details": {"cached_tokens", "cache_write_tokens"}}`` so there is
one validation path, plus ``source_dialect``.

Dialects (first match wins; what real instrumentations emit, checked in their
source):

``pydantic_ai``
    scope ``pydantic-ai``/``pydantic_ai``, or ``gen_ai.usage.cache_read_tokens``
    / ``cache_write_tokens`` (pydantic-ai's usage names, also emitted by the
    Pydantic AI gateway). ``gen_ai.usage.input_tokens`` INCLUDES cache reads and
    writes: pydantic-ai's Anthropic mapping sums ``input_tokens +
    cache_creation_input_tokens + cache_read_input_tokens`` ("maintains
    request_tokens as the count of all input tokens, with cached counts as
    details"), and OpenAI's ``prompt_tokens`` already includes cached tokens.
    Older versions put provider details under ``gen_ai.usage.details.*``
    (``cache_read_input_tokens``, ``cache_creation_input_tokens``, ``cached_tokens``).
``gen_ai``
    current semconv: ``gen_ai.usage.input_tokens``/``output_tokens``,
    ``gen_ai.usage.cache_read.input_tokens``, ``gen_ai.usage.cache_creation.input_tokens``.
    The convention says input_tokens "SHOULD include all types of input tokens,
    including cached tokens" and each cache count "SHOULD be included in
    gen_ai.usage.input_tokens". Also read: OpenLLMetry's underscore names
    ``gen_ai.usage.cache_read_input_tokens``/``cache_creation_input_tokens``
    (its Anthropic instrumentation reports input = input + cache_read +
    cache_creation), the registry's ``gen_ai.usage.cache_write.input_tokens``,
    and Strands' ``gen_ai.usage.cache_write_input_tokens``. OpenLIT emits the
    current names with ``gen_ai.system``.
``gen_ai_legacy``
    ``gen_ai.usage.prompt_tokens``/``completion_tokens`` (OpenLLMetry before the
    rename; prompt includes cached tokens as above), same cache names as ``gen_ai``.
``openinference``
    ``llm.token_count.prompt``/``completion``/``total``,
    ``llm.token_count.prompt_details.cache_read``/``cache_write``,
    ``llm.model_name``, ``llm.provider``/``llm.system``. The prompt count INCLUDES
    cache reads and writes (the Anthropic and Bedrock instrumentors sum
    ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``).
``llm_savings``
    only the savings attributes below, no usage.

Input that excludes the cache: some emitters (Strands, some agent CLIs) send
Anthropic's native ``input_tokens`` (cache excluded) under the gen_ai names.
When the span also carries a total (``gen_ai.usage.total_tokens``,
``llm.usage.total_tokens`` or ``llm.token_count.total``) and cache tokens are
present, the total decides: input + output == total means the cache is
included; input + cache_read + cache_write + output == total means excluded,
and the cache counts are added back. Without that evidence the dialect's
convention holds (``MappingOptions.input_includes_cache`` forces either way).
A span whose cache counts then exceed its input is rejected by the record
parser (``inconsistent_usage``), never clipped.

Savings and identity attributes, on any span: ``llm_savings.tokens_before``,
``llm_savings.tokens_after``, ``llm_savings.would_have_saved`` (counts),
``llm_savings.count_method``, ``llm_savings.request_id`` (overrides the id
below, so a gateway can make span and log line share a dedupe key).

Fields:
- ``request_id``: ``llm_savings.request_id``, else ``gen_ai.response.id``, else
  ``<trace id hex>:<span id hex>`` (lowercase; identical for a re-sent span in
  protobuf or JSON, so the pipeline dedupes retried exports).
- ``model``: ``gen_ai.response.model``, else ``gen_ai.request.model``, else ``llm.model_name``.
- ``provider``: ``gen_ai.provider.name``, else ``gen_ai.system``, else
  ``llm.provider``, else ``llm.system``; semconv names folded to the price
  table's families (``aws.bedrock`` -> ``bedrock``, ``gcp.gemini`` -> ``google``, ...).
- ``tenant``: the first of ``MappingOptions.tenant_attributes`` (default
  ``llm_savings.tenant`` then ``tenant.id``) found on the span, then on the resource.
- ``ts``: span end time in epoch seconds (start time when end is 0; absent when both are).

Ignored (counted, not rejected): spans with no model and no usage/savings
attribute (``not_model_call``), OpenInference spans of a kind other than
LLM/EMBEDDING, and agent roll-ups that repeat their children's token totals
(``agent_rollup``: ``gen_ai.operation.name`` ``invoke_agent``/``create_agent``/
``execute_tool``/``invoke_workflow``, an OpenInference AGENT/CHAIN span, or a
span naming an agent without an operation, like pydantic-ai's agent run span).

Malformed values, one rule: a count attribute must be an OTLP ``intValue``
(or a ``stringValue`` of decimal digits; in OTLP/JSON ``intValue`` is a string
anyway) between 0 and 2**53-1, else the span is rejected here with
``invalid_count``; a ``doubleValue`` count is rejected like a float count in a
JSON line. A string attribute (model, provider, ids, tenant, count method) of
another type or over 256 characters (1024 for ids) is rejected with
``invalid_field``. A JSON span that is not an object of the OTLP shape is
``invalid_otlp``. The reasons are those of ``exporter.engine.records.REJECTION_REASONS``;
everything else (missing model, cache > input) is left to the record parser.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from exporter.engine.usage import MAX_COUNT

DIALECTS = ("gen_ai", "gen_ai_legacy", "pydantic_ai", "openinference", "llm_savings")
REJECT_COUNT = "invalid_count"
REJECT_FIELD = "invalid_field"
REJECT_OTLP = "invalid_otlp"
IGNORE_NOT_MODEL_CALL = "not_model_call"
IGNORE_AGENT_ROLLUP = "agent_rollup"
IGNORE_REASONS = (IGNORE_NOT_MODEL_CALL, IGNORE_AGENT_ROLLUP)
MAX_LABEL_CHARS = 256
MAX_ID_CHARS = 1024

# --- attribute names -------------------------------------------------------
A_RESPONSE_MODEL = "gen_ai.response.model"
A_REQUEST_MODEL = "gen_ai.request.model"
A_OI_MODEL = "llm.model_name"
A_PROVIDER = "gen_ai.provider.name"
A_SYSTEM = "gen_ai.system"
A_OI_PROVIDER = "llm.provider"
A_OI_SYSTEM = "llm.system"
A_RESPONSE_ID = "gen_ai.response.id"
A_OPERATION = "gen_ai.operation.name"
A_AGENT_NAME = "gen_ai.agent.name"
A_PAI_AGENT_NAME = "agent_name"
A_OI_KIND = "openinference.span.kind"

A_INPUT = "gen_ai.usage.input_tokens"
A_OUTPUT = "gen_ai.usage.output_tokens"
A_PROMPT = "gen_ai.usage.prompt_tokens"
A_COMPLETION = "gen_ai.usage.completion_tokens"
A_TOTAL = "gen_ai.usage.total_tokens"
A_LEGACY_TOTAL = "llm.usage.total_tokens"
CACHE_READ_KEYS = (
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_read_input_tokens",
)
CACHE_WRITE_KEYS = (
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.cache_write.input_tokens",
    "gen_ai.usage.cache_creation_input_tokens",
    "gen_ai.usage.cache_write_input_tokens",
)
PAI_CACHE_READ_KEYS = (
    "gen_ai.usage.cache_read_tokens",
    "gen_ai.usage.details.cache_read_tokens",
    "gen_ai.usage.details.cache_read_input_tokens",
    "gen_ai.usage.details.cached_tokens",
)
PAI_CACHE_WRITE_KEYS = (
    "gen_ai.usage.cache_write_tokens",
    "gen_ai.usage.details.cache_write_tokens",
    "gen_ai.usage.details.cache_creation_input_tokens",
)
A_OI_PROMPT = "llm.token_count.prompt"
A_OI_COMPLETION = "llm.token_count.completion"
A_OI_TOTAL = "llm.token_count.total"
A_OI_CACHE_READ = "llm.token_count.prompt_details.cache_read"
A_OI_CACHE_WRITE = "llm.token_count.prompt_details.cache_write"

S_BEFORE = "llm_savings.tokens_before"
S_AFTER = "llm_savings.tokens_after"
S_WOULD = "llm_savings.would_have_saved"
S_METHOD = "llm_savings.count_method"
S_REQUEST_ID = "llm_savings.request_id"
S_TENANT = "llm_savings.tenant"
SAVINGS_COUNT_KEYS = (S_BEFORE, S_AFTER, S_WOULD)

DEFAULT_TENANT_ATTRIBUTES = (S_TENANT, "tenant.id")

# Exact keys a decoder keeps; plus any key under these prefixes. Everything else
# (prompts, completions, tool arguments) is never even decoded into a string.
_EXACT_KEYS = frozenset(
    {
        A_RESPONSE_MODEL,
        A_REQUEST_MODEL,
        A_OI_MODEL,
        A_PROVIDER,
        A_SYSTEM,
        A_OI_PROVIDER,
        A_OI_SYSTEM,
        A_RESPONSE_ID,
        A_OPERATION,
        A_AGENT_NAME,
        A_PAI_AGENT_NAME,
        A_OI_KIND,
        A_LEGACY_TOTAL,
        A_OI_PROMPT,
        A_OI_COMPLETION,
        A_OI_TOTAL,
        A_OI_CACHE_READ,
        A_OI_CACHE_WRITE,
        "tenant.id",
    }
)
_PREFIXES = ("gen_ai.usage.", "llm_savings.")

_AGGREGATE_OPERATIONS = frozenset(
    {"invoke_agent", "create_agent", "execute_tool", "invoke_workflow"}
)
_OI_MODEL_KINDS = frozenset({"LLM", "EMBEDDING"})
_OI_ROLLUP_KINDS = frozenset({"AGENT", "CHAIN"})

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

_MAX_DECISIONS = 4096
_MODEL_KEYS = (A_RESPONSE_MODEL, A_REQUEST_MODEL, A_OI_MODEL)
_PROVIDER_KEYS = (A_PROVIDER, A_SYSTEM, A_OI_PROVIDER, A_OI_SYSTEM)
_ID_KEYS = (S_REQUEST_ID, A_RESPONSE_ID)
_SAVINGS_FIELDS = (
    (S_BEFORE, "tokens_before"),
    (S_AFTER, "tokens_after"),
    (S_WOULD, "would_have_saved"),
)

_DIGITS = re.compile(r"[0-9]{1,16}")
_HEX_ID = re.compile(r"[0-9a-fA-F]+")


@dataclass(slots=True)
class SpanView:
    """The parts of one span the mapping reads; ``attrs`` holds only wanted keys."""

    attrs: dict[str, Any]
    resource: dict[str, Any]
    scope_name: str
    trace_id: str  # lowercase hex, "" when absent
    span_id: str
    start_ns: int
    end_ns: int


@dataclass(frozen=True, slots=True)
class MappingOptions:
    """Deployment choices for the mapping (documented in the module docstring)."""

    tenant_attributes: tuple[str, ...] = DEFAULT_TENANT_ATTRIBUTES
    input_includes_cache: bool | None = None  # None: the total decides, else the dialect

    # key -> wanted? Keys repeat across spans; bounded because clients choose them.
    _decisions: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def wanted(self, key: str) -> bool:
        decision = self._decisions.get(key)
        if decision is None:
            decision = (
                key in _EXACT_KEYS or key.startswith(_PREFIXES) or key in self.tenant_attributes
            )
            if len(self._decisions) < _MAX_DECISIONS:
                self._decisions[key] = decision
        return decision


@dataclass(frozen=True, slots=True)
class Mapped:
    record: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Ignored:
    reason: str


@dataclass(frozen=True, slots=True)
class Rejected:
    reason: str
    detail: str
    ts: float | None = None  # the span's end time when it was readable, so it counts in its month


SpanOutcome = Mapped | Ignored | Rejected


@dataclass(slots=True)
class BatchResult:
    """Outcome of one export request (or one file-exporter line)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    rejected: Counter[str] = field(default_factory=Counter)
    rejections: list[tuple[str, float | None]] = field(
        default_factory=list
    )  # (reason, ts) per span
    ignored: Counter[str] = field(default_factory=Counter)

    def reject(self, outcome: Rejected) -> None:
        self.rejected[outcome.reason] += 1
        self.rejections.append((outcome.reason, outcome.ts))

    def add(self, outcome: Mapped | Ignored | Rejected) -> None:
        """Record one span's outcome."""
        if isinstance(outcome, Mapped):
            self.records.append(outcome.record)
        elif isinstance(outcome, Ignored):
            self.ignored[outcome.reason] += 1
        else:
            self.reject(outcome)

    @property
    def rejected_count(self) -> int:
        return sum(self.rejected.values())

    def rejection_message(self) -> str:
        """Human summary for ``partial_success.error_message``: how many and why."""
        if not self.rejected:
            return ""
        parts = ", ".join(f"{reason}={n}" for reason, n in sorted(self.rejected.items()))
        return f"{self.rejected_count} spans rejected ({parts})"


class UndecodableRequest(ValueError):
    """The body is not an OTLP trace export request (HTTP 400, not retryable)."""


class _Bad(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


# --- value coercion ----------------------------------------------------------


def _count(attrs: Mapping[str, Any], key: str) -> int | None:
    value = attrs.get(key)
    if value is None:
        return None
    if type(value) is int:
        if 0 <= value <= MAX_COUNT:
            return value
        raise _Bad(REJECT_COUNT, f"{key} is out of range")
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        number = int(value)
        if number <= MAX_COUNT:
            return number
        raise _Bad(REJECT_COUNT, f"{key} is out of range")
    raise _Bad(REJECT_COUNT, f"{key} has type {_type_name(value)}, expected a non-negative integer")


def _first_count(attrs: Mapping[str, Any], keys: Iterable[str]) -> int | None:
    for key in keys:
        value = _count(attrs, key)
        if value is not None:
            return value
    return None


def _string(attrs: Mapping[str, Any], key: str, limit: int = MAX_LABEL_CHARS) -> str | None:
    value = attrs.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _Bad(REJECT_FIELD, f"{key} has type {_type_name(value)}, expected a string")
    if len(value) > limit:
        raise _Bad(REJECT_FIELD, f"{key} is longer than {limit} characters")
    return value


def _first_string(
    attrs: Mapping[str, Any], keys: tuple[str, ...], limit: int = MAX_LABEL_CHARS
) -> str | None:
    """The first non-empty string among ``keys``; a wrong type or length raises ``_Bad``."""
    for key in keys:
        value = attrs.get(key)
        if value is None or value == "":
            continue
        if type(value) is str and len(value) <= limit:
            return value
        _string(attrs, key, limit)  # raises, naming the key
    return None


def _type_name(value: Any) -> str:
    if isinstance(value, _Unsupported):
        return value.kind
    return type(value).__name__


class _Unsupported:
    """An attribute value of a type the mapping never accepts (array, kvlist, bytes)."""

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"<{self.kind}>"


def normalise_provider(name: str) -> str:
    lowered = name.strip().lower()
    return PROVIDER_ALIASES.get(lowered, lowered)


# --- mapping -------------------------------------------------------------------


def _detect_dialect(attrs: Mapping[str, Any], scope_name: str) -> str | None:
    has_gen_ai = A_INPUT in attrs or A_OUTPUT in attrs
    if PAI_CACHE_READ_KEYS[0] in attrs or PAI_CACHE_WRITE_KEYS[0] in attrs:
        return "pydantic_ai"
    if has_gen_ai and scope_name.lower().startswith(("pydantic-ai", "pydantic_ai")):
        return "pydantic_ai"
    if has_gen_ai:
        return "gen_ai"
    if A_PROMPT in attrs or A_COMPLETION in attrs:
        return "gen_ai_legacy"
    if (
        A_OI_PROMPT in attrs
        or A_OI_COMPLETION in attrs
        or A_OI_CACHE_READ in attrs
        or A_OI_CACHE_WRITE in attrs
    ):
        return "openinference"
    if any(k in attrs for k in CACHE_READ_KEYS) or any(k in attrs for k in CACHE_WRITE_KEYS):
        return "gen_ai"
    return None


def _usage_counts(
    attrs: Mapping[str, Any], dialect: str
) -> tuple[int | None, int | None, int | None, int | None, int | None]:
    """(input, output, cache_read, cache_write, total) as the span states them."""
    if dialect == "openinference":
        return (
            _count(attrs, A_OI_PROMPT),
            _count(attrs, A_OI_COMPLETION),
            _count(attrs, A_OI_CACHE_READ),
            _count(attrs, A_OI_CACHE_WRITE),
            _count(attrs, A_OI_TOTAL),
        )
    if dialect == "gen_ai_legacy":
        inp, out = _count(attrs, A_PROMPT), _count(attrs, A_COMPLETION)
    else:
        inp, out = _count(attrs, A_INPUT), _count(attrs, A_OUTPUT)
    read = _first_count(attrs, CACHE_READ_KEYS)
    write = _first_count(attrs, CACHE_WRITE_KEYS)
    if dialect == "pydantic_ai":
        if read is None:
            read = _first_count(attrs, PAI_CACHE_READ_KEYS)
        if write is None:
            write = _first_count(attrs, PAI_CACHE_WRITE_KEYS)
    total = _count(attrs, A_TOTAL)
    if total is None:
        total = _count(attrs, A_LEGACY_TOTAL)
    return inp, out, read, write, total


def _usage_block(
    inp: int | None,
    out: int | None,
    read: int | None,
    write: int | None,
    total: int | None,
    includes_cache: bool | None,
) -> dict[str, Any]:
    cached = (read or 0) + (write or 0)
    if inp is not None and cached:
        if (
            includes_cache is None
            and total is not None
            and out is not None
            and inp + out != total
            and inp + cached + out == total
        ):
            includes_cache = False
        if includes_cache is False:
            inp += cached
    usage: dict[str, Any] = {}
    if inp is not None:
        usage["prompt_tokens"] = inp
    if out is not None:
        usage["completion_tokens"] = out
    details: dict[str, int] = {}
    if read is not None:
        details["cached_tokens"] = read
    if write is not None:
        details["cache_write_tokens"] = write
    if details:
        usage["prompt_tokens_details"] = details
    return usage


def _rollup_or_not_call(attrs: Mapping[str, Any]) -> str | None:
    operation = attrs.get(A_OPERATION)
    if isinstance(operation, str) and operation in _AGGREGATE_OPERATIONS:
        return IGNORE_AGENT_ROLLUP
    kind = attrs.get(A_OI_KIND)
    if isinstance(kind, str) and kind and kind.upper() not in _OI_MODEL_KINDS:
        return IGNORE_AGENT_ROLLUP if kind.upper() in _OI_ROLLUP_KINDS else IGNORE_NOT_MODEL_CALL
    if operation is None and (A_AGENT_NAME in attrs or A_PAI_AGENT_NAME in attrs):
        return IGNORE_AGENT_ROLLUP
    return None


def map_span(span: SpanView, options: MappingOptions | None = None) -> SpanOutcome:
    """One span -> a record dict (``Mapped``), or why not (``Ignored``/``Rejected``)."""
    opts = options or _DEFAULT_OPTIONS
    attrs = span.attrs
    try:
        skip = _rollup_or_not_call(attrs)
        if skip is not None:
            return Ignored(skip)
        model = _first_string(attrs, _MODEL_KEYS)
        dialect = _detect_dialect(attrs, span.scope_name)
        has_savings = S_BEFORE in attrs or S_AFTER in attrs or S_WOULD in attrs
        if model is None and dialect is None and not has_savings:
            return Ignored(IGNORE_NOT_MODEL_CALL)
        record: dict[str, Any] = {}
        end_ns = span.end_ns or span.start_ns
        if end_ns > 0:
            record["ts"] = end_ns / 1e9
        request_id = _first_string(attrs, _ID_KEYS, MAX_ID_CHARS)
        if request_id is None and span.trace_id and span.span_id:
            request_id = f"{span.trace_id}:{span.span_id}"
        if request_id is not None:
            record["request_id"] = request_id
        if model is not None:
            record["model"] = model
        provider = _first_string(attrs, _PROVIDER_KEYS)
        if provider is not None:
            record["provider"] = normalise_provider(provider)
        tenant_keys = opts.tenant_attributes
        tenant = _first_string(attrs, tenant_keys) or _first_string(span.resource, tenant_keys)
        if tenant is not None:
            record["tenant"] = tenant
        if dialect is not None:
            usage = _usage_block(*_usage_counts(attrs, dialect), opts.input_includes_cache)
            if usage:
                record["usage"] = usage
        if has_savings or S_METHOD in attrs:
            for key, out_key in _SAVINGS_FIELDS:
                value = _count(attrs, key)
                if value is not None:
                    record[out_key] = value
            method = _string(attrs, S_METHOD)
            if method is not None:
                record["count_method"] = method
        record["source_dialect"] = dialect or "llm_savings"
        return Mapped(record)
    except _Bad as bad:
        end_ns = span.end_ns or span.start_ns
        return Rejected(bad.reason, bad.detail, end_ns / 1e9 if end_ns > 0 else None)


_DEFAULT_OPTIONS = MappingOptions()


def map_spans(spans: Iterable[SpanView], options: MappingOptions | None = None) -> BatchResult:
    """Map every span of a request; rejections and ignores counted by reason."""
    result = BatchResult()
    for span in spans:
        result.add(map_span(span, options))
    return result


# --- protobuf decoding -----------------------------------------------------------


def _pb_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        return value.double_value
    if kind is None:
        return None
    return _Unsupported(kind)


def _pb_attrs(kvs: Iterable[KeyValue], options: MappingOptions) -> dict[str, Any]:
    out: dict[str, Any] = {}
    decisions = options._decisions
    for kv in kvs:
        key = kv.key
        keep = decisions.get(key)
        if keep is None:
            keep = options.wanted(key)
        if keep:
            out[key] = _pb_value(kv.value)
    return out


def parse_protobuf(body: bytes) -> ExportTraceServiceRequest:
    """Decode an ``application/x-protobuf`` body; ``UndecodableRequest`` on failure."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, ValueError, RuntimeError) as exc:  # upb raises DecodeError; be broad
        raise UndecodableRequest(
            f"not an ExportTraceServiceRequest: {type(exc).__name__}"
        ) from None
    return request


def spans_from_protobuf(
    request: ExportTraceServiceRequest, options: MappingOptions | None = None
) -> list[SpanView]:
    opts = options or _DEFAULT_OPTIONS
    views: list[SpanView] = []
    for resource_spans in request.resource_spans:
        resource = _pb_attrs(resource_spans.resource.attributes, opts)
        for scope_spans in resource_spans.scope_spans:
            scope_name = scope_spans.scope.name
            for span in scope_spans.spans:
                views.append(
                    SpanView(
                        attrs=_pb_attrs(span.attributes, opts),
                        resource=resource,
                        scope_name=scope_name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                    )
                )
    return views


def map_protobuf(body: bytes, options: MappingOptions | None = None) -> tuple[BatchResult, int]:
    """Protobuf body -> (result, number of spans). Raises ``UndecodableRequest``."""
    views = spans_from_protobuf(parse_protobuf(body), options)
    return map_spans(views, options), len(views)


# --- OTLP/JSON decoding ------------------------------------------------------------
# OTLP/JSON differs from protobuf's canonical JSON: ids are hex strings and
# 64-bit integers (intValue, *TimeUnixNano) may be JSON strings. Keys are
# lowerCamelCase; the protobuf field names (snake_case) are accepted too, as
# the OTLP spec asks receivers to. Objects are checked as ``dict`` (what a JSON
# decoder returns), which is much faster than an ABC check per attribute.


def _j(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    if value is None:
        value = obj.get(snake)
    return value


def _json_int(value: Any) -> int:
    if value is None:
        return 0
    if type(value) is int:
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 20:
        return int(value)
    raise _Bad(REJECT_OTLP, "a 64-bit integer field is neither a number nor a decimal string")


def _json_id(value: Any, size: int) -> str:
    """Hex per OTLP/JSON; base64 (protobuf canonical JSON) tolerated."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise _Bad(REJECT_OTLP, "a span id is not a string")
    if len(value) == size * 2 and _HEX_ID.fullmatch(value):
        return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise _Bad(REJECT_OTLP, "a span id is neither hex nor base64") from None
    if len(raw) != size:
        raise _Bad(REJECT_OTLP, "a span id has the wrong length")
    return raw.hex()


def _json_value(value: Any) -> Any:
    if not isinstance(value, dict):
        return _Unsupported("malformed")
    if "stringValue" in value:
        v = value["stringValue"]
        return v if isinstance(v, str) else _Unsupported("malformed")
    if "intValue" in value:
        v = value["intValue"]
        if type(v) is int:
            return v
        if isinstance(v, str):
            text = v[1:] if v.startswith("-") else v
            if text.isascii() and text.isdigit() and len(text) <= 19:
                return int(v)
        return _Unsupported("malformed")
    if "boolValue" in value:
        v = value["boolValue"]
        return v if isinstance(v, bool) else _Unsupported("malformed")
    if "doubleValue" in value:
        v = value["doubleValue"]
        return (
            float(v)
            if isinstance(v, int | float) and not isinstance(v, bool)
            else _Unsupported("malformed")
        )
    for key in ("arrayValue", "kvlistValue", "bytesValue"):
        if key in value:
            return _Unsupported(key)
    return None


def _json_attrs(kvs: Any, options: MappingOptions) -> dict[str, Any]:
    if kvs is None:
        return {}
    if not isinstance(kvs, list):
        raise _Bad(REJECT_OTLP, "attributes is not a list")
    out: dict[str, Any] = {}
    decisions = options._decisions
    for kv in kvs:
        if type(kv) is not dict:
            raise _Bad(REJECT_OTLP, "an attribute is not an object")
        key = kv.get("key")
        if type(key) is not str:
            raise _Bad(REJECT_OTLP, "an attribute key is not a string")
        keep = decisions.get(key)
        if keep is None:
            keep = options.wanted(key)
        if keep:
            out[key] = _json_value(kv.get("value"))
    return out


def _json_list(obj: Mapping[str, Any], camel: str, snake: str) -> list[Any]:
    value = _j(obj, camel, snake)
    if value is None:
        return []
    if not isinstance(value, list):
        raise UndecodableRequest(f"{camel} is not a list")
    return value


def map_json_object(doc: Any, options: MappingOptions | None = None) -> tuple[BatchResult, int]:
    """A decoded OTLP/JSON ExportTraceServiceRequest -> (result, number of spans).

    The envelope (resourceSpans/scopeSpans lists) must be well formed, else
    ``UndecodableRequest``; a malformed span inside it is rejected alone.
    """
    opts = options or _DEFAULT_OPTIONS
    if not isinstance(doc, dict):
        raise UndecodableRequest("the body is not a JSON object")
    result = BatchResult()
    total = 0
    for resource_spans in _json_list(doc, "resourceSpans", "resource_spans"):
        if not isinstance(resource_spans, dict):
            raise UndecodableRequest("a resourceSpans entry is not an object")
        resource_obj = resource_spans.get("resource") or {}
        if not isinstance(resource_obj, dict):
            raise UndecodableRequest("resource is not an object")
        scope_list = _json_list(resource_spans, "scopeSpans", "scope_spans") or _json_list(
            resource_spans, "instrumentationLibrarySpans", "instrumentation_library_spans"
        )
        try:
            resource = _json_attrs(resource_obj.get("attributes"), opts)
        except _Bad:
            resource = None  # every span under it is rejected below
        for scope_spans in scope_list:
            if not isinstance(scope_spans, dict):
                raise UndecodableRequest("a scopeSpans entry is not an object")
            scope = scope_spans.get("scope") or scope_spans.get("instrumentationLibrary") or {}
            scope_name = scope.get("name") if isinstance(scope, dict) else None
            for span in _json_list(scope_spans, "spans", "spans"):
                total += 1
                outcome = _json_span(
                    span, resource, scope_name if isinstance(scope_name, str) else "", opts
                )
                result.add(outcome)
    return result, total


def _json_span(
    span: Any, resource: dict[str, Any] | None, scope_name: str, options: MappingOptions
) -> SpanOutcome:
    try:
        if not isinstance(span, dict) or resource is None:
            raise _Bad(REJECT_OTLP, "a span is not an object of the OTLP shape")
        view = SpanView(
            attrs=_json_attrs(span.get("attributes"), options),
            resource=resource,
            scope_name=scope_name,
            trace_id=_json_id(_j(span, "traceId", "trace_id"), 16),
            span_id=_json_id(_j(span, "spanId", "span_id"), 8),
            start_ns=_json_int(_j(span, "startTimeUnixNano", "start_time_unix_nano")),
            end_ns=_json_int(_j(span, "endTimeUnixNano", "end_time_unix_nano")),
        )
    except _Bad as bad:
        return Rejected(bad.reason, bad.detail)
    return map_span(view, options)


def map_json(body: bytes, options: MappingOptions | None = None) -> tuple[BatchResult, int]:
    """OTLP/JSON body -> (result, number of spans). Raises ``UndecodableRequest``."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise UndecodableRequest("the body is not JSON") from None
    return map_json_object(doc, options)


__all__ = [
    "DIALECTS",
    "IGNORE_REASONS",
    "BatchResult",
    "Ignored",
    "Mapped",
    "MappingOptions",
    "Rejected",
    "SpanOutcome",
    "SpanView",
    "UndecodableRequest",
    "map_json",
    "map_json_object",
    "map_protobuf",
    "map_span",
    "map_spans",
    "normalise_provider",
    "parse_protobuf",
    "spans_from_protobuf",
]
