"""Finding the compressed successor of a file rotated and compressed while we were stopped.

With logrotate's ``compress`` (with or without ``delaycompress``) a file the
sidecar was following can become ``app.log.2.gz`` while the sidecar is down:
the plain file (its inode) is gone, or its inode now holds a newer file. The
lines after the checkpointed offset are then only in the compressed file.
:func:`_find_compressed` looks for it - bounded - and returns a
:class:`_Recovery`: a decompressing stream positioned at the saved offset,
which the tailer drains once and then retires. A compressed file is never
followed otherwise (a new ``.gz`` in the globs is a rotated file whose lines
were read as a plain file already).

Bounds: only the directory of the saved path, the directory its symlink
points into and the directories of the glob matches are listed; only regular
files whose mtime is not older than the saved file's mtime minus
:data:`MTIME_MARGIN` (when the checkpoint kept it), newest first; at most
:data:`MAX_PROBES` files are opened to read their magic bytes, at most
:data:`MAX_CANDIDATES` compressed ones have their head decompressed
(``fingerprint_bytes`` bytes each), and at most :data:`MAX_VERIFY` whose head
matches are decompressed up to the saved offset to compare the bytes before
it. Memory stays bounded: everything is streamed in chunks.

gzip (``gzip``), xz (``lzma``) and bzip2 (``bz2``) come from the standard
library. zstd and lz4 are recognised but cannot be read: Python 3.11 has no
stdlib module for them and no base dependency ships one, so their unread
bytes stay lost (counted as ``gone_while_stopped``).
"""

from __future__ import annotations

import bz2
import contextlib
import errno
import gzip
import logging
import lzma
import os
import stat
import zlib
from collections.abc import Callable, Iterable
from typing import IO, TYPE_CHECKING

from exporter.sources.tail.files import TAIL_BYTES, _digest, _FdExhausted, _File, _Key, _key_of

if TYPE_CHECKING:
    from exporter.sources.tail.state import _Saved

MTIME_MARGIN = 60.0  # seconds: coarse timestamps, a clock step
MAX_PROBES = 64  # files opened to read their magic bytes
MAX_CANDIDATES = 16  # compressed files whose head is decompressed
MAX_VERIFY = 3  # head matches decompressed up to the saved offset
_CHUNK = 1 << 20
log = logging.getLogger("exporter.sources.tail.tailer")
# What a damaged (truncated, corrupt) compressed file raises while it is read.
_DECOMPRESS_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError)

_Opener = Callable[[IO[bytes]], IO[bytes]]


def _gzip(raw: IO[bytes]) -> IO[bytes]:
    return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]  # a BufferedIOBase, read-only


def _xz(raw: IO[bytes]) -> IO[bytes]:
    return lzma.LZMAFile(raw, mode="rb")


def _bz2(raw: IO[bytes]) -> IO[bytes]:
    return bz2.BZ2File(raw, mode="rb")


def _opener(magic: bytes) -> tuple[str, _Opener] | None:
    """The format and a streaming decompressor for data starting with these bytes, if readable."""
    if magic.startswith(b"\x1f\x8b"):
        return "gzip", _gzip
    if magic.startswith(b"\xfd7zXZ\x00"):
        return "xz", _xz
    if magic.startswith(b"BZh"):
        return "bzip2", _bz2
    return None


class _Recovery:
    """The rest of a file, read from its compressed successor; offsets are in the decompressed data.

    ``f`` is an ordinary file record with no descriptor (``fd == -1``); the tailer's
    line loop reads it through :meth:`read`, which turns a damaged stream into EOF and
    sets ``corrupt``. ``saved_size`` is what the checkpoint knew of the file's size
    (what is counted lost when the stream breaks), ``mtime`` the compressed file's.
    """

    __slots__ = ("corrupt", "f", "fmt", "mtime", "raw", "saved_size", "stream")

    def __init__(self, f: _File, raw: IO[bytes], stream: IO[bytes], fmt: str, saved_size: int, mtime: float) -> None:
        self.f = f
        self.raw = raw
        self.stream = stream
        self.fmt = fmt
        self.saved_size = saved_size
        self.mtime = mtime
        self.corrupt = False

    def read(self, n: int) -> bytes:
        if self.corrupt:
            return b""
        try:
            return self.stream.read(n)
        except _DECOMPRESS_ERRORS:
            self.corrupt = True
            return b""

    def close(self) -> None:
        for obj in (self.stream, self.raw):
            with contextlib.suppress(*_DECOMPRESS_ERRORS):
                obj.close()


