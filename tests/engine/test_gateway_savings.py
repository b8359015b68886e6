"""Response-cache hits and model routing, against an independent oracle.

The oracle below re-implements the arithmetic of docs/prices.md ("Gateway savings") from the rates of
tests/fixtures/engine/prices_two_versions.yaml written out here as decimals (October version; beta's cache
writes from its family multipliers 1.25 and 2.0, gamma's cache rates = its input rate), with Fractions,
record by record: no engine code is used to compute an expected figure.
"""

from __future__ import annotations

import json
from fractions import Fraction as F
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.cli.main import main
from exporter.engine.aggregate import Aggregates
from exporter.engine.pipeline import Pipeline
from exporter.exposition.render import Exposition
from exporter.prices.table import load_price_table
from tests.engine.test_arithmetic import PRICES, anthropic
from tests.support.processes import samples

OCT = "2026-10-15T12:00:00Z"
# (input, cache_read, cache_write_5m, cache_write_1h, output) per million tokens, October
RATES = {
    "alpha": (F("3.0"), F("0.3"), F("3.9"), F("6.3"), F("15.0")),
    "beta": (F("1.2"), F("0.12"), F("1.5"), F("2.4"), F("5.0")),
    "gamma": (F("0.5"), F("0.5"), F("0.5"), F("0.5"), F("1.5")),
    "delta": (F("2.0"), F("0.5"), F("2.0"), F("2.0"), F("8.0")),
}
MODELS = (*RATES, "epsilon")  # epsilon is unpriced in October


def oracle_bill(model: str, tiers: tuple[int, ...]) -> F:
    return sum((t * r for t, r in zip(tiers, RATES[model], strict=True)), F(0)) / 1_000_000


def tiers_of(usage: dict[str, Any] | None) -> tuple[int, ...] | None:
    """The five tiers of an ``anthropic()`` block (fresh, read, 5m, 1h, output), None when none or all zero."""
    if usage is None:
        return None
    split = usage["cache_creation"]
    found = (usage["input_tokens"], usage["cache_read_input_tokens"], split["ephemeral_5m_input_tokens"],
             split["ephemeral_1h_input_tokens"], usage["output_tokens"])
    return found if any(found) else None


