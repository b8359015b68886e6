"""``llm_savings``: only this project's savings attributes, no usage.

Savings and identity attributes, on any span: ``llm_savings.tokens_before``,
``llm_savings.tokens_after``, ``llm_savings.would_have_saved`` (counts),
``llm_savings.count_method``, ``llm_savings.request_id`` (overrides the
response id, so a gateway can make span and log line share a dedupe key). The
mapping reads them whatever the dialect. Because any span may carry them, they
claim a span only in the shared pass (after the gen_ai cache names): a span is
``llm_savings`` when it carries savings counts and nothing another dialect
reads, and a model span without usage falls back to it too (``FALLBACK`` in
the package).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.sources.otlp.attributes import S_AFTER, S_BEFORE, S_WOULD
from exporter.sources.otlp.dialects.base import Dialect


def detect(attrs: Mapping[str, Any], scope_name: str) -> bool:
    return False  # never by its own names first: see detect_shared


def detect_shared(attrs: Mapping[str, Any], scope_name: str) -> bool:
    return S_BEFORE in attrs or S_AFTER in attrs or S_WOULD in attrs


DIALECT = Dialect(name="llm_savings", detect=detect, usage=None, detect_shared=detect_shared)