def _read_exactly(stream: IO[bytes], n: int) -> bytes:
    parts: list[bytes] = []
    while n > 0:
        data = stream.read(min(n, _CHUNK))
        if not data:
            break
        parts.append(data)
        n -= len(data)
    return b"".join(parts)


def _search_dirs(path: str, globbed: Iterable[str]) -> list[str]:
    dirs = [os.path.dirname(path) or ".", os.path.dirname(os.path.realpath(path)) or "."]
    dirs.extend(os.path.dirname(p) or "." for p in globbed)
    return list(dict.fromkeys(dirs))


def _listing(dirs: Iterable[str], min_mtime: float | None, prefer: str | None) -> list[tuple[str, os.stat_result]]:
    """Regular non-empty files in dirs not older than min_mtime, newest first (prefer first)."""
    seen: set[_Key] = set()
    found: list[tuple[str, os.stat_result]] = []
    for directory in dirs:
        try:
            with os.scandir(directory) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat()
            except OSError:
                continue
            key = _key_of(st)
            if key in seen or not stat.S_ISREG(st.st_mode) or st.st_size == 0:
                continue
            seen.add(key)
            if min_mtime is not None and st.st_mtime < min_mtime:
                continue
            found.append((entry.path, st))
    found.sort(key=lambda ps: (ps[0] != prefer, -ps[1].st_mtime))
    return found


def _open_raw(path: str) -> IO[bytes] | None:
    """Open for reading; None when missing or unreadable, ``_FdExhausted`` on EMFILE/ENFILE."""
    try:
        return open(path, "rb")  # closed by the caller, or by the _Recovery
    except OSError as exc:
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            raise _FdExhausted(exc.errno, exc.strerror, path) from None
        return None


def _find_compressed(
    saved: _Saved,
    globbed: Iterable[str],
    fingerprint_bytes: int,
    now: float,
) -> _Recovery | None:
    """The compressed file holding ``saved``'s file: same decompressed head and bytes before the offset.

    Returns it open and positioned at the saved offset, or None. ``_FdExhausted`` propagates.
    """
    if saved.head_len <= 0 or saved.offset < 0:
        return None  # nothing to recognise it by
    min_mtime = None if saved.mtime is None else saved.mtime - MTIME_MARGIN
    prefer = saved.path if saved.compressed else None
    probes = candidates = verified = 0
    listing = _listing(_search_dirs(saved.path, globbed), min_mtime, prefer)
    log.debug("%s: looking for its compressed successor among %d files", saved.path, len(listing))
    for path, st in listing:
        if probes >= MAX_PROBES or candidates >= MAX_CANDIDATES or verified >= MAX_VERIFY:
            break
        probes += 1
        raw = _open_raw(path)
        if raw is None:
            continue
        stream: IO[bytes] | None = None
        try:
            found = _opener(raw.read(6))
            if found is None:
                continue
            candidates += 1
            fmt, opener = found
            isize = _gzip_isize(raw) if fmt == "gzip" else None
            raw.seek(0)
            stream = opener(raw)
            head = _read_exactly(stream, max(saved.head_len, fingerprint_bytes))
            if len(head) < saved.head_len or _digest(head[: saved.head_len]) != saved.head_hash:
                log.debug("%s: not the successor of %s (other head)", path, saved.path)
                continue
            if isize is not None and saved.unread() == 0 and saved.size is not None and isize == saved.offset % 2**32:
                return None  # our file, and it ended where we stopped: nothing to read, nothing to decompress
            verified += 1
            at = _seek_to(stream, head, saved.offset)
            if at is None:
                log.debug("%s: not the successor of %s (shorter than %d)", path, saved.path, saved.offset)
                continue  # shorter than the offset: not it (or damaged before it)
            before, extra = at
            tail = before[len(before) - saved.tail_len :] if saved.tail_len else b""
            if len(tail) != saved.tail_len or _digest(tail) != saved.tail_hash:
                log.debug("%s: not the successor of %s (other bytes before %d)", path, saved.path, saved.offset)
                continue
            f = _File(path, -1, _key_of(st), saved.offset, head[:fingerprint_bytes], before, saved.skipping, now)
            f.buf = extra
            f.size = saved.offset + len(extra)
            recovery = _Recovery(f, raw, stream, fmt, max(saved.size or 0, saved.offset), st.st_mtime)
            stream = None  # handed over, not closed below
            raw = None
            return recovery
        except _DECOMPRESS_ERRORS as exc:
            log.debug("%s: cannot decompress it up to the offset of %s: %r", path, saved.path, exc)
            continue  # damaged before the offset: its bytes are lost
        finally:
            if stream is not None:
                stream.close()
            if raw is not None:
                raw.close()
    return None


