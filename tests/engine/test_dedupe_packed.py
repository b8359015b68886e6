"""The packed dedupe ledger (digests in bytearray shards) against the rules and the set-based ledger it replaced.

The set-based ledger (tests/bench/ledger_set.py) wrote every checkpoint before this one: its
state must restore into the packed ledger, and the packed one must decide, hold and checkpoint
exactly what it did, through eviction, expiry, out-of-order times and restarts.
"""

from __future__ import annotations

import hashlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.engine.dedupe import BUCKET_SECONDS, DedupeLedger, _shard_count
from tests.bench.ledger_set import SetLedger
from tests.engine.test_dedupe import _ModelLedger

DAY = 86_400
T0 = 1_793_491_200.0
HOUR = int(T0 // BUCKET_SECONDS)


def digest(request_id: str) -> bytes:
    return hashlib.blake2b(request_id.encode(), digest_size=8).digest()


# (id number, seconds after T0, restart here?): times jump back and forth across hours and days
events_strategy = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 6 * DAY) | st.integers(0, 3 * BUCKET_SECONDS), st.booleans()),
    max_size=250)


@settings(max_examples=250, deadline=None)
@given(events=events_strategy, max_ids=st.integers(1, 60), window_days=st.sampled_from([0.25, 1.0, 2.0]),
       restarts=st.booleans())
def test_packed_ledger_equals_the_model_and_the_set_ledger(events: list[tuple[int, int, bool]], max_ids: int,
                                                           window_days: float, restarts: bool) -> None:
    packed = DedupeLedger(window_days, max_ids=max_ids)
    old = SetLedger(window_days, max_ids=max_ids)
    model = _ModelLedger(window_days, max_ids)
    for number, offset, restart in events:
        request_id, ts = f"id-{number}", T0 + offset
        verdict = model.seen_before(request_id, ts)
        assert packed.seen_before(request_id, ts) == verdict
        assert old.seen_before(request_id, ts) == verdict
        assert len(packed) == len(old) == len(model.alive)
        assert packed.to_state() == old.to_state()
        assert packed.evicted == old.evicted
        if restarts and restart:  # a restart: the packed ledger from the old one's checkpoint, and back
            packed = DedupeLedger.from_state(window_days, old.to_state(), max_ids=max_ids)
            old = SetLedger.from_state(window_days, packed.to_state(), max_ids=max_ids)
            packed.evicted = old.evicted = 0
            # a restore knows only the hours held: the newest of them places the window, which it applies
            model.newest = max((hour for hour, _ in model.alive.values()), default=-1)
            model.alive = {k: v for k, v in model.alive.items() if v[0] >= model.newest - model.window_hours - 1}
            assert len(packed) == len(model.alive)
    assert sorted(packed.hours()) == sorted(old.hours())
    assert list(packed.digests()) == list(old.digests())
    assert packed.digest_set() == set(old.digest_set())


@settings(max_examples=150, deadline=None)
@given(events=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 3 * DAY)), max_size=400),
       max_ids=st.integers(1, 300), stable=st.booleans())
def test_decisions_and_digests_match_the_set_ledger_for_both_key_kinds(events: list[tuple[int, int]], max_ids: int,
                                                                       stable: bool) -> None:
    # up to 16 shards, evictions and expiry: every forgotten digest is found in the shard its key chose
    packed, old = DedupeLedger(1.0, max_ids, stable=stable), SetLedger(1.0, max_ids, stable=stable)
    for n, offset in events:
        assert packed.seen_before(f"r{n}", T0 + offset) == old.seen_before(f"r{n}", T0 + offset)
        assert len(packed) == len(old)
    assert list(packed.digests()) == list(old.digests())
    assert packed.evicted == old.evicted
    assert packed.digests().typecode == ("Q" if stable else "q")
    assert sum(len(s or b"") for s in packed._shards) == 8 * len(packed)