def oracle(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The expected month totals of hits and routing, record by record (first id wins, as dedupe keeps)."""
    out: dict[str, Any] = {"requests": 0, "response_cache_hits": 0, "response_cache_unpriced_hits": 0,
                           "routed_requests": 0, "routing_unpriced_requests": 0, "avoided": F(0), "saved": F(0),
                           "extra": F(0), "diffs": F(0), "spend": F(0)}
    seen: set[str] = set()
    for record in records:
        if record["request_id"] in seen:
            continue
        seen.add(record["request_id"])
        model, tiers = record["model"], tiers_of(record.get("usage"))
        if record.get("response_cache") or "response_cache_hit" in record.get("source_flags", ()):
            out["response_cache_hits"] += 1
            if tiers is None or model not in RATES:
                out["response_cache_unpriced_hits"] += 1
            else:
                out["avoided"] += oracle_bill(model, tiers)
            continue
        out["requests"] += 1
        if tiers is not None and model in RATES:
            out["spend"] += oracle_bill(model, tiers)
        requested = record.get("requested_model")
        if requested is None or requested == model:
            continue
        out["routed_requests"] += 1
        if tiers is None or model not in RATES or requested not in RATES:
            out["routing_unpriced_requests"] += 1
            continue
        diff = oracle_bill(requested, tiers) - oracle_bill(model, tiers)
        out["diffs"] += diff
        if diff >= 0:
            out["saved"] += diff
        else:
            out["extra"] -= diff
    return out


def run(records: list[dict[str, Any]]) -> Pipeline:
    pipeline = Pipeline(load_price_table(PRICES))
    pipeline.ingest_lines([json.dumps({"ts": OCT, **r}).encode() for r in records])
    return pipeline


def october(pipeline: Pipeline) -> dict[str, Any]:
    totals: dict[str, Any] = pipeline.aggregates.month_totals()["2026-10"]
    return totals


def assert_matches_oracle(totals: dict[str, Any], expected: dict[str, Any]) -> None:
    for key in ("requests", "response_cache_hits", "response_cache_unpriced_hits", "routed_requests",
                "routing_unpriced_requests"):
        assert totals[key] == expected[key], key
    assert totals["response_cache_avoided_usd"] == float(expected["avoided"])
    assert totals["routing_savings_usd"] == float(expected["saved"])
    assert totals["routing_extra_cost_usd"] == float(expected["extra"])
    assert totals["routing_net_usd"] == float(expected["diffs"])  # savings - extra = sum of per-record diffs
    assert totals["spend_usd"] == float(expected["spend"])


# --- the worked replay ---------------------------------------------------------------------------------------

LOG: list[dict[str, Any]] = [
    {"request_id": "h1", "model": "alpha", "response_cache": "exact",
     "usage": anthropic(fresh=1000, read=2000, w5=300, w1h=400, out=50)},
    {"request_id": "h2", "model": "beta", "response_cache": "semantic",
     "usage": anthropic(fresh=4000, read=1000, w5=100, out=200)},
    {"request_id": "h3", "model": "gamma", "source_flags": ["response_cache_hit"],
     "usage": anthropic(fresh=100, out=10)},
    {"request_id": "h4", "model": "alpha", "response_cache": "exact"},  # no usage: dollars unknown
    {"request_id": "h5", "model": "epsilon", "response_cache": "semantic", "usage": anthropic(fresh=10)},  # unpriced
    {"request_id": "h6", "model": "gamma", "requested_model": "alpha", "response_cache": "exact",
     "usage": anthropic(fresh=300, out=30)},  # a hit that was also routed: only the hit counts
    {"request_id": "h1", "model": "alpha", "response_cache": "exact", "usage": anthropic(fresh=9)},  # duplicate
    {"request_id": "r1", "model": "gamma", "requested_model": "alpha", "usage": anthropic(fresh=10_000, out=1_000)},
    {"request_id": "r2", "model": "alpha", "requested_model": "gamma", "usage": anthropic(fresh=200, out=20)},
    {"request_id": "r3", "model": "delta", "requested_model": "alpha", "usage": anthropic(read=5_000)},  # dearer
    {"request_id": "r4", "model": "gamma", "requested_model": "epsilon", "usage": anthropic(fresh=1)},  # unpriced
    {"request_id": "r5", "model": "gamma", "requested_model": "alpha"},  # no usage
    {"request_id": "r6", "model": "alpha", "requested_model": "alpha", "usage": anthropic(fresh=7)},  # not routed
    {"request_id": "p1", "model": "beta", "usage": anthropic(fresh=500, out=5)},
]


def test_worked_replay_gives_the_dollars_the_rates_give() -> None:
    totals = october(run(LOG))
    # written out by hand from the October rates
    avoided = (F(1000 * 3) + F(2000) * F("0.3") + F(300) * F("3.9") + F(400) * F("6.3") + F(50 * 15)
               + F(4000) * F("1.2") + F(1000) * F("0.12") + F(100) * F("1.5") + F(200 * 5)
               + F(100) * F("0.5") + F(10) * F("1.5")
               + F(300) * F("0.5") + F(30) * F("1.5")) / 1_000_000
    saved = (F(10_000) * (F(3) - F("0.5")) + F(1_000) * (F(15) - F("1.5"))) / 1_000_000
    extra = (F(200) * (F(3) - F("0.5")) + F(20) * (F(15) - F("1.5"))  # r2: routed to a dearer model
             + F(5_000) * (F("0.5") - F("0.3"))) / 1_000_000  # r3: cache reads dearer at delta
    assert totals["response_cache_avoided_usd"] == float(avoided)
    assert totals["routing_savings_usd"] == float(saved)
    assert totals["routing_extra_cost_usd"] == float(extra)
    assert totals["routing_net_usd"] == float(saved - extra)
    assert (totals["response_cache_hits"], totals["response_cache_unpriced_hits"]) == (6, 2)
    assert (totals["routed_requests"], totals["routing_unpriced_requests"]) == (5, 2)
    assert totals["requests"] == 7 and totals["duplicates"] == 1  # hits are no provider calls
    spend = (F(10_000) * F("0.5") + F(1_000) * F("1.5") + F(200 * 3) + F(20 * 15) + F(5_000) * F("0.5")
             + F(1) * F("0.5") + F(7 * 3) + F(500) * F("1.2") + F(5 * 5)) / 1_000_000
    assert totals["spend_usd"] == float(spend)
    assert_matches_oracle(totals, oracle(LOG))


def test_worked_replay_on_metrics() -> None:
    pipeline = run(LOG)
    found = samples(Exposition(pipeline.month_of.start).render(pipeline.aggregates, ()).decode())
    hits = found["llm_savings_response_cache_hits_total"]
    by_kind: dict[str, float] = {}
    for labels, value in hits.items():
        by_kind[dict(labels)["kind"]] = by_kind.get(dict(labels)["kind"], 0) + value
    assert by_kind == {"exact": 3, "semantic": 2, "unspecified": 1}
    unpriced = {(dict(k)["model"], dict(k)["reason"]): v
                for k, v in found["llm_savings_response_cache_unpriced_hits_total"].items()}
    assert unpriced == {("alpha", "unknown_usage"): 1, ("epsilon", "unknown_model"): 1}
    avoided = sum(found["llm_savings_response_cache_avoided_usd_total"].values())
    assert abs(avoided - october(pipeline)["response_cache_avoided_usd"]) < 1e-15
    saved = {(dict(k)["requested_model"], dict(k)["model"]): v
             for k, v in found["llm_savings_routing_savings_usd_total"].items()}
    assert saved[("alpha", "gamma")] == (10_000 * 2.5 + 1_000 * 13.5) / 1e6
    extra = found["llm_savings_routing_extra_cost_usd_total"]
    assert all(value >= 0 for value in extra.values()) and all(dict(k)["price_version"] == "2026-10-01" for k in extra)
    routed = {(dict(k)["requested_model"], dict(k)["model"]): v
              for k, v in found["llm_savings_routed_requests_total"].items()}
    assert routed == {("alpha", "gamma"): 2, ("gamma", "alpha"): 1, ("alpha", "delta"): 1, ("epsilon", "gamma"): 1}
    assert sum(found["llm_savings_routing_unpriced_requests_total"].values()) == 2
    assert sum(found["llm_savings_requests_total"].values()) == 7
    flagged = {dict(k)["flag"]: v for k, v in found["llm_savings_records_flagged_total"].items()}
    assert flagged["unpriced_response_cache_hit"] == 2


def test_replay_json_and_report_json_carry_the_new_totals(tmp_path: Any, capsys: Any) -> None:
    log = tmp_path / "gateway.jsonl"
    log.write_text("".join(json.dumps({"ts": OCT, **r}) + "\n" for r in LOG))
    args = [str(log), "--prices", str(PRICES)]
    assert main(["replay", *args, "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert main(["report", *args, "--format", "json"]) == 0
    reported = json.loads(capsys.readouterr().out)
    assert replayed["months"]["2026-10"] == reported["months"]["2026-10"]["totals"]
    assert replayed["months"]["2026-10"]["routing_savings_usd"] == october(run(LOG))["routing_savings_usd"]


def test_invalid_response_cache_is_rejected_with_its_reason() -> None:
    pipeline = run([{"request_id": "x", "model": "alpha", "response_cache": "fuzzy"},
                    {"request_id": "y", "model": "alpha", "response_cache": True},
                    {"request_id": "z", "model": "alpha", "requested_model": 5}])
    assert pipeline.aggregates.rejected == {("2026-10", "invalid_response_cache"): 2, ("2026-10", "invalid_field"): 1}


def test_checkpoint_round_trip_and_old_checkpoints() -> None:
    agg = run(LOG).aggregates
    state = json.loads(json.dumps(agg.to_state()))
    assert Aggregates.from_state(state).month_totals() == agg.month_totals()
    del state["gateway"]  # a checkpoint written before hits and routing
    old = Aggregates.from_state(state).month_totals()["2026-10"]
    assert old["response_cache_hits"] == 0 and old["requests"] == 7


def test_parts_add_up_to_the_whole() -> None:
    whole = run(LOG).aggregates
    first, second = run(LOG[:7]).aggregates, run(LOG[7:]).aggregates
    first.add(second)
    assert first.month_totals() == whole.month_totals()


def test_old_months_are_dropped_with_their_hits() -> None:
    pipeline = run(LOG)
    pipeline.aggregates.drop_months_before("2026-11")
    assert pipeline.aggregates.gateway.months() == set()


# --- properties -------------------------------------------------------------------------------------------------

small = st.integers(0, 5_000)
usages = st.one_of(st.none(), st.builds(anthropic, small, small, small, small, small))
records = st.lists(st.fixed_dictionaries(
    {"request_id": st.sampled_from([f"id{n}" for n in range(30)]), "model": st.sampled_from(MODELS),
     "usage": usages},
    optional={"response_cache": st.sampled_from(["exact", "semantic", "unspecified"]),
              "requested_model": st.sampled_from(MODELS),
              "source_flags": st.just(["response_cache_hit"])}), max_size=25)


@settings(max_examples=150, deadline=None)
@given(records, st.randoms(use_true_random=False))
def test_totals_match_the_oracle_in_any_order(log: list[dict[str, Any]], rnd: Any) -> None:
    # distinct ids, so that any order counts the same records (with repeats the first one wins)
    unique = list({r["request_id"]: r for r in log}.values())
    shuffled = unique.copy()
    rnd.shuffle(shuffled)
    totals = october(run(unique)) if unique else None
    if totals is None:
        return
    assert_matches_oracle(totals, oracle(unique))
    assert october(run(shuffled)) == totals


@settings(max_examples=150, deadline=None)
@given(records)
def test_a_record_is_a_hit_or_a_provider_call_never_both(log: list[dict[str, Any]]) -> None:
    pipeline = run(log)
    if not log:
        return
    totals = october(pipeline)
    counted = len({r["request_id"] for r in log})
    assert totals["requests"] + totals["response_cache_hits"] == counted
    assert totals["duplicates"] == len(log) - counted
    assert_matches_oracle(totals, oracle(log))


def test_a_hit_carries_no_compression_provider_cache_or_optimizer_figure() -> None:
    hit = {"request_id": "h", "model": "alpha", "response_cache": "exact", "tokens_before": 900, "tokens_after": 300,
           "count_method": "provider", "would_have_saved": 50, "components": [{"name": "c", "tokens_saved": 600}],
           "usage": anthropic(fresh=100, read=4_000, out=10),
           "optimizer": {"model": "beta", "usage": anthropic(fresh=70)}}
    pipeline = run([hit])
    totals, agg = october(pipeline), pipeline.aggregates
    assert (agg.cells, agg.components, agg.optimizer, agg.divergence) == ({}, {}, {}, {})
    assert totals["tokens_saved"] == totals["cache_read_tokens"] == totals["optimizer_requests"] == 0
    assert totals["response_cache_avoided_usd"] == float((F(100 * 3) + F(4_000) * F("0.3") + F(10 * 15)) / 10**6)


def test_requested_model_takes_a_slot_of_the_model_cap() -> None:
    from exporter.engine.labels import LabelCaps

    pipeline = Pipeline(load_price_table(PRICES), caps=LabelCaps(max_models=2))
    pipeline.ingest_lines([json.dumps({"ts": OCT, "request_id": f"r{n}", "model": "gamma", "requested_model": name,
                                       "usage": anthropic(fresh=1_000)}).encode()
                           for n, name in enumerate(["alpha", "beta", "delta"])])
    labels = {(key.requested_model, key.model) for key in pipeline.aggregates.gateway.routed}
    assert labels == {("alpha", "gamma"), ("other", "gamma")}  # gamma and alpha took the two slots
    restarted = Pipeline(load_price_table(PRICES), caps=LabelCaps(max_models=2),
                         aggregates=Aggregates.from_state(pipeline.aggregates.to_state()))
    assert restarted.caps.model.values == {"alpha", "gamma"}