def _gzip_isize(raw: IO[bytes]) -> int | None:
    """The size (mod 2**32) a gzip trailer gives for its last member: the whole file's for one member."""
    try:
        raw.seek(-4, os.SEEK_END)
        data = raw.read(4)
    except OSError:
        return None
    return int.from_bytes(data, "little") if len(data) == 4 else None


def _seek_to(stream: IO[bytes], head: bytes, offset: int) -> tuple[bytes, bytes] | None:
    """Read on to ``offset`` (``head`` already read): (up to TAIL_BYTES bytes before it, bytes read past it)."""
    if offset <= len(head):
        return head[max(0, offset - TAIL_BYTES) : offset], head[offset:]
    last = head[-TAIL_BYTES:]
    pos = len(head)
    while pos < offset:
        data = stream.read(min(_CHUNK, offset - pos))
        if not data:
            return None
        pos += len(data)
        last = data[-TAIL_BYTES:] if len(data) >= TAIL_BYTES else (last + data)[-TAIL_BYTES:]
    return last, b""


MAX_UNSEEN = 8  # compressed files no checkpoint saw that one restore reads (newest first)


def _find_unseen(
    globbed: Iterable[str],
    saved_at: float,
    known: Iterable[tuple[int, str]],
    skip: set[_Key],
    fingerprint_bytes: int,
    now: float,
) -> list[_Recovery]:
    """Compressed files in the globs that no checkpoint saw: newer than ``saved_at``, unknown head.

    ``known`` holds the (head length, head digest) of every saved, retired, waiting and
    recovered file: a candidate whose decompressed head starts like one of them is that
    file (already read, or being read) and is not taken. ``skip`` holds device and inode
    pairs already followed or recovered. At most :data:`MAX_UNSEEN` are returned, oldest
    first (the order they were written in), each as a :class:`_Recovery` at offset 0.
    ``_FdExhausted`` propagates.
    """
    heads = [(n, h) for n, h in known if n > 0]
    listing: list[tuple[str, os.stat_result]] = []
    seen: set[_Key] = set(skip)
    for path in globbed:
        try:
            st = os.stat(path)
        except OSError:
            continue
        key = _key_of(st)
        if key in seen or not stat.S_ISREG(st.st_mode) or st.st_size == 0 or st.st_mtime <= saved_at:
            continue
        seen.add(key)
        listing.append((path, st))
    listing.sort(key=lambda ps: -ps[1].st_mtime)
    found: list[_Recovery] = []
    probes = 0
    for path, st in listing:
        if probes >= MAX_PROBES or len(found) >= MAX_UNSEEN:
            break
        probes += 1
        raw = _open_raw(path)
        if raw is None:
            continue
        stream: IO[bytes] | None = None
        try:
            opened = _opener(raw.read(6))
            if opened is None:
                continue  # a plain file: discovery reads it
            fmt, opener = opened
            raw.seek(0)
            stream = opener(raw)
            head = _read_exactly(stream, fingerprint_bytes)
            if not head:
                continue
            if any(len(head) >= n and _digest(head[:n]) == h for n, h in heads):
                log.debug("%s: compressed, newer than the checkpoint, but a known file", path)
                continue
            f = _File(path, -1, _key_of(st), 0, head, b"", False, now)
            f.buf = head
            f.size = len(head)
            found.append(_Recovery(f, raw, stream, fmt, 0, st.st_mtime))
            log.info("%s: compressed file created after the checkpoint (%d bytes %s, no saved counterpart); "
                     "reading it from 0", path, st.st_size, fmt)
            stream = None
            raw = None
        except _DECOMPRESS_ERRORS as exc:
            log.debug("%s: cannot decompress its head: %r", path, exc)
            continue
        finally:
            if stream is not None:
                stream.close()
            if raw is not None:
                raw.close()
    found.reverse()
    return found
