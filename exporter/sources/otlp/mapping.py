"""OTLP trace spans -> canonical request records v1. Pure: no I/O, no metrics.

The decoders (``exporter.sources.otlp.decode``) reduce a request to
``SpanView`` values holding only the attributes the mapping reads (never
prompt or completion text), and ``map_span`` turns one view into a record
dict, or says why it is ignored or rejected. The output contract is in the
package docstring (``exporter.sources.otlp``); the dialects, which
instrumentation wrote a span and how its usage is read, are in
``exporter.sources.otlp.dialects``; the malformed-value rule is in
``exporter.sources.otlp.attributes``.

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
- ``tokens_before``, ``tokens_after``, ``would_have_saved``, ``count_method``:
  the ``llm_savings.*`` attributes, on any span.
- ``optimizer`` (the optimizer's own spend): ``llm_savings.optimizer.model``
  (and ``.provider``, ``.service_tier``) with ``.input_tokens`` (cache reads included),
  ``.cache_read_tokens`` and ``.output_tokens``, on the same span.
- ``service_tier``, ``response_cache``, ``requested_model``: ``exporter.sources.otlp.gateway``.
- ``source_dialect``: the dialect's name (``llm_savings`` when none claims the span).

Ignored (counted, not rejected): spans with no model and no usage/savings
attribute (``not_model_call``), OpenInference spans of a kind other than
LLM/EMBEDDING, and agent roll-ups that repeat their children's token totals
(``agent_rollup``: ``gen_ai.operation.name`` ``invoke_agent``/``create_agent``/
``execute_tool``/``invoke_workflow``, an OpenInference AGENT/CHAIN span, or a
span naming an agent without an operation, like pydantic-ai's agent run span).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from exporter.sources.otlp.attributes import (
    A_AGENT_NAME,
    A_OI_KIND,
    A_OPERATION,
    A_PAI_AGENT_NAME,
    A_RESPONSE_ID,
    MAX_ID_CHARS,
    S_AFTER,
    S_BEFORE,
    S_METHOD,
    S_OPT_CACHE_READ,
    S_OPT_INPUT,
    S_OPT_MODEL,
    S_OPT_OUTPUT,
    S_OPT_PROVIDER,
    S_OPT_SERVICE_TIER,
    S_REQUEST_ID,
    S_WOULD,
    BadValue,
    c_reads,
    first_string,
    read_count,
    read_string,
)
from exporter.sources.otlp.blocks import COMPLETENESS_ORDER, KNOWN_FLAGS, completeness, usage_block
from exporter.sources.otlp.correlate import IGNORE_SAME_CALL, correlate
from exporter.sources.otlp.correlator import NATIVE
from exporter.sources.otlp.decode import (
    UndecodableRequest,
    load_json,
    parse_protobuf,
    spans_from_json,
    spans_from_protobuf,
    views_of_protobuf,
)
from exporter.sources.otlp.dialects import FALLBACK, detect_dialect
from exporter.sources.otlp.dialects.base import RESPONSE_CACHE_HIT, UsageCounts, read_counts
from exporter.sources.otlp.gateway import gateway_keys
from exporter.sources.otlp.json_typed import typed_spans
from exporter.sources.otlp.plan import UNDECIDED, Plan, plan_for
from exporter.sources.otlp.providers import _FOLDED, PROVIDER_ALIASES, normalise_provider
from exporter.sources.otlp.spans import (
    DEFAULT_OPTIONS,
    BatchResult,
    Ignored,
    Mapped,
    MappingOptions,
    Rejected,
    SpanOutcome,
    SpanView,
)

IGNORE_NOT_MODEL_CALL = "not_model_call"
IGNORE_AGENT_ROLLUP = "agent_rollup"
IGNORE_REASONS = (IGNORE_NOT_MODEL_CALL, IGNORE_AGENT_ROLLUP, IGNORE_SAME_CALL)
# One outcome per reason, shared (frozen): a third of a typical request's spans are ignored.
_IGNORED = {reason: Ignored(reason) for reason in IGNORE_REASONS}

_AGGREGATE_OPERATIONS = frozenset(
    {"invoke_agent", "create_agent", "execute_tool", "invoke_workflow"}
)
_OI_MODEL_KINDS = frozenset({"LLM", "EMBEDDING"})
_OI_ROLLUP_KINDS = frozenset({"AGENT", "CHAIN"})

_SAVINGS_FIELDS = (
    (S_BEFORE, "tokens_before"),
    (S_AFTER, "tokens_after"),
    (S_WOULD, "would_have_saved"),
)


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
    opts = options or DEFAULT_OPTIONS
    return _map(span, opts, plan_for(_plans(opts), span.attrs, span.scope_name, opts.tenant_attributes))


def _plans(opts: MappingOptions) -> dict[tuple[Any, ...], Plan]:
    """The options' cache of span shapes (``exporter.sources.otlp.plan``)."""
    plans = opts._memory.get("plans")
    if plans is None:
        plans = opts._memory.setdefault("plans", {})
    return plans  # type: ignore[no-any-return]


