"""The dedupe ledger: request ids seen inside a window, in bounded memory.

Ids are kept as 8-byte digests (never the id itself): 64-bit blake2b of the
id's UTF-8 bytes. Each digest is stored twice, packed, with no Python object
per id: once in a hash table of ``bytearray`` shards (a digest's shard is
chosen by its low bits; membership is a C-speed ``find`` over a few hundred
bytes, at an 8-byte-aligned offset), and once in the ``bytearray`` of the
hour of the record's own timestamp, in arrival order, so that an hour
expires at once when it falls out of the window and the oldest ids can be
evicted first. The window moves with the newest timestamp seen, not the
wall clock, so a replay of old logs dedupes exactly as the live sidecar did.

Memory is bounded by ``max_ids``: an id costs about 20 bytes (8 in its hour,
8 in its shard, the rest the shards' headers and slack), so the default
million ids hold about 20 MB; a ``set`` of int digests cost about 88. Past
the cap the oldest ids are evicted (and counted): the window then covers
less than ``window_days`` - at 1,000 requests/s a million ids cover about 17
minutes, at 1 request/s 11 days. Size ``max_ids`` from your traffic.

Collision bound: two distinct ids with the same 64-bit digest make the
second one a false duplicate. With ``n`` ids in the ledger the chance that
any of them collide is about n**2 / 2**65: 2.7e-8 at a million ids, 2.7e-6
at ten million; it stays under 1e-9 up to about 190,000 ids. The digest is
the one checkpoints have always held (a checkpoint cannot be lifted to a
wider digest: the ids are not in it), and 128 bits would double both
copies, past 40 bytes per id.

A ledger that is never checkpointed (``replay``'s) does not need digests
that are stable across processes: ``stable=False`` keys ids by Python's own
64-bit string hash (SipHash, salted per process), a fifth of blake2b's cost
on the per-record path, with the same collision odds.
"""

from __future__ import annotations

import hashlib
import struct
import sys
from array import array

BUCKET_SECONDS = 3_600
DEFAULT_MAX_IDS = 1_000_000
IDS_PER_SHARD = 32  # at max_ids: a find over ~256 bytes, ~12 bytes of shard header and slack per id
MAX_SHARD_BITS = 20

_blake2b = hashlib.blake2b
_pack_signed = struct.Struct("<q").pack  # hash() is signed
_from_bytes = int.from_bytes


def _shard_count(max_ids: int) -> int:
    """A power of two near ``max_ids / IDS_PER_SHARD`` (at least 1, at most 2**MAX_SHARD_BITS)."""
    bits = 0
    while bits < MAX_SHARD_BITS and (1 << bits) * IDS_PER_SHARD < max_ids:
        bits += 1
    return 1 << bits


def _aligned_find(shard: bytearray, digest: bytes) -> int:
    """The offset of ``digest`` in ``shard`` at a multiple of 8, or -1 (a match astride two digests is skipped)."""
    pos = shard.find(digest)
    while pos & 7 and pos >= 0:
        pos = shard.find(digest, pos + 1)
    return pos


