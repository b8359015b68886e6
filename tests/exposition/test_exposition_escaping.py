"""Label values with quotes and backslashes are escaped and parse back to themselves."""

from __future__ import annotations

import json

from prometheus_client.parser import text_string_to_metric_families

from exporter.engine.pipeline import Pipeline
from exporter.exposition.render import Exposition
from exporter.prices.table import load_price_table


def test_quotes_and_backslashes_roundtrip() -> None:
    tenant = 'team "a" \\ b'
    pipeline = Pipeline(load_price_table())
    line = json.dumps({"ts": "2026-11-03T10:00:00Z", "request_id": "r", "model": "gpt-4o", "tenant": tenant})
    pipeline.ingest_line(line.encode())
    text = Exposition(pipeline.month_of.start).render(pipeline.aggregates, []).decode()
    assert 'tenant="team \\"a\\" \\\\ b"' in text
    tenants = {s.labels["tenant"] for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == "llm_savings_requests_total"}
    assert tenants == {tenant}
