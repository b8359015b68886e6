"""exporter.engine.dedupe: numbers a checkpoint depends on, pinned.

A checkpoint holds ids as 64-bit blake2b digests in little-endian order. Another hash, digest
size or byte order after an upgrade would let the restored ledger miss every checkpointed id and
count each redelivery twice, so the digests of known ids are written out here. The eviction
size (down to 99% of ``max_ids``, at least one id) and the window's width in hour buckets are
pinned the same way.
"""

from __future__ import annotations

import struct

import pytest

from exporter.engine.dedupe import BUCKET_SECONDS, DEFAULT_MAX_IDS, DedupeLedger

# blake2b(id UTF-8 bytes, digest_size=8), read little-endian: computed once and written down
PINNED = {
    "req-1": 830714397525821188,  # bytes 04 47 54 de 57 4a 87 0b
    "chatcmpl-9xYz": 8527860063439627761,
    "ü-id": 17816914958044876234,
}
HOUR = 1_794_000_000 // BUCKET_SECONDS  # an hour of 2026-11


def test_digests_of_known_ids_are_pinned() -> None:
    ledger = DedupeLedger()
    for request_id in PINNED:
        assert not ledger.seen_before(request_id, HOUR * BUCKET_SECONDS + 5)
    assert list(ledger.digests()) == list(PINNED.values())
    assert set(ledger.digest_set()) == set(PINNED.values())
    state = ledger.to_state()
    assert state == {HOUR: struct.pack("<3Q", *PINNED.values())}
    assert state[HOUR][:8] == bytes.fromhex("044754de574a870b")


def test_a_restored_ledger_knows_ids_by_their_pinned_digests() -> None:
    state = {HOUR: struct.pack("<Q", PINNED["chatcmpl-9xYz"])}
    restored = DedupeLedger.from_state(40, state)
    assert restored.hours() == [HOUR]
    assert restored.seen_before("chatcmpl-9xYz", HOUR * BUCKET_SECONDS)
    assert not restored.seen_before("req-1", HOUR * BUCKET_SECONDS)


def test_unstable_ledgers_key_by_the_process_hash_and_refuse_checkpoints() -> None:
    ledger = DedupeLedger(stable=False)
    assert not ledger.seen_before("req-1", 0.0)
    assert list(ledger.digests()) == [hash("req-1")]
    assert ledger.seen_before("req-1", 0.0)
    with pytest.raises(ValueError, match="cannot be checkpointed"):
        ledger.to_state()


@pytest.mark.parametrize(
    ("max_ids", "left", "evicted"),
    [
        (1, 0, 2),  # 1 // 100 = 0: one id under the cap, at least
        (100, 99, 2),  # 101 ids: down to 99
        (1000, 990, 11),  # 1001 ids: 1% of the cap goes too
        (250, 248, 3),  # 251 ids: 250 // 100 = 2
    ],
)
def test_eviction_goes_down_to_99_percent_of_the_cap(max_ids: int, left: int, evicted: int) -> None:
    ledger = DedupeLedger(40, max_ids=max_ids)
    ids = [f"id-{n}" for n in range(max_ids + 1)]
    for n, request_id in enumerate(ids[:-1]):
        ledger.seen_before(request_id, HOUR * BUCKET_SECONDS + n % BUCKET_SECONDS)
    assert (len(ledger), ledger.evicted) == (max_ids, 0)  # at the cap, nothing goes
    ledger.seen_before(ids[-1], (HOUR + 1) * BUCKET_SECONDS)
    assert (len(ledger), ledger.evicted) == (left, evicted)
    # the oldest went first: the newest id is still known (when any is), the first one is not
    assert ledger.seen_before(ids[-1], (HOUR + 1) * BUCKET_SECONDS) == (left > 0)
    assert not ledger.seen_before(ids[0], HOUR * BUCKET_SECONDS)


def test_eviction_empties_older_hours_before_newer_ones() -> None:
    ledger = DedupeLedger(40, max_ids=4)
    for hour, request_id in ((HOUR + 2, "c"), (HOUR, "a"), (HOUR + 1, "b"), (HOUR + 2, "d")):
        ledger.seen_before(request_id, hour * BUCKET_SECONDS)
    assert sorted(ledger.hours()) == [HOUR, HOUR + 1, HOUR + 2]
    # 5 ids: down to 3, the oldest hour's id and then the first of the next hour's two
    ledger.seen_before("e", (HOUR + 1) * BUCKET_SECONDS + 1)
    assert (len(ledger), ledger.evicted) == (3, 2)
    assert sorted(ledger.hours()) == [HOUR + 1, HOUR + 2]
    assert ledger.to_state()[HOUR + 1] == ledger.to_state()[HOUR + 1][:8]  # "e" alone is left there
    later = (HOUR + 3) * BUCKET_SECONDS
    assert [ledger.seen_before(request_id, later) for request_id in "cde"] == [True, True, True]
    assert [DedupeLedger.from_state(40, ledger.to_state()).seen_before(i, later) for i in "ab"] == [False, False]