def _map(span: SpanView, opts: MappingOptions, plan: Plan) -> SpanOutcome:
    """``map_span`` given the span's shape plan: only the names the span carries are read,
    in the documented precedence, so a malformed value rejects it as it always did."""
    attrs = span.attrs
    try:
        if plan.rollup:
            skip = _rollup_or_not_call(attrs)
            if skip is not None:
                return _IGNORED[skip]
        model = first_string(attrs, plan.model_keys) if plan.model_keys else None
        dialect = plan.dialect
        if dialect is UNDECIDED:
            dialect = detect_dialect(attrs, span.scope_name)
        if model is None and dialect is None and not plan.has_savings:
            return _IGNORED[IGNORE_NOT_MODEL_CALL]
        if dialect is None:
            dialect = FALLBACK
        record: dict[str, Any] = {}
        end_ns = span.end_ns or span.start_ns
        if end_ns > 0:
            record["ts"] = end_ns / 1e9
        request_id = read_string(attrs, S_REQUEST_ID, MAX_ID_CHARS) if plan.request_id_key else None
        if request_id is None and dialect.request_id is not None:
            request_id = dialect.request_id(attrs)
        if request_id is None and plan.response_id_key:
            request_id = read_string(attrs, A_RESPONSE_ID, MAX_ID_CHARS)
        if request_id is None and span.trace_id and span.span_id:
            request_id = f"{span.trace_id}:{span.span_id}"
        if request_id is not None:
            record["request_id"] = request_id
        if model is not None:
            record["model"] = model
        if plan.provider_keys:
            provider = first_string(attrs, plan.provider_keys)
            if provider is not None:  # normalise_provider's cache, looked up inline first
                record["provider"] = _FOLDED.get(provider) or normalise_provider(provider)
        tenant = first_string(attrs, plan.tenant_keys) if plan.tenant_keys else None
        if tenant is None and span.resource:
            tenant = first_string(span.resource, opts.tenant_attributes)
        if tenant is not None:
            record["tenant"] = tenant
        counts: UsageCounts | None
        if plan.counts is not None:  # the plan's dialect: the count names this shape carries, read as they are
            counts = read_counts(attrs, plan.counts, dialect.counts_include_cache)
        else:
            counts = dialect.usage(attrs) if dialect.usage is not None else None
        if counts is not None:
            usage, flags = usage_block(counts, dialect, opts.input_includes_cache)
            if usage:
                record["usage"] = usage
            if flags:
                record["source_flags"] = completeness(flags)
        if plan.savings_or_method:
            _savings(attrs, record)
        if plan.optimizer:
            record["optimizer"] = _optimizer(attrs)
        if plan.gateway:
            record.update(gateway_keys(attrs))
        record["source_dialect"] = dialect.name
        return Mapped(record)
    except BadValue as bad:
        end_ns = span.end_ns or span.start_ns
        return Rejected(bad.reason, bad.detail, end_ns / 1e9 if end_ns > 0 else None)


def _savings(attrs: Mapping[str, Any], record: dict[str, Any]) -> None:
    """The ``llm_savings.*`` savings counts and counting method, into ``record``."""
    for key, out_key in _SAVINGS_FIELDS:
        value = read_count(attrs, key)
        if value is not None:
            record[out_key] = value
    method = read_string(attrs, S_METHOD)
    if method is not None:
        record["count_method"] = method


