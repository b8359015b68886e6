"""docs/prices.md through the pipeline: version choice, fallbacks, factors, unpriced, exact sums.

Every expected figure is written out by hand from the fixture table
(tests/fixtures/engine/prices_two_versions.yaml), never computed by the engine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from exporter.engine.aggregate import cell_dollars
from exporter.engine.labels import LabelCaps
from exporter.engine.pipeline import Pipeline
from exporter.prices.table import PriceTable, load_price_table

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "engine"
PRICES = FIXTURES / "prices_two_versions.yaml"
M = 1e-6  # USD per million -> per token

OCT = "2026-10-15T12:00:00Z"
NOV = "2026-11-15T12:00:00Z"


def table() -> PriceTable:
    return load_price_table(PRICES)


def run(*records: dict[str, Any], pipeline: Pipeline | None = None) -> dict[str, dict[str, Any]]:
    p = pipeline or Pipeline(table())
    for index, fields in enumerate(records):
        body = {"request_id": f"r{index}", **fields}
        p.ingest_line(json.dumps(body).encode() + b"\n")
    return p.aggregates.month_totals()


def anthropic(
    fresh: int = 0, read: int = 0, w5: int = 0, w1h: int = 0, out: int = 0
) -> dict[str, Any]:
    return {
        "input_tokens": fresh,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": w5 + w1h,
        "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1h},
        "output_tokens": out,
    }


def approx(value: float) -> Any:
    return pytest.approx(value, rel=1e-12, abs=1e-15)


# --- version selection -------------------------------------------------------------------------


def test_record_exactly_at_the_boundary_takes_the_new_version() -> None:
    usage = anthropic(fresh=1000)
    at = run({"ts": "2026-11-01T00:00:00Z", "model": "alpha", "usage": usage})
    before = run({"ts": "2026-10-31T23:59:59.999999Z", "model": "alpha", "usage": usage})
    assert at["2026-11"]["spend_usd"] == approx(1000 * 2.5 * M)  # November's input rate
    assert before["2026-10"]["spend_usd"] == approx(1000 * 3.0 * M)  # October's


def test_boundary_by_offset_and_epoch_forms() -> None:
    usage = anthropic(fresh=1000)
    for ts in ("2026-11-01T01:00:00+01:00", "2026-10-31T19:00:00-05:00", 1793491200, 1793491200000):
        totals = run({"ts": ts, "model": "alpha", "usage": usage})
        assert totals["2026-11"]["spend_usd"] == approx(1000 * 2.5 * M), ts


def test_model_missing_from_the_older_version_is_unpriced_but_counted() -> None:
    p = Pipeline(table())
    totals = run(
        {
            "ts": OCT,
            "model": "epsilon",
            "usage": anthropic(fresh=100, out=10),
            "tokens_before": 500,
            "tokens_after": 200,
            "count_method": "provider",
        },
        {"ts": NOV, "model": "epsilon", "usage": anthropic(fresh=100, out=10)},
        pipeline=p,
    )
    october, november = totals["2026-10"], totals["2026-11"]
    assert october["requests"] == 1 and october["unpriced"] == 1
    assert october["fresh_input_tokens"] == 100 and october["output_tokens"] == 10
    assert october["tokens_saved"] == 300  # tokens count...
    assert (
        october["usd_saved"] == 0.0 and october["spend_usd"] == 0.0
    )  # ...dollars are not invented
    assert p.aggregates.unpriced == {("2026-10", "epsilon", "unknown_model"): 1}
    assert november["unpriced"] == 0
    assert november["spend_usd"] == approx(100 * 0.9 * M + 10 * 2.7 * M)


def test_before_the_first_version_is_unpriced() -> None:
    p = Pipeline(table())
    totals = run(
        {"ts": "2026-09-30T23:59:59Z", "model": "alpha", "usage": anthropic(fresh=5)}, pipeline=p
    )
    assert totals["2026-09"]["unpriced"] == 1
    assert totals["2026-09"]["spend_usd"] == 0.0
    assert p.aggregates.unpriced == {("2026-09", "alpha", "before_first_version"): 1}


def test_unknown_model_is_never_priced_at_zero() -> None:
    p = Pipeline(table())
    totals = run(
        {
            "ts": NOV,
            "model": "mystery-9000",
            "usage": anthropic(fresh=10**6, out=10**6),
            "tokens_before": 100,
            "tokens_after": 50,
            "count_method": "provider",
            "would_have_saved": 7,
        },
        pipeline=p,
    )
    november = totals["2026-11"]
    assert november["unpriced"] == 1 and november["requests"] == 1
    assert november["fresh_input_tokens"] == 10**6
    assert november["tokens_saved"] == 50 and november["would_have_saved_tokens"] == 7
    # no cell of an unknown model carries rates: it cannot contribute a dollar, not even $0 priced
    for key, _cell, rates in p.aggregates.priced_cells():
        assert key[1] == "mystery-9000" and rates is None
    assert p.aggregates.unpriced == {("2026-11", "mystery-9000", "unknown_model"): 1}


def test_each_version_is_complete_on_its_own() -> None:
    # delta has cache_read 0.5 in October and none in November: November falls back to its
    # own input rate (no invented discount), it does not inherit October's 0.5
    usage = anthropic(read=1000)
    assert run({"ts": OCT, "model": "delta", "usage": usage})["2026-10"]["spend_usd"] == approx(
        1000 * 0.5 * M
    )
    november = run({"ts": NOV, "model": "delta", "usage": usage})["2026-11"]
    assert november["spend_usd"] == approx(1000 * 1.8 * M)
    assert november["cache_savings_usd"] == 0.0


# --- cache-write rates: explicit > family multiplier > plain input -----------------------------


def test_explicit_rate_beats_the_family_multiplier() -> None:
    totals = run({"ts": OCT, "model": "alpha", "usage": anthropic(w5=1000, w1h=1000)})["2026-10"]
    # alpha: explicit 3.9 / 6.3, not 1.25x3.0=3.75 / 2x3.0=6.0
    assert totals["spend_usd"] == approx(1000 * 3.9 * M + 1000 * 6.3 * M)
    assert totals["cache_savings_usd"] == approx(-(1000 * (3.9 - 3.0) * M + 1000 * (6.3 - 3.0) * M))


def test_family_multiplier_when_no_explicit_rate() -> None:
    october = run({"ts": OCT, "model": "beta", "usage": anthropic(w5=1000, w1h=1000)})["2026-10"]
    assert october["spend_usd"] == approx(1000 * 1.2 * 1.25 * M + 1000 * 1.2 * 2.0 * M)
    # November's family has its own multipliers
    november = run({"ts": NOV, "model": "beta", "usage": anthropic(w5=1000, w1h=1000)})["2026-11"]
    assert november["spend_usd"] == approx(1000 * 1.1 * 1.5 * M + 1000 * 1.1 * 2.5 * M)


def test_family_without_premium_gets_no_invented_premium() -> None:
    for ts, rate, month in ((OCT, 0.5, "2026-10"), (NOV, 0.4, "2026-11")):
        usage = anthropic(fresh=100, read=200, w5=300, w1h=400, out=0)
        totals = run({"ts": ts, "model": "gamma", "usage": usage})[month]
        assert totals["spend_usd"] == approx(1000 * rate * M)  # every input tier at the input rate
        assert totals["cache_savings_usd"] == 0.0  # no read discount either: cache_read absent


def test_model_without_family_gets_no_premium() -> None:
    totals = run({"ts": OCT, "model": "delta", "usage": anthropic(w5=10, w1h=20)})["2026-10"]
    assert totals["spend_usd"] == approx(30 * 2.0 * M)


def test_prices_table_fallbacks_loaded() -> None:
    october = table().versions[0]
    gamma = october.models["gamma"]
    assert (gamma.cache_read, gamma.cache_write_5m, gamma.cache_write_1h) == (0.5, 0.5, 0.5)
    beta = october.models["beta"]
    assert [beta.cache_write_5m, beta.cache_write_1h] == pytest.approx([1.5, 2.4])


# --- the formulas of docs/prices.md, one tier at a time -----------------------------------------


def test_spend_and_cache_savings_every_tier() -> None:
    usage = anthropic(fresh=1234, read=56789, w5=4321, w1h=987, out=654)
    totals = run({"ts": NOV, "model": "alpha", "usage": usage})["2026-11"]
    spend = (1234 * 2.5 + 56789 * 0.25 + 4321 * 3.1 + 987 * 5.2 + 654 * 12.0) * M
    cache = (56789 * (2.5 - 0.25) - 4321 * (3.1 - 2.5) - 987 * (5.2 - 2.5)) * M
    assert totals["spend_usd"] == approx(spend)
    assert totals["cache_savings_usd"] == approx(cache)
    assert totals["fresh_input_tokens"] == 1234
    assert totals["cache_read_tokens"] == 56789
    assert totals["cache_write_tokens"] == 4321 + 987
    assert totals["output_tokens"] == 654
    assert totals["cache_hit_rate"] == approx(56789 / (1234 + 56789 + 4321 + 987))


def test_openai_cached_tokens_are_not_billed_twice() -> None:
    usage = {
        "prompt_tokens": 10_000,
        "completion_tokens": 100,
        "prompt_tokens_details": {"cached_tokens": 8_000},
    }
    totals = run({"ts": NOV, "model": "alpha", "usage": usage})["2026-11"]
    assert totals["spend_usd"] == approx((2_000 * 2.5 + 8_000 * 0.25 + 100 * 12.0) * M)
    assert totals["cache_savings_usd"] == approx(8_000 * (2.5 - 0.25) * M)


def test_tokens_saved_is_clamped_at_zero_and_needs_both_sides() -> None:
    totals = run(
        {
            "ts": NOV,
            "model": "alpha",
            "tokens_before": 100,
            "tokens_after": 150,
            "count_method": "provider",
        },
        {"ts": NOV, "model": "alpha", "tokens_before": 100, "count_method": "provider"},
        {"ts": NOV, "model": "alpha", "tokens_after": 10, "count_method": "provider"},
        {
            "ts": NOV,
            "model": "alpha",
            "tokens_before": 1000,
            "tokens_after": 400,
            "count_method": "provider",
        },
    )["2026-11"]
    assert totals["tokens_saved"] == 600
    assert totals["usd_saved"] == approx(600 * 2.5 * M)
    assert totals["requests"] == 4


# --- billed_token_factor ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "ts", "month", "factor", "source"),
    [
        ("provider", OCT, "2026-10", 1.0, "provider"),
        ("tiktoken:o200k_base", OCT, "2026-10", 1.37, "table"),
        ("estimate:chars/4", OCT, "2026-10", 1.1, "table"),
        ("tiktoken:o200k_base", NOV, "2026-11", 1.2, "table"),
        ("estimate:chars/4", NOV, "2026-11", 1.0, "default"),  # November's family dropped it
        ("tiktoken:cl100k_base", OCT, "2026-10", 1.0, "default"),  # another family's factor
        ("something-else", OCT, "2026-10", 1.0, "default"),
        (None, OCT, "2026-10", 1.0, "default"),
    ],
)
def test_billed_token_factor_sources(
    method: str | None, ts: str, month: str, factor: float, source: str
) -> None:
    p = Pipeline(table())
    fields: dict[str, Any] = {
        "ts": ts,
        "model": "alpha",
        "tokens_before": 1000,
        "tokens_after": 300,
        "would_have_saved": 50,
    }
    if method is not None:
        fields["count_method"] = method
    totals = run(fields, pipeline=p)[month]
    rate = 3.0 if month == "2026-10" else 2.5
    assert totals["usd_saved"] == approx(700 * factor * rate * M)
    assert totals["would_have_saved_usd"] == approx(50 * factor * rate * M)
    [(key, cell, rates)] = list(p.aggregates.priced_cells())
    assert rates is not None
    dollars = cell_dollars(cell, rates, key[3])
    assert dollars.factor == pytest.approx(factor)
    assert dollars.factor_source == source


def test_factor_of_a_plain_family() -> None:
    totals = run(
        {
            "ts": OCT,
            "model": "gamma",
            "tokens_before": 1000,
            "tokens_after": 0,
            "count_method": "tiktoken:cl100k_base",
        }
    )["2026-10"]
    assert totals["usd_saved"] == approx(1000 * 0.9 * 0.5 * M)


def test_factor_never_touches_spend() -> None:
    usage = anthropic(fresh=100)
    totals = run(
        {
            "ts": OCT,
            "model": "alpha",
            "usage": usage,
            "tokens_before": 10,
            "tokens_after": 5,
            "count_method": "tiktoken:o200k_base",
        }
    )["2026-10"]
    assert totals["spend_usd"] == approx(100 * 3.0 * M)


def test_label_cap_on_methods_does_not_change_dollars() -> None:
    p = Pipeline(table(), caps=LabelCaps(max_methods=2))
    records = [
        {
            "ts": OCT,
            "model": "alpha",
            "tokens_before": 10,
            "tokens_after": 0,
            "count_method": f"m{i}",
        }
        for i in range(2)
    ]
    records.append(
        {
            "ts": OCT,
            "model": "alpha",
            "tokens_before": 1000,
            "tokens_after": 0,
            "count_method": "tiktoken:o200k_base",
        }
    )
    totals = run(*records, pipeline=p)["2026-10"]
    assert totals["usd_saved"] == approx((20 * 1.0 + 1000 * 1.37) * 3.0 * M)


# --- model resolution ---------------------------------------------------------------


def test_aliases_and_provider_qualified_names() -> None:
    usage = anthropic(fresh=1000)
    for fields in ({"model": "acme/alpha"}, {"model": "alpha-2026-09"}):
        assert run({"ts": OCT, "usage": usage, **fields})["2026-10"]["spend_usd"] == approx(
            3000 * M
        )
    zeta = run({"ts": OCT, "model": "zeta", "provider": "vendor", "usage": usage})["2026-10"]
    assert zeta["spend_usd"] == approx(700 * M) and zeta["unpriced"] == 0
    bare = run({"ts": OCT, "model": "zeta", "usage": usage})["2026-10"]
    assert bare["unpriced"] == 1


# --- a new table never reprices what was counted -------------------------------------------------


def test_new_table_does_not_reprice_counted_records(tmp_path: Path) -> None:
    p = Pipeline(table())
    run({"ts": NOV, "model": "alpha", "usage": anthropic(fresh=1000)}, pipeline=p)
    before = p.aggregates.month_totals()["2026-11"]["spend_usd"]
    dearer = tmp_path / "dearer.yaml"
    dearer.write_text(PRICES.read_text().replace("input: 2.5", "input: 25.0"))
    p.set_prices(load_price_table(dearer))
    assert p.aggregates.month_totals()["2026-11"]["spend_usd"] == before
    p.ingest_line(
        json.dumps(
            {"ts": NOV, "model": "alpha", "request_id": "new", "usage": anthropic(fresh=1000)}
        ).encode()
    )
    assert p.aggregates.month_totals()["2026-11"]["spend_usd"] == approx(
        1000 * 2.5 * M + 1000 * 25.0 * M
    )


def test_dollars_are_exact_sums_independent_of_split() -> None:
    # 10 records of 1 token == 1 record of 10 tokens, exactly (integer sums per cell)
    many = run(*({"ts": NOV, "model": "beta", "usage": anthropic(fresh=1)} for _ in range(10)))
    one = run({"ts": NOV, "model": "beta", "usage": anthropic(fresh=10)})
    assert many["2026-11"]["spend_usd"] == one["2026-11"]["spend_usd"]
