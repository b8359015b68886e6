"""The dedupe ledger: request ids seen inside a window, in bounded memory.

Ids are kept as 64-bit blake2b digests (never the id itself), in one set for
O(1) lookups plus one array per day of the record's own timestamp so that a
whole day expires at once when it falls out of the window. The window moves
with the newest timestamp seen, not the wall clock, so a replay of old logs
dedupes exactly as the live sidecar did. Collision odds at a million ids:
about 3e-8.
"""

from __future__ import annotations

import hashlib
from array import array

DAY = 86_400


def digest(request_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(request_id.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                          "little")


class DedupeLedger:
    def __init__(self, window_days: float = 40.0) -> None:
        if window_days <= 0:
            raise ValueError("dedupe window must be positive")
        self.window_days = window_days
        self._seen: set[int] = set()
        self._days: dict[int, array[int]] = {}
        self._newest_day = -1

    def __len__(self) -> int:
        return len(self._seen)

    def seen_before(self, request_id: str, ts: float) -> bool:
        """True when ``request_id`` was already recorded; records it otherwise."""
        key = digest(request_id)
        if key in self._seen:
            return True
        self._seen.add(key)
        day = int(ts // DAY)
        bucket = self._days.get(day)
        if bucket is None:
            bucket = self._days[day] = array("Q")
        bucket.append(key)
        if day > self._newest_day:
            self._newest_day = day
            self._expire()
        return False

    def _expire(self) -> None:
        oldest_kept = self._newest_day - int(self.window_days) - 1
        for day in [d for d in self._days if d < oldest_kept]:
            for key in self._days.pop(day):
                self._seen.discard(key)

    # --- checkpoint -------------------------------------------------------
    def to_state(self) -> dict[int, bytes]:
        """Per-day digests as raw little-endian bytes (compact for the checkpoint)."""
        out: dict[int, bytes] = {}
        for day, bucket in self._days.items():
            data = array("Q", bucket)
            if data.itemsize != 8:  # pragma: no cover - every CPython platform we run on
                raise RuntimeError("unsigned long long is not 8 bytes here")
            out[day] = data.tobytes()
        return out

    @classmethod
    def from_state(cls, window_days: float, state: dict[int, bytes]) -> DedupeLedger:
        ledger = cls(window_days)
        for day, raw in state.items():
            bucket = array("Q")
            bucket.frombytes(raw)
            ledger._days[int(day)] = bucket
            ledger._seen.update(bucket)
            ledger._newest_day = max(ledger._newest_day, int(day))
        ledger._expire()
        return ledger