def test_a_digest_astride_two_held_ones_is_not_a_match() -> None:
    # one shard (max_ids <= 32): a restored hour holds A and B, and A's last four bytes with B's first
    # four spell the digest of "target"; a byte search finds it at offset 4, which is not an id
    target = digest("target")
    a, b = b"\x01" * 4 + target[:4], target[4:] + b"\x02" * 4
    ledger = DedupeLedger.from_state(40, {HOUR: a + b}, max_ids=30)
    assert len(ledger._shards) == 1 and len(ledger) == 2
    assert not ledger.seen_before("target", T0)
    assert ledger.seen_before("target", T0 + 1)
    assert len(ledger) == 3
    # the held digest "target" is found (and forgotten) at its own place, not at the misaligned one
    later = (HOUR + 2 + 40 * 24) * BUCKET_SECONDS
    ledger.seen_before("late", later)
    assert ledger.hours() == [HOUR + 2 + 40 * 24] and len(ledger) == 1
    assert not ledger.seen_before("target", later)
    restored = DedupeLedger.from_state(40, {HOUR: a + b + target}, max_ids=30)
    assert len(restored) == 3 and restored.seen_before("target", T0)


def test_a_state_holding_a_digest_twice_keeps_it_once() -> None:
    d = digest("twice")
    ledger = DedupeLedger.from_state(40, {HOUR: d + d, HOUR + 1: d + digest("other")})
    assert len(ledger) == 2
    assert ledger.to_state() == {HOUR: d, HOUR + 1: digest("other")}
    assert ledger.seen_before("twice", T0) and ledger.seen_before("other", T0)


def test_a_blob_that_is_not_whole_digests_is_refused_with_its_hour() -> None:
    with pytest.raises(ValueError, match=f"hour {HOUR}: 12 bytes"):
        DedupeLedger.from_state(40, {HOUR: b"\x00" * 12})


def test_old_checkpoint_bytes_restore() -> None:
    old = SetLedger(40)
    for i in range(500):
        old.seen_before(f"req-{i}", T0 + i * 60)
    state = old.to_state()
    packed = DedupeLedger.from_state(40, state)
    assert packed.to_state() == state
    assert all(packed.seen_before(f"req-{i}", T0) for i in range(500))
    assert not packed.seen_before("req-500", T0)
    assert state[HOUR][:8] == struct.pack("<Q", old.digests()[0])


@pytest.mark.parametrize(("max_ids", "shards"), [(1, 1), (32, 1), (33, 2), (64, 2), (65, 4), (1_000_000, 32_768),
                                                 (10**12, 1 << 20)])
def test_shards_grow_with_the_cap_and_stop_at_a_million(max_ids: int, shards: int) -> None:
    assert _shard_count(max_ids) == shards
    assert len(DedupeLedger(max_ids=max_ids if max_ids < 10**7 else 10**7)._shards) == _shard_count(
        min(max_ids, 10**7))


def test_many_ids_in_few_shards_stay_exact() -> None:
    ledger = DedupeLedger(40, max_ids=100)  # 4 shards hold up to 100 ids
    for i in range(100):
        assert not ledger.seen_before(f"x{i}", T0 + i)
    assert all(ledger.seen_before(f"x{i}", T0 + 200) for i in range(100))
    assert sum(len(s or b"") for s in ledger._shards) == 800


@pytest.mark.parametrize("stable", [True, False])
def test_an_id_that_expires_the_old_hours_is_not_evicted_for_them(stable: bool) -> None:
    # found by the property above: the count must be read after the new hour expired the old ones,
    # else the cap sees the expired id too and evicts the new one
    ledger = DedupeLedger(1.0, max_ids=1, stable=stable)
    assert not ledger.seen_before("a", T0)
    assert not ledger.seen_before("b", T0 + 26 * BUCKET_SECONDS)
    assert (len(ledger), ledger.evicted) == (1, 0)
    assert ledger.seen_before("b", T0 + 26 * BUCKET_SECONDS)
