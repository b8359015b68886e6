"""OpenTelemetry collector file exporter output -> canonical records.

The collector's ``file`` exporter (``format: json``, the default) writes one
``ExportTraceServiceRequest`` as OTLP/JSON per line. The shared tailer
(``exporter.sources.tail.tailer``) hands each complete line here; this module
only turns bytes into records, with the same mapping as the OTLP/HTTP
receiver (``exporter.sources.otlp.mapping``), so a span gives the same record
and the same request_id whichever way it arrives.

A line that is not JSON or not an export request is one ``invalid_otlp``
rejection; a metrics or logs line written to the same file (``resourceMetrics``
/ ``resourceLogs`` without ``resourceSpans``) and a blank line are skipped
without a count; inside a good line each span is mapped, ignored or rejected
on its own.
"""

from __future__ import annotations

from typing import Any

import orjson

from exporter.sources.otlp.attributes import REJECT_OTLP
from exporter.sources.otlp.mapping import MappingOptions, UndecodableRequest, map_json_object, map_json_typed

_BOM = b"\xef\xbb\xbf"
_OTHER_SIGNALS = ("resourceMetrics", "resource_metrics", "resourceLogs", "resource_logs")


def records_from_otlp_json_line(
    line: bytes, options: MappingOptions | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """One file-exporter line -> (records, rejection reasons, one per rejected span or line)."""
    if line.startswith(_BOM):
        line = line[3:]
    if not line.strip():
        return [], []
    fast = map_json_typed(line, options)  # a spans line as the Collector writes it
    if fast is not None:
        return fast[0].records, [reason for reason, _ in fast[0].rejections]
    try:
        doc = orjson.loads(line)
    except orjson.JSONDecodeError:
        return [], [REJECT_OTLP]
    is_spans = isinstance(doc, dict) and ("resourceSpans" in doc or "resource_spans" in doc)
    if isinstance(doc, dict) and not is_spans and any(key in doc for key in _OTHER_SIGNALS):
        return [], []
    try:
        result, _ = map_json_object(doc, options)
    except UndecodableRequest:
        return [], [REJECT_OTLP]
    reasons = [reason for reason, _ in result.rejections]
    return result.records, reasons


__all__ = ["records_from_otlp_json_line"]
