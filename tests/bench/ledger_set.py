"""The dedupe ledger as it was before the packed one: a ``set`` of int digests plus hourly arrays.

Kept for the benchmarks only (tests/bench/bench_memory.py measures bytes per id, checkpoint
size and restore time against it in the same run) and for the test that checkpoints it wrote
restore into today's ledger. Same 64-bit blake2b keys, same checkpoint layout, same window
and eviction rules; about 88 bytes per id.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Set as AbstractSet

BUCKET_SECONDS = 3_600
DEFAULT_MAX_IDS = 1_000_000


_blake2b = hashlib.blake2b
_from_bytes = int.from_bytes


class SetLedger:
    def __init__(self, window_days: float = 40.0, max_ids: int = DEFAULT_MAX_IDS, *, stable: bool = True) -> None:
        if window_days <= 0:
            raise ValueError("dedupe window must be positive")
        if max_ids < 1:
            raise ValueError("max_ids must be positive")
        self.window_days = window_days
        self.max_ids = max_ids
        self.evicted = 0  # ids forgotten early because of max_ids (not by the window)
        self.stable = stable  # digests mean the same in another process (required to checkpoint)
        self._typecode = "Q" if stable else "q"  # hash() is signed
        self._seen: set[int] = set()
        self._buckets: dict[int, array[int]] = {}
        self._newest_bucket = -1
        # the bucket the last id went to, and its hour's [start, end) in epoch seconds
        self._current: array[int] = array(self._typecode)
        self._current_start = self._current_end = 0.0

    def __len__(self) -> int:
        return len(self._seen)

    def seen_before(self, request_id: str, ts: float) -> bool:
        """True when ``request_id`` was already recorded; records it otherwise."""
        if self.stable:  # the id's 64-bit key, stable across processes and versions (checkpoints hold these)
            key = _from_bytes(_blake2b(request_id.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")
        else:
            key = hash(request_id)
        seen = self._seen
        if key in seen:
            return True
        seen.add(key)
        if self._current_start <= ts < self._current_end:  # most ids go to the same hour as the last one
            self._current.append(key)
        else:
            self._file(key, ts)
        if len(seen) > self.max_ids:
            self._evict()
        return False

    def _file(self, key: int, ts: float) -> None:
        """Put ``key`` in the bucket of ``ts``'s hour (and expire hours the window left)."""
        hour = int(ts // BUCKET_SECONDS)
        bucket = self._buckets.get(hour)
        if bucket is None:
            bucket = self._buckets[hour] = array(self._typecode)
        bucket.append(key)
        if hour > self._newest_bucket:
            self._newest_bucket = hour
            self._expire()
        self._current = bucket
        self._current_start, self._current_end = hour * BUCKET_SECONDS, (hour + 1) * BUCKET_SECONDS

    def _expire(self) -> None:
        oldest_kept = self._newest_bucket - int(self.window_days * 86_400 // BUCKET_SECONDS) - 1
        for hour in [h for h in self._buckets if h < oldest_kept]:
            self._seen.difference_update(self._buckets.pop(hour))

    def _evict(self) -> None:
        """Forget the oldest ids (by record time, then arrival) down to 99% of the cap."""
        excess = len(self._seen) - self.max_ids + max(1, self.max_ids // 100)
        for hour in sorted(self._buckets):
            if excess <= 0:
                break
            bucket = self._buckets[hour]
            n = min(excess, len(bucket))
            self._seen.difference_update(bucket[:n])
            if n == len(bucket):
                del self._buckets[hour]
            else:
                del bucket[:n]
            excess -= n
            self.evicted += n
        self._current_start = self._current_end = 0.0  # its bucket may be gone

    def hours(self) -> list[int]:
        """The hours (of record time) that hold ids."""
        return list(self._buckets)

    def digests(self) -> array[int]:
        """Every id held, as its digest, to send to another process (the hour buckets, joined)."""
        joined = array(self._typecode)
        for bucket in self._buckets.values():
            joined.extend(bucket)
        return joined

    def digest_set(self) -> AbstractSet[int]:
        """Every id held, as its digest, without a copy (read only)."""
        return self._seen

    # --- checkpoint -------------------------------------------------------
    def to_state(self) -> dict[int, bytes]:
        """Per-hour digests as raw little-endian bytes (compact for the checkpoint)."""
        if not self.stable:
            raise ValueError("a ledger keyed by the process's own string hash cannot be checkpointed")
        out: dict[int, bytes] = {}
        for hour, bucket in self._buckets.items():
            if bucket.itemsize != 8:  # pragma: no cover - every CPython platform we run on
                raise RuntimeError("unsigned long long is not 8 bytes here")
            out[hour] = bucket.tobytes()
        return out

    @classmethod
    def from_state(cls, window_days: float, state: dict[int, bytes],
                   max_ids: int = DEFAULT_MAX_IDS) -> SetLedger:
        ledger = cls(window_days, max_ids)
        for hour, raw in state.items():
            bucket = array("Q")
            bucket.frombytes(raw)
            ledger._buckets[int(hour)] = bucket
            ledger._seen.update(bucket)
            ledger._newest_bucket = max(ledger._newest_bucket, int(hour))
        ledger._expire()
        if len(ledger._seen) > ledger.max_ids:
            ledger._evict()
        return ledger
