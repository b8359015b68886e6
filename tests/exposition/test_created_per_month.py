"""OpenMetrics ``_created``: each month series carries its own month's start, whatever month came first.

The render formats a month's start once per family and reuses it for that
month's series; a series of another month, or of the unknown month, must not
get that text.
"""

from __future__ import annotations

from pathlib import Path

from prometheus_client.openmetrics.parser import text_string_to_metric_families

from exporter.engine.aggregate import CELL_WIDTH, FRESH, REQUESTS, UNKNOWN_MONTH, Aggregates, CellKey
from exporter.engine.pipeline import MonthOf
from exporter.exposition.render import Exposition
from exporter.prices.table import PricedModel, load_price_table

PRICES = Path(__file__).resolve().parents[1] / "fixtures" / "engine" / "prices_two_versions.yaml"
MONTHS = ("2026-11", "2026-10", UNKNOWN_MONTH, "2025-02", "2026-11")


def test_every_series_has_its_own_months_created() -> None:
    priced = load_price_table(PRICES).lookup("alpha", 1_795_000_000.0)
    assert isinstance(priced, PricedModel)
    agg = Aggregates()
    for i, month in enumerate(MONTHS):
        cell = [0] * CELL_WIDTH
        cell[REQUESTS], cell[FRESH] = 1 + i, 100 * (i + 1)
        agg.cells[CellKey(month, "alpha", f"t{i}", "", agg.rate_id(priced))] = cell
    month_of = MonthOf()
    text = Exposition(month_of.start).render(agg, (), openmetrics=True).decode()
    created: dict[str, float] = {}
    months_seen = set()
    for family in text_string_to_metric_families(text):
        if family.name != "llm_savings_requests":
            continue
        for sample in family.samples:
            months_seen.add(sample.labels["month"])
            if sample.name.endswith("_created"):
                key = sample.labels["tenant"]
                assert key not in created
                created[key] = sample.value
    assert months_seen == set(MONTHS)
    expected = {f"t{i}": month_of.start(month) for i, month in enumerate(MONTHS) if month != UNKNOWN_MONTH}
    assert created == expected
    assert len(set(created.values())) == 3  # three distinct known months
