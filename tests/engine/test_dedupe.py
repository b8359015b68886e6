"""Dedupe (docs/prices.md): a request id seen again inside the window counts once, the first wins."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.engine.dedupe import DedupeLedger
from exporter.engine.pipeline import Pipeline
from exporter.prices.table import load_price_table
from exporter.replay.replay import replay_files

DAY = 86_400
PRICES = Path(__file__).resolve().parents[1] / "fixtures" / "engine" / "prices_two_versions.yaml"
T0 = 1793491200.0  # 2026-11-01T00:00:00Z


def raw(**fields: Any) -> bytes:
    body = {"ts": "2026-11-10T00:00:00Z", "model": "alpha", **fields}
    return json.dumps(body).encode() + b"\n"


def pipeline(window_days: float = 40.0) -> Pipeline:
    return Pipeline(load_price_table(PRICES), dedupe_window_days=window_days)


def usage(n: int) -> dict[str, int]:
    return {"input_tokens": n, "output_tokens": 0}


def test_first_wins() -> None:
    p = pipeline()
    p.ingest_line(raw(request_id="a", usage=usage(100)))
    p.ingest_line(raw(request_id="a", model="beta", usage=usage(999)))
    totals = p.aggregates.month_totals()["2026-11"]
    assert (totals["requests"], totals["duplicates"], totals["fresh_input_tokens"]) == (1, 1, 100)
    assert {key[1] for key in p.aggregates.cells} == {"alpha"}


def test_duplicate_is_counted_in_its_own_month() -> None:
    p = pipeline()
    p.ingest_line(raw(request_id="a", ts="2026-10-31T23:00:00Z"))
    p.ingest_line(raw(request_id="a", ts="2026-11-01T01:00:00Z"))
    totals = p.aggregates.month_totals()
    assert totals["2026-10"]["requests"] == 1
    assert totals["2026-11"]["duplicates"] == 1 and totals["2026-11"]["requests"] == 0


def test_duplicates_across_files(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_bytes(raw(request_id="x", usage=usage(1)) + raw(request_id="y", usage=usage(2)))
    second.write_bytes(raw(request_id="y", usage=usage(20)) + raw(request_id="z", usage=usage(3)))
    p = pipeline()
    assert replay_files([str(first), str(second)], p, None) == 4
    totals = p.aggregates.month_totals()["2026-11"]
    assert (totals["requests"], totals["duplicates"], totals["fresh_input_tokens"]) == (3, 1, 6)


def test_records_without_id_are_never_duplicates() -> None:
    p = pipeline()
    for _ in range(3):
        p.ingest_line(raw(usage=usage(1)))
    p.ingest_line(raw(request_id="", usage=usage(1)))
    totals = p.aggregates.month_totals()["2026-11"]
    assert (totals["requests"], totals["duplicates"]) == (4, 0)
    assert p.aggregates.flagged[("2026-11", "no_id")] == 4


def test_a_rejected_record_does_not_take_the_id() -> None:
    p = pipeline()
    p.ingest_line(raw(request_id="a", tokens_before=1.5, tokens_after=1))  # rejected
    p.ingest_line(raw(request_id="a", usage=usage(7)))
    totals = p.aggregates.month_totals()["2026-11"]
    assert (totals["rejected"], totals["requests"], totals["duplicates"]) == (1, 1, 0)


def test_window_moves_with_the_newest_timestamp() -> None:
    p = pipeline(window_days=10)
    day = 86400
    p.ingest_line(raw(request_id="old", ts=T0))
    p.ingest_line(raw(request_id="old", ts=T0 + 5 * day))  # inside the window: duplicate
    p.ingest_line(raw(request_id="new", ts=T0 + 20 * day))  # moves the window past "old"
    p.ingest_line(raw(request_id="old", ts=T0 + 20 * day))  # forgotten: counted again
    totals = p.aggregates.month_totals()["2026-11"]
    assert (totals["requests"], totals["duplicates"]) == (3, 1)


def test_ledger_keeps_digests_not_ids() -> None:
    ledger = DedupeLedger(40)
    secret = "req-secret-0123456789"
    assert not ledger.seen_before(secret, T0)
    assert ledger.seen_before(secret, T0 + 1)
    state = ledger.to_state()
    assert all(secret.encode() not in blob for blob in state.values())
    restored = DedupeLedger.from_state(40, state)
    assert restored.seen_before(secret, T0 + 2)
    assert not restored.seen_before("other", T0 + 2)
    assert len(restored) == 2


def test_ledger_expires_whole_days() -> None:
    ledger = DedupeLedger(2)
    assert not ledger.seen_before("a", T0)
    assert not ledger.seen_before("b", T0 + 2 * DAY)
    assert ledger.seen_before("a", T0 + 2 * DAY)  # day 0 is still inside newest-2-1
    assert not ledger.seen_before("c", T0 + 4 * DAY)  # newest day 4: day 0 falls out
    assert not ledger.seen_before("a", T0 + 4 * DAY)
    assert ledger.seen_before("b", T0 + 4 * DAY)


def test_unicode_and_surrogate_ids() -> None:
    ledger = DedupeLedger(40)
    assert not ledger.seen_before("é", T0)
    assert not ledger.seen_before("e\u0301", T0)  # not normalised: a different id
    assert not ledger.seen_before(
        "\udc80", T0
    )  # a lone surrogate (from a decoded object) must not raise
    assert ledger.seen_before("\udc80", T0)


def test_max_ids_bounds_memory_by_evicting_the_oldest_first() -> None:
    ledger = DedupeLedger(40, max_ids=1000)
    for i in range(5000):
        assert not ledger.seen_before(f"id-{i}", T0 + i)
    assert len(ledger) <= 1000
    assert ledger.evicted == 5000 - len(ledger)
    assert ledger.seen_before("id-4999", T0 + 5000)  # the newest are remembered
    assert not ledger.seen_before("id-0", T0 + 5000)  # the oldest were forgotten (and counted)


def test_max_ids_holds_across_a_checkpoint() -> None:
    ledger = DedupeLedger(40, max_ids=100_000)
    for i in range(3000):
        ledger.seen_before(f"id-{i}", T0 + i * 10)
    restored = DedupeLedger.from_state(40, ledger.to_state(), max_ids=1000)
    assert len(restored) <= 1000
    assert restored.seen_before("id-2999", T0 + 30_000)


def test_label_values_with_control_characters_become_other() -> None:
    from exporter.engine.labels import LabelCap

    cap = LabelCap("tenant", 10)
    assert cap("a\u0000b") == "other" and cap("x\ry") == "other" and cap("line\nbreak") == "other"
    assert cap("team-é") == "team-é"  # printable non-ASCII is fine
    assert cap.overflow == 3


class _ModelLedger:
    """The ledger's rules written plainly: expiry by the newest hour, eviction oldest (hour, arrival) first."""

    def __init__(self, window_days: float, max_ids: int) -> None:
        self.window_hours = int(window_days * DAY // 3600)
        self.max_ids = max_ids
        self.alive: dict[str, tuple[int, int]] = {}  # id -> (hour, arrival)
        self.newest = -1
        self.arrivals = 0

    def seen_before(self, request_id: str, ts: float) -> bool:
        if request_id in self.alive:
            return True
        hour = int(ts // 3600)
        self.alive[request_id] = (hour, self.arrivals)
        self.arrivals += 1
        if hour > self.newest:
            self.newest = hour
            self.alive = {k: v for k, v in self.alive.items() if v[0] >= self.newest - self.window_hours - 1}
        if len(self.alive) > self.max_ids:
            excess = len(self.alive) - self.max_ids + max(1, self.max_ids // 100)
            for key in sorted(self.alive, key=self.alive.__getitem__)[:excess]:
                del self.alive[key]
        return False


@settings(max_examples=200, deadline=None)
@given(events=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 20 * DAY)), max_size=300),
       max_ids=st.integers(1, 40), window_days=st.sampled_from([0.5, 1.0, 3.0]), stable=st.booleans())
