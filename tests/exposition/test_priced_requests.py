"""llm_savings_priced_requests_total: which prompt tier, service tier and window priced the dollars."""

from __future__ import annotations

import math
import re

from exporter.engine.pipeline import Pipeline
from exporter.exposition.render import Exposition
from exporter.prices.table import parse_price_table
from tests.engine.test_tiered_pricing import TABLE, V1, _line

NAME = "llm_savings_priced_requests_total"


def _samples(text: str) -> dict[str, float]:
    return {m.group(1): float(m.group(2)) for m in re.finditer(rf"^{NAME}(\{{.*\}}) (\S+)$", text, re.M)}


def test_v2_rates_are_counted_by_what_priced_them():
    pipeline = Pipeline(parse_price_table(TABLE, "t.yaml"))
    usage_long = {"promptTokenCount": 300_000, "candidatesTokenCount": 1}
    pipeline.ingest_lines([
        _line(request_id="1", usage=usage_long),
        _line(request_id="2", usage=usage_long, service_tier="batch"),
        _line(request_id="3", usage={"promptTokenCount": 10, "candidatesTokenCount": 1}, service_tier="batch"),
        _line(request_id="4", usage={"promptTokenCount": 10, "candidatesTokenCount": 1}),  # base: no series
        _line(request_id="5", model="gpt-4o", service_tier="scale"),
    ])
    text = Exposition(pipeline.month_of.start).render(pipeline.aggregates, []).decode()
    common = 'month="2025-07",model="{}",price_version="2025-06-17"'
    assert _samples(text) == {
        "{" + common.format("gemini-2.5-pro") + ',tier="above_200000",service_tier="default",window="none"}': 1,
        "{" + common.format("gemini-2.5-pro") + ',tier="above_200000",service_tier="batch",window="none"}': 1,
        "{" + common.format("gemini-2.5-pro") + ',tier="base",service_tier="batch",window="none"}': 1,
        "{" + common.format("gpt-4o") + ',tier="base",service_tier="unknown",window="none"}': 1,
    }


def test_v1_rates_add_no_series():
    pipeline = Pipeline(parse_price_table(V1, "t.yaml"))
    pipeline.ingest_line(_line(request_id="1", usage={"promptTokenCount": 300_000, "candidatesTokenCount": 1}))
    assert _samples(Exposition(pipeline.month_of.start).render(pipeline.aggregates, []).decode()) == {}


def test_priced_spend_is_the_spend_of_those_requests_by_the_same_labels():
    pipeline = Pipeline(parse_price_table(TABLE, "t.yaml"))
    pipeline.ingest_lines([
        _line(request_id="1", usage={"promptTokenCount": 300_000, "candidatesTokenCount": 2}),
        _line(request_id="2", usage={"promptTokenCount": 300_000, "candidatesTokenCount": 2}, service_tier="batch"),
        _line(request_id="3", usage={"promptTokenCount": 1_000, "candidatesTokenCount": 2}),  # base: no series
    ])
    text = Exposition(pipeline.month_of.start).render(pipeline.aggregates, []).decode()
    spend = {m.group(1): float(m.group(2)) for m in re.finditer(
        r"^llm_savings_priced_spend_usd_total(\{.*\}) (\S+)$", text, re.M)}
    common = 'month="2025-07",model="gemini-2.5-pro",price_version="2025-06-17",tier="above_200000"'
    # above 200k: 300k x 2.5 + 2 x 15 per million; batch halves both rates
    assert spend == {"{" + common + ',service_tier="default",window="none"}': 0.75003,
                     "{" + common + ',service_tier="batch",window="none"}': 0.375015}
    total = sum(float(m.group(1)) for m in re.finditer(r"^llm_savings_spend_usd_total\{.*\} (\S+)$", text, re.M))
    assert math.isclose(total, 0.75003 + 0.375015 + (1_000 * 1.25 + 2 * 10) / 1e6, rel_tol=1e-12)
