"""Per-file bookkeeping: identity, what is known of each file, raw reads.

A file's identity is its :class:`_Key` (device, inode) plus a fingerprint:
its head (first ``fingerprint_bytes`` bytes) and its tail (the
:data:`TAIL_BYTES` bytes before the committed offset). Names never decide.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any, NamedTuple

TAIL_BYTES = 64
# gzip, bzip2, xz, zstd, lz4: rotated-and-compressed files a broad glob may match. They are never
# followed; only the rest of a file compressed while we were stopped is read from one (compressed.py).
_COMPRESSED_MAGIC = (b"\x1f\x8b\x08", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd", b"\x04\x22\x4d\x18")


class _Key(NamedTuple):
    """Which file, whatever its name: device and inode."""

    dev: int
    ino: int


def _key_of(st: os.stat_result) -> _Key:
    return _Key(st.st_dev, st.st_ino)


def _is_compressed(head: bytes) -> bool:
    """True for a head that starts like gzip, bzip2, xz, zstd or lz4 data."""
    return head.startswith(_COMPRESSED_MAGIC) or (head[:3] == b"BZh" and head[4:10] == b"1AY&SY")


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _pread(fd: int, n: int, pos: int) -> bytes:
    """Read up to n bytes at pos; short only at EOF."""
    if n <= 0 or pos < 0:
        return b""
    parts: list[bytes] = []
    while n > 0:
        data = os.pread(fd, n, pos)
        if not data:
            break
        parts.append(data)
        n -= len(data)
        pos += len(data)
    return b"".join(parts)


def _read_tail(fd: int, offset: int) -> bytes:
    start = max(0, offset - TAIL_BYTES)
    return _pread(fd, offset - start, start)


class _File:
    """A followed file. Between polls, ``base`` is the committed offset."""

    __slots__ = (
        "at_eof",
        "base",
        "buf",
        "fd",
        "head",
        "key",
        "last_data",
        "mtime",
        "orphan_since",
        "path",
        "size",
        "skipping",
        "stamp",
        "suspect",
        "tail",
    )

    def __init__(
        self,
        path: str,
        fd: int,
        key: _Key,
        offset: int,
        head: bytes,
        tail: bytes,
        skipping: bool,
        now: float,
    ) -> None:
        self.path = path
        self.fd = fd
        self.key = key
        self.base = offset  # file offset of buf[0]
        self.buf = b""  # read but not yet returned (a partial line, or lines over budget)
        self.head = head  # first min(size, fingerprint_bytes) bytes
        self.tail = tail  # up to TAIL_BYTES bytes ending at base
        self.skipping = skipping  # inside an over-long line
        self.size = offset
        self.mtime = 0.0  # st_mtime when last looked at (0: not known); bounds the compressed search at restore
        self.orphan_since: float | None = None
        self.last_data = now
        self.at_eof = False
        # Parked (``fd == -1``): closed to stay under max_open_files, read to its end; the
        # (size, mtime_ns) it had then, so discovery reopens it when either changes.
        self.stamp: tuple[int, int] | None = None
        # The last read may have come from a newer generation of the file (truncated and
        # rewritten between the checks and the read): rolled back, to be handled as truncated.
        self.suspect = False


class _Waiting:
    """A new file not yet classified (empty, or maybe a copy of a known file).

    ``fd`` is -1 while it is closed to free a descriptor (a copy of a followed file can
    wait for ever); it is reopened by path, its device and inode verified, to classify it.
    """

    __slots__ = ("fd", "first_seen", "key", "path")

    def __init__(self, path: str, fd: int, key: _Key, now: float) -> None:
        self.path = path
        self.fd = fd
        self.key = key
        self.first_seen = now


class _FdExhausted(OSError):
    """EMFILE/ENFILE on open: the file is there, we are out of descriptors. Never "missing"."""


@dataclass(slots=True)
class _Retired:
    """The position a file had when it was truncated, kept to adopt its copy."""

    head: bytes | None  # None when restored from a checkpoint (hash only)
    head_len: int
    head_hash: str
    offset: int
    tail_len: int
    tail_hash: str

    def matches(self, head: bytes) -> bool:
        return self.head_len > 0 and len(head) >= self.head_len and _digest(head[: self.head_len]) == self.head_hash

    def undecided(self, head: bytes) -> bool:
        """True while head is too short to tell whether it is this file's copy."""
        if len(head) >= self.head_len:
            return False
        return self.head is None or self.head.startswith(head)

    def to_json(self) -> dict[str, Any]:
        return {
            "head_len": self.head_len,
            "head_hash": self.head_hash,
            "offset": self.offset,
            "tail_len": self.tail_len,
            "tail_hash": self.tail_hash,
        }