def test_ledger_follows_its_rules_in_any_order(events: list[tuple[int, int]], max_ids: int, window_days: float,
                                               stable: bool) -> None:
    ledger = DedupeLedger(window_days, max_ids=max_ids, stable=stable)
    model = _ModelLedger(window_days, max_ids)
    for number, ts in events:
        request_id = f"id-{number}"
        assert ledger.seen_before(request_id, T0 + ts) == model.seen_before(request_id, T0 + ts)
        assert len(ledger) == len(model.alive)


def test_an_empty_ledger_given_to_the_pipeline_is_the_one_used(tmp_path: Path) -> None:
    """An empty ledger is falsy (it has a length): the pipeline once swapped it for a default one,
    so a fresh sidecar ignored ``dedupe_max_ids`` and replay hashed ids with blake2b."""
    from exporter.replay.replay import replay_pipeline
    from exporter.sidecar.sidecar import Sidecar
    from exporter.sources.formats.registry import make_line_decoder
    from tests.support.sidecar import make_config

    sidecar = Sidecar(make_config(tmp_path, dedupe_max_ids=50))
    ledger = sidecar.pipeline.ledger
    assert ledger.max_ids == 50 and ledger.stable
    for i in range(200):
        sidecar.pipeline.ingest_line(raw(request_id=f"id-{i}"))
    assert len(ledger) <= 50 and ledger.evicted >= 150
    assert not replay_pipeline(load_price_table(PRICES), make_line_decoder("canonical")).ledger.stable
    given = DedupeLedger(3.0)
    assert Pipeline(load_price_table(PRICES), ledger=given).ledger is given