class DedupeLedger:
    def __init__(self, window_days: float = 40.0, max_ids: int = DEFAULT_MAX_IDS, *, stable: bool = True) -> None:
        if window_days <= 0:
            raise ValueError("dedupe window must be positive")
        if max_ids < 1:
            raise ValueError("max_ids must be positive")
        self.window_days = window_days
        self.max_ids = max_ids
        self.evicted = 0  # ids forgotten early because of max_ids (not by the window)
        self.stable = stable  # digests mean the same in another process (required to checkpoint)
        self._count = 0
        self._shards: list[bytearray | None] = [None] * _shard_count(max_ids)
        self._mask = len(self._shards) - 1
        self._buckets: dict[int, bytearray] = {}  # hour -> its digests in arrival order
        self._newest_bucket = -1
        # the bucket the last id went to, and its hour's [start, end) in epoch seconds
        self._current = bytearray()
        self._current_start = self._current_end = 0.0

    def __len__(self) -> int:
        return self._count

    def seen_before(self, request_id: str, ts: float) -> bool:
        """True when ``request_id`` was already recorded; records it otherwise."""
        if self.stable:  # the id's 8-byte key, stable across processes and versions (checkpoints hold these)
            digest = _blake2b(request_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            index = _from_bytes(digest, "little") & self._mask
        else:
            key = hash(request_id)
            digest = _pack_signed(key)
            index = key & self._mask  # the same low bits as the digest's
        shards = self._shards
        shard = shards[index]
        if shard is None:
            shards[index] = bytearray(digest)
        else:
            pos = shard.find(digest)
            if pos >= 0 and (not pos & 7 or _aligned_find(shard, digest) >= 0):
                return True
            shard += digest
        self._count += 1
        if self._current_start <= ts < self._current_end:  # most ids go to the same hour as the last one
            self._current += digest
        else:
            self._file(digest, ts)
        if self._count > self.max_ids:  # read again: _file may have expired hours
            self._evict()
        return False

    def _file(self, digest: bytes, ts: float) -> None:
        """Put ``digest`` in the bucket of ``ts``'s hour (and expire hours the window left)."""
        hour = int(ts // BUCKET_SECONDS)
        bucket = self._buckets.get(hour)
        if bucket is None:
            bucket = self._buckets[hour] = bytearray()
        bucket += digest
        if hour > self._newest_bucket:
            self._newest_bucket = hour
            self._expire()
        self._current = bucket
        self._current_start, self._current_end = hour * BUCKET_SECONDS, (hour + 1) * BUCKET_SECONDS

    def _forget(self, packed: bytes | bytearray) -> None:
        """Take every digest of ``packed`` (held, 8 bytes each) out of the shards."""
        shards, mask = self._shards, self._mask
        packed = bytes(packed)  # its slices are then bytes (hashable), not bytearrays
        for start in range(0, len(packed), 8):
            digest = packed[start:start + 8]
            shard = shards[_from_bytes(digest, "little") & mask]
            assert shard is not None
            pos = _aligned_find(shard, digest)
            assert pos >= 0, "a digest in an hour is in its shard"
            del shard[pos:pos + 8]
        self._count -= len(packed) // 8

    def _expire(self) -> None:
        oldest_kept = self._newest_bucket - int(self.window_days * 86_400 // BUCKET_SECONDS) - 1
        for hour in [h for h in self._buckets if h < oldest_kept]:
            self._forget(self._buckets.pop(hour))

    def _evict(self) -> None:
        """Forget the oldest ids (by record time, then arrival) down to 99% of the cap."""
        excess = self._count - self.max_ids + max(1, self.max_ids // 100)
        for hour in sorted(self._buckets):
            if excess <= 0:
                break
            bucket = self._buckets[hour]
            n = min(excess, len(bucket) // 8)
            self._forget(bucket[:n * 8])
            if n * 8 == len(bucket):
                del self._buckets[hour]
            else:
                del bucket[:n * 8]
            excess -= n
            self.evicted += n
        self._current_start = self._current_end = 0.0  # its bucket may be gone

    def hours(self) -> list[int]:
        """The hours (of record time) that hold ids."""
        return list(self._buckets)

    def digests(self) -> array[int]:
        """Every id held, as its digest, to send to another process (the hour buckets, joined)."""
        joined = array("Q" if self.stable else "q")
        for bucket in self._buckets.values():
            joined.frombytes(bucket)
        if sys.byteorder == "big":  # pragma: no cover - the digests are little-endian
            joined.byteswap()
        return joined

    def digest_set(self) -> set[int]:
        """Every id held, as its digest (a copy)."""
        return set(self.digests())

    # --- checkpoint -------------------------------------------------------
    def to_state(self) -> dict[int, bytes]:
        """Per-hour digests as raw little-endian bytes (compact for the checkpoint)."""
        if not self.stable:
            raise ValueError("a ledger keyed by the process's own string hash cannot be checkpointed")
        return {hour: bytes(bucket) for hour, bucket in self._buckets.items()}

    @classmethod
    def from_state(cls, window_days: float, state: dict[int, bytes],
                   max_ids: int = DEFAULT_MAX_IDS) -> DedupeLedger:
        """The ledger ``to_state`` wrote (the same layout since the first checkpoint version).

        A digest held twice (only a hand-made state has one) is kept at its first place."""
        ledger = cls(window_days, max_ids)
        shards, mask = ledger._shards, ledger._mask
        for hour, raw in state.items():
            if len(raw) % 8:
                raise ValueError(f"hour {hour}: {len(raw)} bytes of digests is not a multiple of 8")
            bucket = bytearray()
            raw = bytes(raw)
            for start in range(0, len(raw), 8):
                digest = raw[start:start + 8]
                index = _from_bytes(digest, "little") & mask
                shard = shards[index]
                if shard is None:
                    shards[index] = bytearray(digest)
                elif _aligned_find(shard, digest) < 0:
                    shard += digest
                else:
                    continue
                bucket += digest
            ledger._buckets[int(hour)] = bucket
            ledger._count += len(bucket) // 8
            ledger._newest_bucket = max(ledger._newest_bucket, int(hour))
        ledger._expire()
        if ledger._count > ledger.max_ids:
            ledger._evict()
        return ledger
