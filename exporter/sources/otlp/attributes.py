"""Typed readers of span attributes, with the one rule for malformed values.

A count attribute must be an OTLP ``intValue`` (or a ``stringValue`` of decimal
digits; in OTLP/JSON ``intValue`` is a string anyway) between 0 and 2**53-1,
else the span is rejected with ``invalid_count``; a ``doubleValue`` count is
rejected like a float count in a JSON line. A string attribute (model,
provider, ids, tenant, count method) of another type or over 256 characters
(1024 for ids) is rejected with ``invalid_field``. A JSON span that is not an
object of the OTLP shape is ``invalid_otlp``. The reasons are those of
``exporter.engine.records.REJECTION_REASONS``; everything else (missing model,
cache > input) is left to the record parser.

Also here: the attribute names every span may carry whatever its dialect
(model, provider, ids, agent markers, the ``llm_savings.*`` savings and
identity attributes); each dialect's usage names are in its own module under
``exporter.sources.otlp.dialects``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from exporter.engine.usage import MAX_COUNT

REJECT_COUNT = "invalid_count"
REJECT_FIELD = "invalid_field"
REJECT_OTLP = "invalid_otlp"
MAX_LABEL_CHARS = 256
MAX_ID_CHARS = 1024

# --- attribute names read on any span ----------------------------------------
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

S_BEFORE = "llm_savings.tokens_before"
S_AFTER = "llm_savings.tokens_after"
S_WOULD = "llm_savings.would_have_saved"
S_METHOD = "llm_savings.count_method"
S_REQUEST_ID = "llm_savings.request_id"
S_TENANT = "llm_savings.tenant"
SAVINGS_COUNT_KEYS = (S_BEFORE, S_AFTER, S_WOULD)
# The optimizer's own model calls on this request (net savings): its model and usage, input
# tokens including cache reads, as an OpenAI-chat block.
S_OPT_MODEL = "llm_savings.optimizer.model"
S_OPT_PROVIDER = "llm_savings.optimizer.provider"
S_OPT_SERVICE_TIER = "llm_savings.optimizer.service_tier"  # the tier the optimizer's call was billed at
S_OPT_INPUT = "llm_savings.optimizer.input_tokens"
S_OPT_OUTPUT = "llm_savings.optimizer.output_tokens"
S_OPT_CACHE_READ = "llm_savings.optimizer.cache_read_tokens"

DEFAULT_TENANT_ATTRIBUTES = (S_TENANT, "tenant.id")

# The keys above that a decoder must keep (the savings ones are under a kept prefix).
COMMON_KEYS = frozenset(
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
        "tenant.id",
    }
)
KEPT_PREFIXES = ("gen_ai.usage.", "llm_savings.")

_DIGITS = re.compile(r"[0-9]{1,16}")


class BadValue(Exception):
    """A malformed attribute or span: the span is rejected with ``reason``."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class Unsupported:
    """An attribute value of a type the mapping never accepts (array, kvlist, bytes)."""

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"<{self.kind}>"


def read_count(attrs: Mapping[str, Any], key: str) -> int | None:
    """The count under ``key``, None when absent; ``BadValue`` when malformed."""
    value = attrs.get(key)
    if value is None:
        return None
    if type(value) is int:
        if 0 <= value <= MAX_COUNT:
            return value
        raise BadValue(REJECT_COUNT, f"{key} is out of range")
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        number = int(value)
        if number <= MAX_COUNT:
            return number
        raise BadValue(REJECT_COUNT, f"{key} is out of range")
    raise BadValue(
        REJECT_COUNT, f"{key} has type {_type_name(value)}, expected a non-negative integer"
    )


def read_string(attrs: Mapping[str, Any], key: str, limit: int = MAX_LABEL_CHARS) -> str | None:
    """The non-empty string under ``key``, None when absent; ``BadValue`` when malformed."""
    value = attrs.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise BadValue(REJECT_FIELD, f"{key} has type {_type_name(value)}, expected a string")
    if len(value) > limit:
        raise BadValue(REJECT_FIELD, f"{key} is longer than {limit} characters")
    return value


def first_string(
    attrs: Mapping[str, Any], keys: tuple[str, ...], limit: int = MAX_LABEL_CHARS
) -> str | None:
    """The first non-empty string among ``keys``; a wrong type or length raises ``BadValue``."""
    for key in keys:
        value = attrs.get(key)
        if value is None or value == "":
            continue
        if type(value) is str and len(value) <= limit:
            return value
        read_string(attrs, key, limit)  # raises, naming the key
    return None


# The reads in C (_reads.c), built when the install had a C compiler: the same answers and, for a
# malformed value, the same error (they call the Python code above for it). The Python stays their twin.
first_string_python = first_string
try:
    from exporter.sources.otlp import _reads as c_reads
except ImportError:  # pragma: no cover - exercised by installs without a compiler
    c_reads = None  # type: ignore[assignment]
if c_reads is not None:
    c_reads.bind("read_string", read_string)
    c_reads.bind("first_string", first_string)
    c_reads.bind("read_count", read_count)
    first_string = c_reads.first_string


_LITERAL_NODES = (
    ast.Expression,
    ast.Dict,
    ast.List,
    ast.Tuple,
    ast.Constant,
    ast.UnaryOp,
    ast.USub,
    ast.UAdd,
    ast.Load,
)
MAX_LITERAL_DEPTH = 16


def parse_literal(text: str, limit: int) -> Any:
    """A Python literal (a ``repr`` of dicts, lists, numbers, strings, None), else None.

    For the ``repr`` strings some instrumentations write (LiteLLM's
    ``metadata.usage_object``). Never ``eval``: the text, at most ``limit``
    characters, is parsed as an expression, every node of which must be a
    literal (dict, list, tuple, constant, unary sign) nested at most
    ``MAX_LITERAL_DEPTH`` deep, and only then evaluated by ``ast.literal_eval``.
    Anything else (a call such as ``Usage(...)``, a name, an operator, a parse
    error) is None, never an exception.
    """
    if len(text) > limit:
        return None
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, _LITERAL_NODES) or depth > MAX_LITERAL_DEPTH:
            return None
        if isinstance(node, ast.UnaryOp) and not (
            isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float)
        ):
            return None
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    try:
        return ast.literal_eval(tree)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None


def _type_name(value: Any) -> str:
    if isinstance(value, Unsupported):
        return value.kind
    return type(value).__name__


__all__ = [
    "COMMON_KEYS",
    "DEFAULT_TENANT_ATTRIBUTES",
    "KEPT_PREFIXES",
    "MAX_ID_CHARS",
    "MAX_LABEL_CHARS",
    "REJECT_COUNT",
    "REJECT_FIELD",
    "REJECT_OTLP",
    "SAVINGS_COUNT_KEYS",
    "BadValue",
    "Unsupported",
    "c_reads",
    "first_string",
    "first_string_python",
    "parse_literal",
    "read_count",
    "read_string",
]