def _optimizer(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The record's ``optimizer`` block from ``llm_savings.optimizer.*`` (a missing model is the record
    parser's ``invalid_field``, as for a canonical line)."""
    details = {"cached_tokens": read_count(attrs, S_OPT_CACHE_READ) or 0}
    block: dict[str, Any] = {"usage": {"prompt_tokens": read_count(attrs, S_OPT_INPUT) or 0,
                                       "completion_tokens": read_count(attrs, S_OPT_OUTPUT) or 0,
                                       "prompt_tokens_details": details}}
    model = read_string(attrs, S_OPT_MODEL)
    if model is not None:
        block["model"] = model
    provider = read_string(attrs, S_OPT_PROVIDER)
    if provider is not None:
        block["provider"] = normalise_provider(provider)
    tier = read_string(attrs, S_OPT_SERVICE_TIER)
    if tier is not None:  # the record parser checks it is a tier name
        block["service_tier"] = tier
    return block


# _map_into's loop in C (_reads.c): _map, step for step, with the helpers above for what is rare.
# "c" when it and the counted-once rules' inner loop (_correlator.c) are built, else "python".
MAPPING_LOOP = "c" if c_reads is not None and NATIVE else "python"
if c_reads is not None:
    c_reads.setup_mapping((
        plan_for, detect_dialect, normalise_provider, _FOLDED, _savings, _optimizer,
        gateway_keys, completeness, UNDECIDED, FALLBACK, _IGNORED[IGNORE_NOT_MODEL_CALL], Mapped, Rejected,
        BadValue, Plan, SpanView, S_REQUEST_ID, A_RESPONSE_ID, MAX_ID_CHARS,
        # _rollup_or_not_call's names and sets, and completeness's order, for their C twins
        A_OPERATION, A_OI_KIND, A_AGENT_NAME, A_PAI_AGENT_NAME, _AGGREGATE_OPERATIONS, _OI_MODEL_KINDS,
        _OI_ROLLUP_KINDS, _IGNORED[IGNORE_AGENT_ROLLUP], COMPLETENESS_ORDER, KNOWN_FLAGS, RESPONSE_CACHE_HIT,
    ))


def map_spans(spans: Iterable[SpanView], options: MappingOptions | None = None) -> BatchResult:
    """Map every span of a request; rejections and ignores counted by reason.

    One provider call reported by several spans is counted once (``correlate``).
    """
    opts = options or DEFAULT_OPTIONS
    result = BatchResult()
    _map_into(result, spans, opts)
    return result


def _map_into(result: BatchResult, spans: Iterable[SpanView], opts: MappingOptions) -> None:
    """Map ``spans`` with their shape plans, apply the counted-once rules, add the outcomes to ``result``."""
    plans, tenant_keys = _plans(opts), opts.tenant_attributes
    views = spans if isinstance(spans, list) else list(spans)
    mapped = None if c_reads is None else c_reads.map_all(views, plans, tenant_keys, opts.input_includes_cache)
    if mapped is not None:  # the loop below, in C (_reads.c)
        outcomes, owns = mapped
    else:
        outcomes, owns = [], []
        for span in views:
            plan = plans.get((span.scope_name, *span.attrs))  # plan_for's lookup, inline: a call less a span
            if plan is None:
                plan = plan_for(plans, span.attrs, span.scope_name, tenant_keys)
            outcomes.append(_map(span, opts, plan))
            owns.append(plan.own)
    correlate(views, outcomes, opts, owns)
    records, ignored = result.records, result.ignored
    for outcome in outcomes:  # BatchResult.add's common cases, inline
        kind = type(outcome)
        if kind is Mapped:
            records.append(outcome.record)
        elif kind is Ignored:
            ignored[outcome.reason] += 1
        else:
            result.add(outcome)


def map_protobuf(body: bytes, options: MappingOptions | None = None) -> tuple[BatchResult, int]:
    """Protobuf body -> (result, number of spans). Raises ``UndecodableRequest``."""
    views = views_of_protobuf(body, options)
    return map_spans(views, options), len(views)


def map_json_object(doc: Any, options: MappingOptions | None = None) -> tuple[BatchResult, int]:
    """A decoded OTLP/JSON ExportTraceServiceRequest -> (result, number of spans).

    The envelope (resourceSpans/scopeSpans lists) must be well formed, else
    ``UndecodableRequest``; a malformed span inside it is rejected alone.
    """
    opts = options or DEFAULT_OPTIONS
    return _map_views(spans_from_json(doc, opts), opts)


def _map_views(views: Iterable[SpanView | Rejected], opts: MappingOptions) -> tuple[BatchResult, int]:
    """``map_spans`` over a JSON request's views, some of them rejected already; with the count of spans."""
    result = BatchResult()
    total = 0
    kept: list[SpanView] = []
    for view in views:
        total += 1
        if isinstance(view, Rejected):
            result.add(view)
        else:
            kept.append(view)
    _map_into(result, kept, opts)
    return result, total


def map_json(body: bytes, options: MappingOptions | None = None) -> tuple[BatchResult, int]:
    """OTLP/JSON body -> (result, number of spans). Raises ``UndecodableRequest``.

    The typed decode (``json_typed``) reads the common body; any other goes through ``load_json``.
    """
    opts = options or DEFAULT_OPTIONS
    fast = map_json_typed(body, opts)
    return fast if fast is not None else map_json_object(load_json(body), opts)


def map_json_typed(body: bytes, options: MappingOptions | None = None) -> tuple[BatchResult, int] | None:
    """``map_json`` by the typed decode alone; None when the body is for the general decoder."""
    opts = options or DEFAULT_OPTIONS
    views = typed_spans(body, opts)
    return None if views is None else _map_views(views, opts)


__all__ = [
    "IGNORE_REASONS",
    "MAPPING_LOOP",
    "PROVIDER_ALIASES",
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
    "map_json_typed",
    "map_protobuf",
    "map_span",
    "map_spans",
    "normalise_provider",
    "parse_protobuf",
    "spans_from_protobuf",
]
