"""Follow log files and hand out complete lines with exact resume offsets.

The tailer turns files into lines; it knows nothing of JSON, records or
metrics. The sidecar calls :meth:`Tailer.poll`, hands every line to the
pipeline, and commits :meth:`Tailer.state` together with the aggregates in
one atomic checkpoint; after a restart it calls :meth:`Tailer.restore` with
that state on a new tailer. Exactly-once therefore rests on one promise:
``state()`` describes exactly the lines returned so far, no more, no less.

API
---
``Tailer(patterns, *, max_line_bytes=1 MiB, fingerprint_bytes=256,
use_watchdog=True, poll_interval=1.0, clock=time.monotonic,
source_name="jsonl", rotate_grace=5.0, copy_settle=2.0)``

* ``poll(max_lines=None) -> list[TailEvent]`` - one non-blocking pass:
  discover files matching the globs, check each followed file for
  truncation, read what is new. Events come in file order: within a file in
  offset order, files in the order they were discovered (so a rotated file
  is drained before its successor). ``max_lines`` caps the events returned;
  the rest stays buffered (bounded) and ``state()`` stops exactly there.
* ``wait(timeout)`` - block until a watchdog event or
  ``min(timeout, poll_interval)`` has passed.
* ``state() -> dict`` - JSON-serialisable checkpoint.
* ``restore(state) -> list[str]`` - on a fresh tailer, before the first
  poll; returns human-readable warnings (truncated, rewritten, gone...).
* ``stats() -> TailStats`` - counters and per-file lag.
* ``close()``.

A :class:`TailEvent` is either a line (``skipped is None``; ``line`` holds
the bytes without the newline, a trailing ``\\r`` removed) or a skipped line
(``skipped`` in :data:`SKIP_REASONS`, ``line`` empty) that the caller counts
as a rejection. ``offset`` is where the line starts, ``end`` the resume
offset after it, ``path`` the name the file had when last seen in the globs
(a rotated file keeps its old name here).

Semantics (the contract the tests hold us to)
---------------------------------------------
* **Discovery.** Every poll expands the globs (``**`` allowed). A new
  regular file is read from offset 0 - at start-up too: nothing is skipped.
  Watchdog (inotify) only wakes :meth:`wait` early; correctness never
  depends on it, because network filesystems send no events. With
  ``use_watchdog=False`` the tailer only polls.
* **Identity** is device + inode + a fingerprint: the first
  ``fingerprint_bytes`` bytes of the file (fewer while the file is shorter)
  and the last 64 bytes before the committed offset. Names never decide.
* **Rename rotation** (``app.log`` -> ``app.log.1``, new ``app.log``): the
  old file keeps its identity and is followed through its open descriptor,
  even when the new name is outside the globs, and drained to EOF before
  the new file is read; the new file starts at 0. When the rotated name
  still matches a glob, the same identity is recognised and nothing is read
  twice. A file that left the globs (or was deleted) is closed once it has
  been at EOF for ``rotate_grace`` seconds of the injected clock; a writer
  still holding the old descriptor can finish its lines meanwhile.
* **Truncation** (copytruncate, ``> file``) is detected when the size drops
  below what was read, or the head or the bytes before the offset change.
  Complete lines already buffered are still returned (they were in the
  file), then the file restarts at 0 and the old position is *retired*.
* **copytruncate with the copy inside the globs.** A new file whose head
  equals a retired head is the copy: it is adopted at the retired offset (if
  the 64 bytes before it match), so what was written between the last read
  and the truncation is recovered and nothing is read twice. A new file
  whose full head equals a followed file's head is a copy of a live file and
  is never read (until that file is truncated). A new file too short to
  tell (empty, or a prefix of a known head) waits up to ``copy_settle``
  seconds, then is read from 0. Known window: when several copy, truncate
  and regrow rounds happen between two polls, a copy can fail to match and be
  read again; its lines are then counted as duplicates (the request-id
  ledger keeps the totals exact), never as new requests.
* **NUL bytes.** A writer without O_APPEND keeps writing at its old offset
  after a copytruncate, leaving a run of NULs (a sparse hole) before its
  next line. NUL runs at the start of a line are skipped and counted, never
  buffered as a line. A line that still contains a NUL is skipped with
  reason ``nul_bytes``.
* **NULs at EOF** (a region whose data is not visible yet: NFS,
  preallocation) are never committed or kept: they are read again next
  time, so the data that replaces them is not lost. Only a run longer than
  ``max_line_bytes`` or followed by data is skipped.
* **Partial lines.** An unterminated last line is never returned until its
  newline arrives; the committed offset stays before it, also across a
  restart.
* **Long lines.** A line longer than ``max_line_bytes`` (not counting
  ``\\n``) is reported once as skipped ``line_too_long`` and discarded while
  reading on in chunks (memory stays bounded); tailing resumes after its
  newline, also across a restart (the state remembers that it is inside
  such a line).
* **Blank lines** (empty after removing ``\\r``) are not returned, only
  counted.
* **Restore** re-finds each file by device and inode (at its path, among
  the glob matches, in its directory or in the directory its symlink points
  into, so a file rotated while the sidecar was down is still drained),
  then checks the fingerprint. New files not yet classified are in the
  state too. Head
  changed (inode reused, or truncated and rewritten), size below the offset
  (truncated) or the bytes before the offset changed (rewritten): the file
  restarts at 0 and a warning says so. A file that is gone is reported.
* **Limitation across a crash:** a file that is created *and* rotated out
  of the globs between two checkpoints was never checkpointed, so a tailer
  restored after a crash cannot find it. Let the globs match the rotated
  names too (``app.log*``): identity makes that free of double reads.
* **Limitation: shared headers.** Files whose first ``fingerprint_bytes``
  bytes are identical are taken for copies of each other; raise
  ``fingerprint_bytes`` when every file starts with the same banner.
* **Compressed files** (gzip, bzip2, xz, zstd, lz4 by their magic bytes),
  e.g. ``app.log.2.gz`` matched by ``app.log*``, are never read.
* **Lag**: ``stats().files`` gives size - offset per file.
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import stat
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

log = logging.getLogger(__name__)

STATE_SCHEMA = "llm-savings-exporter/tail-state/v1"
SkipReason = Literal["line_too_long", "nul_bytes"]
SKIP_REASONS: tuple[SkipReason, ...] = ("line_too_long", "nul_bytes")
TAIL_BYTES = 64
_CHUNK = 1 << 20
_MAX_RETIRED = 32
_UNLIMITED = sys.maxsize
# gzip, bzip2, xz, zstd, lz4: rotated-and-compressed files a broad glob may match.
_COMPRESSED_MAGIC = (b"\x1f\x8b\x08", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd", b"\x04\x22\x4d\x18")

_Key = tuple[int, int]


class TailEvent(NamedTuple):
    """One complete line (or one skipped line) of one file."""

    path: str
    line: bytes
    offset: int
    end: int
    skipped: SkipReason | None = None


@dataclass(frozen=True, slots=True)
class FileLag:
    """Where the tailer stands in one followed file."""

    path: str
    offset: int
    size: int
    bytes_behind: int


@dataclass(frozen=True, slots=True)
class TailStats:
    """Counters since this tailer was created (not restored from a checkpoint)."""

    source: str
    lines_read: int
    bytes_read: int
    skipped: dict[str, int]
    blank_lines: int
    nul_bytes_skipped: int
    truncations: int
    rotations: int
    deletions: int
    fingerprint_mismatches: int
    copies_adopted: int
    abandoned_partial_bytes: int
    open_errors: int
    read_errors: int
    files_followed: int
    files_waiting: int
    last_event_time: float | None
    files: tuple[FileLag, ...]

    @property
    def bytes_behind(self) -> int:
        """Total unread bytes over all followed files (the lag metric)."""
        return sum(f.bytes_behind for f in self.files)


def normalise_line(line: bytes, max_line_bytes: int) -> tuple[bytes, SkipReason | None, int]:
    """One complete line (without its newline) as the tailer hands it out.

    Returns (content, skip reason or None, leading NUL bytes removed). Leading NUL
    runs (a copytruncate hole) are dropped; a line still longer than the cap is
    ``line_too_long``; a trailing ``\\r`` is removed; a line that still holds a NUL
    is ``nul_bytes``; empty content with no reason is a blank line. ``replay``
    applies the same function, so it counts what the sidecar would.
    """
    leading = 0
    if line and line[0] == 0:
        stripped = line.lstrip(b"\0")
        leading = len(line) - len(stripped)
        line = stripped
    if len(line) > max_line_bytes:
        return b"", "line_too_long", leading
    if line.endswith(b"\r"):
        line = line[:-1]
    if b"\0" in line:
        return b"", "nul_bytes", leading
    return line, None, leading


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
        "orphan_since",
        "path",
        "size",
        "skipping",
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
        self.orphan_since: float | None = None
        self.last_data = now
        self.at_eof = False


class _Waiting:
    """A new file not yet classified (empty, or maybe a copy of a known file)."""

    __slots__ = ("fd", "first_seen", "key", "path")

    def __init__(self, path: str, fd: int, key: _Key, now: float) -> None:
        self.path = path
        self.fd = fd
        self.key = key
        self.first_seen = now


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


def _watch_root(pattern: str) -> tuple[str, bool]:
    """Directory to watch for a glob, and whether the watch must be recursive."""
    parts = pattern.split(os.sep)
    for i, part in enumerate(parts):
        if glob.has_magic(part):
            root = os.sep.join(parts[:i]) or (os.sep if pattern.startswith(os.sep) else ".")
            return root, i < len(parts) - 1
    return os.path.dirname(pattern) or ".", False


class Tailer:
    """Follows the files matching some globs; see the module docstring."""

    def __init__(
        self,
        patterns: Sequence[str],
        *,
        max_line_bytes: int = 1 << 20,
        fingerprint_bytes: int = 256,
        use_watchdog: bool = True,
        poll_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        source_name: str = "jsonl",
        rotate_grace: float = 5.0,
        copy_settle: float = 2.0,
    ) -> None:
        if isinstance(patterns, str):
            raise TypeError("patterns must be a sequence of globs, not one string")
        if max_line_bytes < 1 or fingerprint_bytes < 1:
            raise ValueError("max_line_bytes and fingerprint_bytes must be positive")
        self._patterns = tuple(patterns)
        self._max_line = max_line_bytes
        self._fp = fingerprint_bytes
        self._use_watchdog = use_watchdog
        self._poll_interval = poll_interval
        self._clock = clock
        self._source = source_name
        self._grace = rotate_grace
        self._settle = copy_settle
        self._files: dict[_Key, _File] = {}
        self._waiting: dict[_Key, _Waiting] = {}
        self._retired: deque[_Retired] = deque(maxlen=_MAX_RETIRED)
        self._started = False
        self._closed = False
        self._wake = threading.Event()
        self._observer: Any = None
        self._watched: set[str] = set()
        self._open_failed: set[str] = set()
        # counters
        self._lines = 0
        self._bytes = 0
        self._skipped: dict[str, int] = dict.fromkeys(SKIP_REASONS, 0)
        self._blank = 0
        self._nul = 0
        self._truncations = 0
        self._rotations = 0
        self._deletions = 0
        self._fp_mismatches = 0
        self._copies = 0
        self._abandoned = 0
        self._open_errors = 0
        self._read_errors = 0
        self._last_event: float | None = None

    # ------------------------------------------------------------------ poll

    def poll(self, max_lines: int | None = None) -> list[TailEvent]:
        """One non-blocking pass over all files; returns at most max_lines events."""
        if self._closed:
            raise RuntimeError("tailer is closed")
        self._started = True
        now = self._clock()
        budget = _UNLIMITED if max_lines is None else max_lines
        out: list[TailEvent] = []
        self._discover(now)
        for f in list(self._files.values()):
            if budget <= 0:
                break
            if f.key in self._files:  # not closed meanwhile
                try:
                    budget = self._service(f, budget, out, now)
                except OSError as exc:  # one unreadable file must not stop the others
                    self._read_error(f.path, exc)
        self._reap(now)
        if out:
            self._last_event = now
        return out

    def _globbed(self) -> Iterator[str]:
        for pattern in self._patterns:
            yield from sorted(glob.iglob(pattern, recursive=True))

    def _open(self, path: str) -> tuple[int, os.stat_result] | None:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._open_errors += 1
            if path not in self._open_failed:
                self._open_failed.add(path)
                log.warning("cannot open %s: %s", path, exc.strerror)
            return None
        self._open_failed.discard(path)
        return fd, os.fstat(fd)

    def _discover(self, now: float) -> None:
        seen: set[_Key] = set()
        for path in self._globbed():
            try:
                st = os.stat(path)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen:
                continue
            seen.add(key)
            f = self._files.get(key)
            if f is not None:
                if f.path != path:
                    if f.orphan_since is None:
                        self._rotations += 1
                    f.path = path
                f.orphan_since = None
                continue
            w = self._waiting.get(key)
            if w is not None:
                w.path = path
                continue
            opened = self._open(path)
            if opened is None:
                continue
            fd, fst = opened
            if (fst.st_dev, fst.st_ino) != key:  # replaced between stat and open
                os.close(fd)
                continue
            self._waiting[key] = _Waiting(path, fd, key, now)
        for f in self._files.values():
            if f.key not in seen and f.orphan_since is None:
                f.orphan_since = now
                try:
                    deleted = os.fstat(f.fd).st_nlink == 0
                except OSError:
                    deleted = True
                if deleted:
                    self._deletions += 1
                else:
                    self._rotations += 1
        for w in list(self._waiting.values()):
            try:
                if w.key in seen:
                    self._classify(w, now)
                    continue
                # Rotated out (or deleted) before we could tell what it is: decide now and
                # follow it by descriptor, or forget it if it is a copy of a followed file.
                self._classify(w, now, final=True)
            except OSError as exc:
                self._read_error(w.path, exc)
                continue
            f = self._files.get(w.key)
            if f is not None:
                f.orphan_since = now
            elif w.key in self._waiting:
                os.close(self._waiting.pop(w.key).fd)

    def _classify(self, w: _Waiting, now: float, *, final: bool = False) -> None:
        """Decide where a new file starts: 0, a retired offset, or not yet (unless final)."""
        size = os.fstat(w.fd).st_size
        head = _pread(w.fd, min(self._fp, size), 0)
        if head.startswith(_COMPRESSED_MAGIC) or (head[:3] == b"BZh" and head[4:10] == b"1AY&SY"):
            return  # app.log.2.gz matched by the glob: never lines
        undecided = not head
        for r in self._retired:
            if r.matches(head):
                if size < r.offset:
                    # A copy made before the last lines we read reached the original:
                    # everything in it was returned already.
                    offset, tail = size, _read_tail(w.fd, size)
                else:
                    offset, tail = r.offset, _read_tail(w.fd, r.offset)
                    if len(tail) != r.tail_len or _digest(tail) != r.tail_hash:
                        continue  # same head, other content: not the copy
                self._retired.remove(r)
                self._copies += 1
                log.info("%s is the copy of a truncated file; resuming at %d", w.path, offset)
                self._adopt(w, offset, head, tail, now)
                return
            if r.undecided(head):
                undecided = True
        for f in self._files.values():
            h = f.head
            if h and head and (h.startswith(head) or head.startswith(h)):
                if len(head) == len(h) == self._fp:
                    return  # a copy of a followed file: its lines come from there
                undecided = True
        if undecided and not final and now - w.first_seen < self._settle:
            return
        self._adopt(w, 0, head, b"", now)

    def _read_error(self, path: str, exc: OSError) -> None:
        self._read_errors += 1
        if self._read_errors <= 10 or self._read_errors % 1000 == 0:
            log.warning("cannot read %s: %s (%d read errors so far)", path, exc.strerror, self._read_errors)

    def _adopt(self, w: _Waiting, offset: int, head: bytes, tail: bytes, now: float) -> _File:
        del self._waiting[w.key]
        f = _File(w.path, w.fd, w.key, offset, head, tail, False, now)
        self._files[w.key] = f
        return f

    def _service(self, f: _File, budget: int, out: list[TailEvent], now: float) -> int:
        """Check one file for truncation, then read it; returns the budget left."""
        size = os.fstat(f.fd).st_size
        f.size = size
        truncated = size < f.base + len(f.buf)
        if not truncated:
            cur = _pread(f.fd, min(self._fp, size), 0)
            if cur[: len(f.head)] != f.head:
                truncated = True
            elif len(cur) > len(f.head):
                f.head = cur
            if not truncated and f.tail and _pread(f.fd, len(f.tail), f.base - len(f.tail)) != f.tail:
                truncated = True
            if truncated:
                self._fp_mismatches += 1
        if truncated:
            budget = self._drain(f, budget, out, read=False, now=now)
            if b"\n" in f.buf:
                return budget  # buffered lines left over: finish them first
            self._truncate(f, now)
            for w in list(self._waiting.values()):
                self._classify(w, now)
                g = self._files.get(w.key)
                if g is not None and budget > 0:
                    budget = self._drain(g, budget, out, read=True, now=now)
        if budget > 0:
            budget = self._drain(f, budget, out, read=True, now=now)
        if len(f.head) < self._fp and f.size > len(f.head):
            # Read from 0 in this pass (new, or just truncated): take its head now. Left empty
            # until a later poll, a copytruncate before that poll would retire nothing, and
            # the copy would be read again from 0.
            f.head = _pread(f.fd, min(self._fp, f.size), 0)
        return budget

    def _truncate(self, f: _File, now: float) -> None:
        self._truncations += 1
        log.info("%s was truncated at offset %d; reading it from 0", f.path, f.base)
        self._retire(f)
        self._abandoned += len(f.buf)
        f.base = 0
        f.buf = b""
        f.head = b""
        f.tail = b""
        f.skipping = False
        f.last_data = now

    def _retire(self, f: _File) -> None:
        if f.head and f.base > 0:
            self._retired.append(_Retired(f.head, len(f.head), _digest(f.head), f.base, len(f.tail), _digest(f.tail)))

    def _drain(self, f: _File, budget: int, out: list[TailEvent], *, read: bool, now: float) -> int:
        """Return complete lines from f's buffer, reading on in chunks if read is set."""
        buf = f.buf
        base = f.base
        start = 0
        tail = f.tail
        skipping = f.skipping
        path = f.path
        fd = f.fd
        maxlen = self._max_line
        append = out.append
        lines = blank = nul = too_long = nul_lines = nread = 0
        eof = False
        while budget > 0:
            nl = buf.find(b"\n", start)
            if nl < 0:
                if start < len(buf):
                    if skipping:
                        start = len(buf)
                    else:
                        if buf[start] == 0:
                            rest = buf[start:].lstrip(b"\0")
                            # Skip the run once data follows it, or when it is too long
                            # to be a write not yet visible (see the EOF case below).
                            if rest or len(buf) - start > maxlen:
                                nul += len(buf) - start - len(rest)
                                start = len(buf) - len(rest)
                        if len(buf) - start > maxlen:
                            append(TailEvent(path, b"", base + start, base + len(buf), "line_too_long"))
                            budget -= 1
                            too_long += 1
                            skipping = True
                            start = len(buf)
                if not read:
                    break
                try:
                    data = os.pread(fd, _CHUNK, base + len(buf))
                except OSError as exc:  # keep what was returned consistent with the state
                    self._read_error(path, exc)
                    break
                if not data:
                    eof = True
                    if buf.endswith(b"\0") and not skipping:
                        # NULs at EOF may be a region whose data is not visible yet
                        # (NFS, preallocation): never commit them; read them again later.
                        keep = max(start, len(buf.rstrip(b"\0")))
                        if len(buf) - keep <= maxlen:
                            buf = buf[:keep]
                    break
                nread += len(data)
                if start:
                    tail = (
                        buf[start - TAIL_BYTES : start] if start >= TAIL_BYTES else (tail + buf[:start])[-TAIL_BYTES:]
                    )
                    buf = buf[start:] + data
                    base += start
                    start = 0
                else:
                    buf += data
                continue
            line = buf[start:nl]
            lstart = base + start
            start = nl + 1
            if skipping:
                skipping = False
                continue
            line, reason, leading_nuls = normalise_line(line, maxlen)
            if leading_nuls:
                nul += leading_nuls
                lstart += leading_nuls
            if reason is not None:
                append(TailEvent(path, b"", lstart, base + start, reason))
                budget -= 1
                if reason == "line_too_long":
                    too_long += 1
                else:
                    nul_lines += 1
                continue
            if not line:
                blank += 1
                continue
            append(TailEvent(path, line, lstart, base + start))
            budget -= 1
            lines += 1
        if start:
            tail = buf[start - TAIL_BYTES : start] if start >= TAIL_BYTES else (tail + buf[:start])[-TAIL_BYTES:]
        f.buf = buf[start:]
        f.base = base + start
        f.tail = tail
        f.skipping = skipping
        f.at_eof = eof
        f.size = max(f.size, base + len(buf))
        if nread:
            f.last_data = now
        self._lines += lines
        self._bytes += nread
        self._blank += blank
        self._nul += nul
        self._skipped["line_too_long"] += too_long
        self._skipped["nul_bytes"] += nul_lines
        return budget

    def _reap(self, now: float) -> None:
        """Close files that left the globs once drained and quiet for rotate_grace."""
        for f in list(self._files.values()):
            if f.orphan_since is None or not f.at_eof or b"\n" in f.buf:
                continue
            if now - max(f.orphan_since, f.last_data) < self._grace:
                continue
            if f.buf:
                log.warning(
                    "%s: closing rotated file with an unterminated last line (%d bytes)",
                    f.path,
                    len(f.buf),
                )
                self._abandoned += len(f.buf)
            self._retire(f)  # a copy of it (cp + rm across filesystems) resumes here
            os.close(f.fd)
            del self._files[f.key]

    # ------------------------------------------------------------- state

    def state(self) -> dict[str, Any]:
        """Checkpoint: per file identity and the offset after the last returned line."""
        files = []
        for f in self._files.values():
            files.append(
                {
                    "path": f.path,
                    "dev": f.key[0],
                    "ino": f.key[1],
                    "offset": f.base,
                    "skipping": f.skipping,
                    "head_len": len(f.head),
                    "head_hash": _digest(f.head),
                    "tail_len": len(f.tail),
                    "tail_hash": _digest(f.tail),
                }
            )
        return {
            "schema": STATE_SCHEMA,
            "source": self._source,
            "files": files,
            "retired": [r.to_json() for r in self._retired],
            # New files not yet read (empty, or maybe a copy): remembered so that one
            # rotated out of the globs before a restart is still found by inode.
            "waiting": [{"path": w.path, "dev": w.key[0], "ino": w.key[1]} for w in self._waiting.values()],
        }

    def restore(self, state: dict[str, Any]) -> list[str]:
        """Resume from a checkpoint; returns warnings about files that changed meanwhile."""
        if self._started or self._files or self._waiting:
            raise RuntimeError("restore() must be called on a new tailer, before poll()")
        if not isinstance(state, dict) or state.get("schema") != STATE_SCHEMA:
            raise ValueError(f"not a tailer state (expected schema {STATE_SCHEMA!r})")
        try:
            retired = [
                _Retired(
                    None,
                    int(r["head_len"]),
                    str(r["head_hash"]),
                    int(r["offset"]),
                    int(r["tail_len"]),
                    str(r["tail_hash"]),
                )
                for r in state["retired"]
            ]
            entries = [
                (
                    str(e["path"]),
                    (int(e["dev"]), int(e["ino"])),
                    int(e["offset"]),
                    bool(e["skipping"]),
                    int(e["head_len"]),
                    str(e["head_hash"]),
                    int(e["tail_len"]),
                    str(e["tail_hash"]),
                )
                for e in state["files"]
            ]
            waiting = [(str(e["path"]), (int(e["dev"]), int(e["ino"]))) for e in state.get("waiting", [])]
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed tailer state: {exc!r}") from exc
        self._retired.extend(retired)
        now = self._clock()
        warnings: list[str] = []
        globbed = list(self._globbed())
        for path, key, offset, skipping, head_len, head_hash, tail_len, tail_hash in entries:
            found = self._locate(path, key, globbed)
            if found is None:
                warnings.append(f"{path}: gone while stopped; its unread bytes are lost")
                continue
            cur_path, fd, size = found
            head = _pread(fd, min(self._fp, size), 0)
            tail = _read_tail(fd, offset) if size >= offset else b""
            old = _Retired(None, head_len, head_hash, offset, tail_len, tail_hash)
            if head_len and (len(head) < head_len or _digest(head[:head_len]) != head_hash):
                self._fp_mismatches += 1
                self._retired.append(old)
                os.close(fd)  # not our file any more: discovery treats it as new
                warnings.append(
                    f"{cur_path}: identity changed while stopped (inode reused, or truncated "
                    f"and rewritten); offset {offset} dropped, file read as new"
                )
                continue
            if size < offset:
                self._truncations += 1
                problem = "truncated while stopped"
            elif len(tail) != tail_len or _digest(tail) != tail_hash:
                self._fp_mismatches += 1
                problem = "rewritten while stopped"
            else:
                self._files[key] = _File(cur_path, fd, key, offset, head, tail, skipping, now)
                if cur_path != path:
                    warnings.append(f"{path}: renamed to {cur_path} while stopped; following it")
                continue
            if offset > 0:
                self._retired.append(old)
            self._files[key] = _File(cur_path, fd, key, 0, head, b"", False, now)
            warnings.append(f"{cur_path}: {problem} (offset was {offset}); reading it from 0")
        for path, key in waiting:
            found = self._locate(path, key, globbed)
            if found is None:
                continue
            if key in self._files or key in self._waiting:
                os.close(found[1])
            else:
                self._waiting[key] = _Waiting(found[0], found[1], key, now)
        return warnings

    def _locate(self, path: str, key: _Key, globbed: list[str]) -> tuple[str, int, int] | None:
        """Find the file with this device and inode: at its path, in the globs, in its dir."""

        def candidates() -> Iterator[str]:
            yield path
            yield from globbed
            # Its directory, and the directory a symlink points into (Kubernetes'
            # /var/log/containers/*.log -> /var/log/pods/.../0.log, rotated there).
            dirs = dict.fromkeys([os.path.dirname(path) or ".", os.path.dirname(os.path.realpath(path))])
            for directory in dirs:
                try:
                    with os.scandir(directory) as it:
                        for entry in it:
                            try:
                                if entry.inode() == key[1]:
                                    yield entry.path
                            except OSError:
                                continue
                except OSError:
                    continue

        for cand in candidates():
            try:
                st = os.stat(cand)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) != key or not stat.S_ISREG(st.st_mode):
                continue
            opened = self._open(cand)
            if opened is None:
                continue
            fd, fst = opened
            if (fst.st_dev, fst.st_ino) != key:
                os.close(fd)
                continue
            return cand, fd, fst.st_size
        return None

    # ------------------------------------------------------------- misc

    def stats(self) -> TailStats:
        """A snapshot of the counters and per-file lag (size - offset at the last poll)."""
        files = tuple(FileLag(f.path, f.base, f.size, max(0, f.size - f.base)) for f in self._files.values())
        return TailStats(
            source=self._source,
            lines_read=self._lines,
            bytes_read=self._bytes,
            skipped=dict(self._skipped),
            blank_lines=self._blank,
            nul_bytes_skipped=self._nul,
            truncations=self._truncations,
            rotations=self._rotations,
            deletions=self._deletions,
            fingerprint_mismatches=self._fp_mismatches,
            copies_adopted=self._copies,
            abandoned_partial_bytes=self._abandoned,
            open_errors=self._open_errors,
            read_errors=self._read_errors,
            files_followed=len(self._files),
            files_waiting=len(self._waiting),
            last_event_time=self._last_event,
            files=files,
        )

    def wait(self, timeout: float) -> None:
        """Block until a filesystem event or min(timeout, poll_interval) passes."""
        if self._use_watchdog:
            self._watch()
        if self._wake.wait(max(0.0, min(timeout, self._poll_interval))):
            self._wake.clear()

    def _watch(self) -> None:
        """Start watchdog lazily (no threads unless wait() is used); retry missing dirs."""
        try:
            from watchdog.events import (
                DirCreatedEvent,
                DirMovedEvent,
                FileClosedEvent,
                FileCreatedEvent,
                FileDeletedEvent,
                FileModifiedEvent,
                FileMovedEvent,
                FileSystemEvent,
                FileSystemEventHandler,
            )
            from watchdog.observers import Observer
        except ImportError:  # pragma: no cover - watchdog is a dependency
            self._use_watchdog = False
            return
        wake = self._wake
        wanted: list[type[FileSystemEvent]] = [
            FileModifiedEvent,
            FileCreatedEvent,
            FileMovedEvent,
            FileDeletedEvent,
            FileClosedEvent,
            DirCreatedEvent,
            DirMovedEvent,
        ]

        class _Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                wake.set()

        try:
            if self._observer is None:
                self._observer = Observer()
                self._observer.start()
            for pattern in self._patterns:
                root, recursive = _watch_root(pattern)
                if root in self._watched or not os.path.isdir(root):
                    continue
                try:  # only changes wake us, not other readers opening the files
                    self._observer.schedule(_Handler(), root, recursive=recursive, event_filter=wanted)
                except TypeError:  # watchdog < 4.0: no event_filter
                    self._observer.schedule(_Handler(), root, recursive=recursive)
                self._watched.add(root)
        except OSError as exc:  # e.g. inotify limits: polling still works
            log.warning("file events unavailable (%s); polling every %ss", exc, self._poll_interval)
            self._use_watchdog = False

    def close(self) -> None:
        """Close every descriptor and stop the watcher."""
        self._closed = True
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
        for f in self._files.values():
            os.close(f.fd)
        for w in self._waiting.values():
            os.close(w.fd)
        self._files.clear()
        self._waiting.clear()

    def __enter__(self) -> Tailer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
