"""The report as JSON (``schema: llm-savings-report/v1``): exact values, for programs.

Each month's ``totals`` is replay's month object as ``replay --json`` prints it (same
keys, same numbers); floats are written as Python's shortest round-trip form, so a
value reads back as exactly the float that was computed, and nothing is rounded.
"""

from __future__ import annotations

import json
from typing import Any

from exporter.report.summary import ComponentRow, Count, MonthSummary, Report, Row, Tally


def _row(row: Row, key: str) -> dict[str, Any]:
    return {key: row.name, "requests": row.requests, "tokens_saved": row.tokens_saved, "usd_saved": row.usd_saved,
            "spend_usd": row.spend_usd, "cache_savings_usd": row.cache_savings_usd,
            "unpriced_requests": row.unpriced_requests}


def _tally(tally: Tally, key: str) -> dict[str, Any]:
    return {key: tally.name, "requests": tally.requests, "tokens_saved": tally.tokens_saved,
            "usd_saved": tally.usd_saved, "spend_usd": tally.spend_usd}


def _component(row: ComponentRow) -> dict[str, Any]:
    return {"component": row.name, "tokens_saved": row.tokens_saved, "usd_saved": row.usd_saved}


def _counts(counts: tuple[Count, ...]) -> dict[str, int]:
    return {count.name: count.total for count in counts}


def _kinds(month: MonthSummary) -> dict[str, Any]:
    """The four kinds, their total and shares, and the response-cache and routing details."""
    kinds = month.kinds
    return {"kinds": [{"kind": line.name, "usd_saved": line.usd, "share": line.share} for line in month.by_kind],
            "total_usd_saved": sum(line.usd for line in month.by_kind),
            "response_cache_hits": kinds.response_cache_hits,
            "response_cache_unpriced_hits": kinds.response_cache_unpriced_hits,
            "routing_savings_usd": kinds.routing_savings_usd, "routing_extra_cost_usd": kinds.routing_extra_usd}


def month_object(month: MonthSummary) -> dict[str, Any]:
    """One month of the JSON report."""
    provenance = month.provenance
    return {
        "totals": dict(month.totals),
        "saved_pct": month.saved_pct,
        "compression_ratio": month.compression_ratio,
        "net_usd_saved": month.net_usd_saved,
        "savings_by_kind": _kinds(month),
        "by_model": [_row(row, "model") for row in month.by_model],
        "by_tenant": [_row(row, "tenant") for row in month.by_tenant],
        "by_component": [_component(row) for row in month.by_component],
        "provenance": {
            "price_versions": [_tally(t, "price_version") for t in provenance.price_versions],
            "count_methods": [_tally(t, "method") for t in provenance.count_methods],
            "factor_sources": [_tally(t, "factor_source") for t in provenance.factor_sources],
            "records_flagged": _counts(provenance.flagged),
            "records_rejected": _counts(provenance.rejected),
            "unpriced_requests": _counts(provenance.unpriced),
            "duplicates": provenance.duplicates,
        },
    }


def report_object(report: Report) -> dict[str, Any]:
    """The whole report as JSON-ready data."""
    return {
        "schema": report.schema,
        "source": report.source,
        "generated_at": report.generated_at,
        "timezone": report.timezone,
        "month": report.month,
        "note": report.note,
        "price_versions": list(report.price_versions),
        "months": {month.month: month_object(month) for month in report.months},
    }


def render_json(report: Report) -> str:
    return json.dumps(report_object(report), indent=2, allow_nan=False) + "\n"
