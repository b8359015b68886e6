"""Pipeline routes (the remembered price/rate/labels of a record's cell) never change what is counted.

A route is remembered only while it is exact: label caps that fold a value
into ``other`` must count every such record, a new price table must price
the records after it, and new aggregates must get their own rate ids.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.engine.aggregate import Aggregates
from exporter.engine.labels import LabelCaps
from exporter.engine.pipeline import Pipeline
from exporter.prices.table import load_price_table

PRICES = Path(__file__).resolve().parents[1] / "fixtures" / "engine" / "prices_two_versions.yaml"
NOV = "2026-11-15T12:00:00Z"


def line(**fields: Any) -> bytes:
    body = {"ts": NOV, "model": "alpha", "tokens_before": 10, "tokens_after": 4, "count_method": "custom",
            "usage": {"input_tokens": 100, "output_tokens": 1}, **fields}
    return json.dumps(body).encode()


def test_every_folded_record_counts_its_overflow() -> None:
    caps = LabelCaps(max_models=1, max_tenants=1, max_methods=1)
    p = Pipeline(load_price_table(PRICES), caps=caps)
    for index in range(5):
        p.ingest_line(line(request_id=f"a{index}", model="alpha", tenant="t1", count_method="m1"))
    for index in range(7):
        p.ingest_line(line(request_id=f"b{index}", model="mystery", tenant="t2", count_method="m2"))
    assert (caps.model.overflow, caps.tenant.overflow, caps.method.overflow) == (7, 7, 7)
    keys = {key[1:4] for key in p.aggregates.cells}
    assert keys == {("alpha", "t1", "m1"), ("other", "other", "other")}
    assert sum(cell[0] for cell in p.aggregates.cells.values()) == 12


def test_method_label_only_for_records_with_savings() -> None:
    """A record without savings takes no method slot, even after one with savings took the route's key."""
    caps = LabelCaps(max_methods=1)
    p = Pipeline(load_price_table(PRICES), caps=caps)
    p.ingest_line(line(request_id="a", tokens_before=None, tokens_after=None, count_method="first"))
    p.ingest_line(line(request_id="b", count_method="second"))
    assert caps.method.values == {"second"} and caps.method.overflow == 0
    assert {key[3] for key in p.aggregates.cells} == {"", "second"}


def test_new_prices_apply_to_the_records_after_them(tmp_path: Path) -> None:
    p = Pipeline(load_price_table(PRICES))
    p.ingest_line(line(request_id="a"))
    dearer = tmp_path / "dearer.yaml"
    dearer.write_text(PRICES.read_text().replace("input: 2.5", "input: 25.0"))  # alpha in November
    p.prices = load_price_table(dearer)  # plain assignment, as well as set_prices
    p.ingest_line(line(request_id="b"))
    rates = sorted(p.aggregates.rate_book[key[4]].input for key in p.aggregates.cells)
    assert rates == [2.5, 25.0]


def test_new_aggregates_get_their_own_rate_ids() -> None:
    p = Pipeline(load_price_table(PRICES))
    p.ingest_line(line(request_id="a", model="beta"))
    p.ingest_line(line(request_id="b", model="alpha"))  # rate id 1 here
    p.aggregates = Aggregates()
    p.ingest_line(line(request_id="c", model="alpha"))  # rate id 0 there
    (key,) = p.aggregates.cells
    assert p.aggregates.rate_book[key[4]].model == "alpha"


names = st.sampled_from(["alpha", "beta", "gamma", "mystery", "acme/alpha", "zeta"])
records = st.lists(st.fixed_dictionaries({
    "model": names, "provider": st.sampled_from([None, "vendor", "acme"]),
    "tenant": st.sampled_from([None, "t1", "t2", "t3"]),
    "count_method": st.sampled_from([None, "", "provider", "custom", "other-method", "tiktoken:o200k_base"]),
    "tokens_before": st.sampled_from([None, 50]), "tokens_after": st.sampled_from([None, 20, 80]),
    "would_have_saved": st.sampled_from([None, 7]),
    "ts": st.sampled_from(["2026-10-15T12:00:00Z", "2026-10-31T23:59:59Z", "2026-11-01T00:00:00Z", NOV]),
}), max_size=40)


@settings(max_examples=150, deadline=None)
@given(records, st.integers(1, 3))
def test_routes_equal_working_every_record_out(batch: list[dict[str, Any]], cap: int) -> None:
    """With tight caps, the same records through a pipeline that forgets its routes after every record."""
    def run(forget: bool) -> tuple[Any, ...]:
        caps = LabelCaps(max_models=cap, max_tenants=cap, max_methods=cap)
        p = Pipeline(load_price_table(PRICES), caps=caps)
        for index, fields in enumerate(batch):
            p.ingest_line(line(request_id=f"r{index}", **{k: v for k, v in fields.items() if v is not None}))
            if forget:
                p._clear_routes()
        agg = p.aggregates
        return (agg.month_totals(), agg.cells, agg.components, agg.unpriced, agg.divergence, agg.flagged,
                [c.overflow for c in caps.all()], [sorted(c.values) for c in caps.all()])

    assert run(forget=False) == run(forget=True)