def test_the_window_keeps_its_days_in_hours_plus_the_current_one() -> None:
    ledger = DedupeLedger(window_days=1.0)
    ledger.seen_before("old", HOUR * BUCKET_SECONDS)
    ledger.seen_before("new", (HOUR + 25) * BUCKET_SECONDS)  # 24 hours of window and one more kept
    assert sorted(ledger.hours()) == [HOUR, HOUR + 25]
    ledger.seen_before("newer", (HOUR + 26) * BUCKET_SECONDS)
    assert sorted(ledger.hours()) == [HOUR + 25, HOUR + 26]
    assert not ledger.seen_before("old", (HOUR + 26) * BUCKET_SECONDS)
    half = DedupeLedger(window_days=0.5)
    half.seen_before("a", HOUR * BUCKET_SECONDS)
    half.seen_before("b", (HOUR + 13) * BUCKET_SECONDS)
    assert sorted(half.hours()) == [HOUR, HOUR + 13]
    half.seen_before("c", (HOUR + 14) * BUCKET_SECONDS)
    assert sorted(half.hours()) == [HOUR + 13, HOUR + 14]


def test_the_same_hour_is_recognised_at_both_of_its_edges() -> None:
    ledger = DedupeLedger()
    start = HOUR * BUCKET_SECONDS
    for offset, request_id in ((0, "a"), (BUCKET_SECONDS - 1, "b"), (BUCKET_SECONDS, "c"), (0, "d")):
        ledger.seen_before(request_id, start + offset)
    state = ledger.to_state()
    assert {hour: len(raw) // 8 for hour, raw in state.items()} == {HOUR: 3, HOUR + 1: 1}


def test_ledger_settings_are_checked_and_defaults_pinned() -> None:
    assert (DEFAULT_MAX_IDS, BUCKET_SECONDS) == (1_000_000, 3_600)
    ledger = DedupeLedger()
    assert (ledger.window_days, ledger.max_ids, ledger.stable) == (40.0, DEFAULT_MAX_IDS, True)
    for bad in ({"window_days": 0}, {"window_days": -1.0}, {"max_ids": 0}):
        with pytest.raises(ValueError):
            DedupeLedger(**bad)  # type: ignore[arg-type]
    assert len(DedupeLedger(window_days=0.001)) == 0 and len(DedupeLedger(max_ids=1)) == 0


def test_from_state_expires_and_evicts() -> None:
    state = {HOUR: struct.pack("<2Q", 1, 2), HOUR + 24 * 41: struct.pack("<3Q", 3, 4, 5)}
    restored = DedupeLedger.from_state(40, state)
    assert restored.hours() == [HOUR + 24 * 41] and len(restored) == 3  # the old hour left the window
    capped = DedupeLedger.from_state(40, {HOUR: struct.pack("<5Q", 1, 2, 3, 4, 5)}, max_ids=4)
    assert (len(capped), capped.evicted) == (3, 2)


def test_a_restored_ledger_at_its_cap_keeps_every_id() -> None:
    at_cap = DedupeLedger.from_state(40, {HOUR: struct.pack("<4Q", 1, 2, 3, 4)}, max_ids=4)
    assert (len(at_cap), at_cap.evicted) == (4, 0)


def test_after_an_eviction_empties_the_current_hour_its_next_id_is_filed_again() -> None:
    # the current hour's bucket is evicted whole while a later hour stops the eviction: the next id
    # of that hour must go to a new bucket, not to the array that was dropped (and checkpoint with it)
    ledger = DedupeLedger(40, max_ids=2)
    ledger.seen_before("later", (HOUR + 1) * BUCKET_SECONDS)
    ledger.seen_before("a", HOUR * BUCKET_SECONDS)
    ledger.seen_before("b", HOUR * BUCKET_SECONDS + 1)  # 3 ids: hour HOUR (a, b) goes
    assert (sorted(ledger.hours()), ledger.evicted) == ([HOUR + 1], 2)
    ledger.seen_before("c", HOUR * BUCKET_SECONDS + 2)
    state = ledger.to_state()
    assert sorted(state) == [HOUR, HOUR + 1] and len(state[HOUR]) == 8
    assert DedupeLedger.from_state(40, state).seen_before("c", HOUR * BUCKET_SECONDS)


def test_a_window_just_short_of_a_day_keeps_23_hours_and_the_current_one() -> None:
    # 86399.5 s: 23 whole hours; a window computed from 86401 s a day would keep one hour more
    ledger = DedupeLedger(window_days=86_399.5 / 86_400)
    ledger.seen_before("old", HOUR * BUCKET_SECONDS)
    ledger.seen_before("new", (HOUR + 25) * BUCKET_SECONDS)
    assert ledger.hours() == [HOUR + 25]
