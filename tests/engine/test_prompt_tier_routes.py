"""The routes a model priced by prompt size alone keeps per prompt tier never change what is counted.

``Pipeline._tiered`` takes a remembered prompt tier's route without a lookup; the same records counted with
that memory switched off (every record looked up, as before it existed) must give identical aggregates,
through folded labels, service tiers, savings across the threshold and a change of price table.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.engine.labels import LabelCaps
from exporter.engine.pipeline import Pipeline
from exporter.prices.table import parse_price_table
from tests.engine.test_tiered_pricing import TABLE

TS = datetime(2025, 7, 1, 12, tzinfo=UTC).timestamp()
# a second prompt threshold for the batch tier, and a model with a time window (never remembered by prompt)
WINDOWED = TABLE + """\
      "deepseek-chat":
        input: 0.27
        output: 1.1
        tiers:
          - {above: 100000, input: 0.5, output: 2.0}
        time_windows:
          - {name: off_peak, start: "16:30", end: "00:30", zone: "UTC", multiplier: 0.5}
"""

record = st.fixed_dictionaries({
    "model": st.sampled_from(["gemini-2.5-pro", "gpt-4o", "deepseek-chat"]),
    "prompt": st.sampled_from([0, 1, 150_000, 199_999, 200_000, 200_001, 250_000]),
    "saved": st.sampled_from([None, 0, 10, 60_000, 120_000]),
    "would": st.sampled_from([None, 0, 90_000]),
    "tier": st.sampled_from([None, "batch", "flex", "default"]),
    "tenant": st.sampled_from([None, "t1", "t2", "t3"]),
    "minute": st.integers(0, 1_439),
})


def _line(index: int, r: dict[str, Any]) -> bytes:
    body: dict[str, Any] = {"ts": TS + r["minute"] * 60, "request_id": str(index), "model": r["model"],
                            "usage": {"prompt_tokens": r["prompt"], "completion_tokens": 7}}
    if r["saved"] is not None:
        body.update(tokens_before=r["prompt"] + r["saved"], tokens_after=r["prompt"], count_method="custom")
    if r["would"] is not None:
        body.update(would_have_saved=r["would"], count_method="custom")
    for key in ("tier", "tenant"):
        if r[key] is not None:
            body["service_tier" if key == "tier" else key] = r[key]
    return json.dumps(body).encode()


def _count(lines: list[bytes], remember: bool, caps: LabelCaps | None = None) -> Pipeline:
    p = Pipeline(parse_price_table(WINDOWED, "t.yaml"), caps=caps)
    if not remember:
        p._remember_prompt_tier = lambda *args: None  # type: ignore[method-assign]
    half = len(lines) // 2
    p.ingest_lines(lines[:half])
    p.prices = parse_price_table(WINDOWED.replace("input: 1.25", "input: 1.5"), "dearer.yaml")
    p.ingest_lines(lines[half:])
    return p


@settings(max_examples=80, deadline=None)
@given(st.lists(record, min_size=1, max_size=40), st.booleans())
def test_remembered_prompt_tiers_count_as_lookups_do(records: list[dict[str, Any]], capped: bool) -> None:
    lines = [_line(index, r) for index, r in enumerate(records)]
    fast = _count(lines, True, LabelCaps(max_tenants=1) if capped else None)
    plain = _count(lines, False, LabelCaps(max_tenants=1) if capped else None)
    assert fast.aggregates.to_state() == plain.aggregates.to_state()
    assert fast.aggregates.month_totals() == plain.aggregates.month_totals()
    assert fast.caps.tenant.overflow == plain.caps.tenant.overflow
    assert fast.caps.tenant.values == plain.caps.tenant.values


def _plain(model: str = "gemini-2.5-pro", prompt: int = 150_000, **kw: Any) -> dict[str, Any]:
    return {"model": model, "prompt": prompt, "saved": None, "would": None, "tier": None, "tenant": None,
            "minute": 0, **kw}


@pytest.mark.parametrize("records", [
    # a tier's route remembered by a record saving nothing, then a saving across the threshold (a cliff)
    [_plain(saved=0), _plain(saved=60_000), _plain(saved=0)],
    [_plain(prompt=250_000, would=0), _plain(prompt=250_000, would=90_000)],
    # the threshold itself is in the lower tier: remembered above it, then exactly at it and below
    [_plain(prompt=250_000), _plain(prompt=200_000), _plain(prompt=199_999), _plain(prompt=200_001)],
    [_plain(prompt=200_000), _plain(prompt=200_001), _plain(prompt=200_000, tier="batch")],
    # a service tier is part of the route key; an unknown one is flagged every time
    [_plain(tier="flex"), _plain(tier="flex"), _plain(tier="batch", prompt=250_000), _plain(tier="flex")],
], ids=["cliff-saved", "cliff-would", "at-threshold", "tier-boundary", "service-tiers"])
def test_sequences_that_share_a_route_key(records: list[dict[str, Any]]) -> None:
    lines = [_line(index, r) for index, r in enumerate(records * 2)]  # the second time at the dearer prices
    fast, plain = _count(lines, True), _count(lines, False)
    assert sum(cell[0] for cell in fast.aggregates.cells.values()) == len(lines)
    assert fast.aggregates.to_state() == plain.aggregates.to_state()
    assert fast.aggregates.month_totals() == plain.aggregates.month_totals()


def test_the_memory_is_used_for_prompt_tiers_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini's records after the first of each tier take no lookup; the windowed model's all do."""
    p = Pipeline(parse_price_table(WINDOWED, "t.yaml"))
    calls: list[str] = []
    real = p.prices.lookup

    def counted(model: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(model)
        return real(model, *args, **kwargs)

    monkeypatch.setattr(p.prices, "lookup", counted)
    records = [{"model": model, "prompt": prompt, "saved": None, "would": None, "tier": None, "tenant": None,
                "minute": 0} for model in ("gemini-2.5-pro", "deepseek-chat") for prompt in (10, 250_000) * 3]
    p.ingest_lines([_line(index, r) for index, r in enumerate(records)])
    # one route lookup per model, then the first record of each gemini tier; every deepseek record
    assert calls.count("gemini-2.5-pro") == 1 + 2
    assert calls.count("deepseek-chat") == 1 + 6
    assert sum(cell[0] for cell in p.aggregates.cells.values()) == 12
