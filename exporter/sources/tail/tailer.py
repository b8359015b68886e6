"""The :class:`Tailer`: discover, classify, read and reap the files of some globs.

The stream contract it keeps is the package docstring (``exporter.sources.tail``).
Line rules and event types are in ``lines.py``, per-file records and raw reads in
``files.py``, the checkpoint and restore in ``state.py``, file events in ``watch.py``.
"""

from __future__ import annotations

import errno
import glob
import logging
import os
import stat
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from exporter.sources.tail.compressed import _Recovery
from exporter.sources.tail.files import (
    TAIL_BYTES,
    _digest,
    _FdExhausted,
    _File,
    _is_compressed,
    _Key,
    _key_of,
    _pread,
    _read_tail,
    _Retired,
    _Waiting,
)
from exporter.sources.tail.lines import (
    LOST_REASONS,
    SKIP_REASONS,
    FileLag,
    TailBatch,
    TailEvent,
    TailStats,
    normalise_line,
    whole_lines,
)
from exporter.sources.tail.state import _Checkpoint, _decode, _encode, _restore, _Restored, _Saved, _SavedWaiting
from exporter.sources.tail.watch import _Watcher

log = logging.getLogger(__name__)

_CHUNK = 1 << 20
_MAX_RETIRED = 32
_UNLIMITED = sys.maxsize
_NO_FDS = (errno.EMFILE, errno.ENFILE)


def _fd_budget() -> int:
    """At most half the process's descriptor limit: the HTTP server, the OTLP receiver,
    watchdog and the checkpoint need descriptors too."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):  # pragma: no cover - not POSIX
        return _UNLIMITED
    return _UNLIMITED if soft == resource.RLIM_INFINITY else max(8, soft // 2)


class Tailer:
    """Follows the files matching some globs; see the package docstring for the contract.

    This class stays above 400 lines on purpose: discovery, classification,
    truncation checks, the read loop (``_drain``, the hot path) and reaping
    all move the same per-file records and the same counters within one
    poll, and their order within a poll is what the contract rests on.
    Splitting them into further modules would pass that state around
    without making any one of them change for fewer reasons.
    """

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
        max_open_files: int = 256,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if isinstance(patterns, str):
            raise TypeError("patterns must be a sequence of globs, not one string")
        if max_line_bytes < 1 or fingerprint_bytes < 1 or max_open_files < 1:
            raise ValueError("max_line_bytes, fingerprint_bytes and max_open_files must be positive")
        self._patterns = tuple(patterns)
        self._max_line = max_line_bytes
        self._fp = fingerprint_bytes
        self._clock = clock
        self._wall = wall_clock
        # Wall time of the last discovery (poll or restore): what ``state()`` describes. A
        # compressed file newer than it that matches no saved file is read at restore.
        self._seen_at: float | None = None
        self._source = source_name
        self._grace = rotate_grace
        self._settle = copy_settle
        self._files: dict[_Key, _File] = {}
        self._waiting: dict[_Key, _Waiting] = {}
        self._retired: deque[_Retired] = deque(maxlen=_MAX_RETIRED)
        self._started = False
        self._closed = False
        self._watcher = _Watcher(self._patterns, use_watchdog, poll_interval)
        self._open_failed: set[str] = set()
        self._max_open = min(max_open_files, _fd_budget())
        self._compressed: dict[_Key, str] = {}  # matched, never lines: no descriptor kept
        self._deferred: dict[_Key, tuple[str, int]] = {}  # matched, not opened yet (cap, EMFILE): path, size
        self._pending: list[_Saved] = []  # restored entries not re-opened yet (EMFILE): retried each poll
        self._pending_waiting: list[_SavedWaiting] = []
        self._recovering: list[_Recovery] = []  # rests of files compressed while stopped, read once, in order
        self._matched = 0  # regular files the globs matched at the last poll
        self._warned_empty = False
        self._opened_poll = 0  # opens that succeeded / failed in the last poll
        self._failed_poll = 0
        self._commit_hints = 0  # rotations, truncations, retirements: the sidecar checkpoints soon after
        self._lost: dict[str, int] = dict.fromkeys(LOST_REASONS, 0)
        self._pending_warned = False
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
        return [event for batch in self.poll_batches(max_lines) for event in batch.events()]

    def poll_batches(self, max_lines: int | None = None) -> list[TailBatch]:
        """:meth:`poll` with the lines of each read in one :class:`TailBatch` (at most max_lines
        lines and skipped lines in all): what the sidecar feeds, with no object per line."""
        if self._closed:
            raise RuntimeError("tailer is closed")
        self._started = True
        now = self._clock()
        budget = _UNLIMITED if max_lines is None else max_lines
        out: list[TailBatch] = []
        self._opened_poll = self._failed_poll = 0
        if self._pending or self._pending_waiting:
            self._retry_pending(now)
        self._seen_at = self._wall()
        self._discover(now)
        if self._recovering:  # older than every followed file: drained first
            budget = self._recover(budget, out, now)
        for f in list(self._files.values()):
            if budget <= 0:
                break
            if f.key in self._files and f.fd >= 0:  # not closed (nor parked) meanwhile
                try:
                    budget = self._service(f, budget, out, now)
                except OSError as exc:  # one unreadable file must not stop the others
                    self._read_error(f.path, exc)
        self._reap(now)
        self._enforce_cap()
        if out:
            self._last_event = now
        return out

    def _globbed(self) -> Iterator[str]:
        for pattern in self._patterns:
            yield from sorted(glob.iglob(pattern, recursive=True))

    def _open(self, path: str) -> tuple[int, os.stat_result] | None:
        """Open and fstat; None when missing or unreadable, ``_FdExhausted`` on EMFILE/ENFILE."""
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._open_errors += 1
            self._failed_poll += 1
            if path not in self._open_failed:
                self._open_failed.add(path)
                log.warning("cannot open %s: %s", path, exc.strerror)
            if exc.errno in _NO_FDS:
                raise _FdExhausted(exc.errno, exc.strerror, path) from None
            return None
        try:
            st = os.fstat(fd)
        except OSError:
            os.close(fd)  # never leak the descriptor
            raise
        self._open_failed.discard(path)
        self._opened_poll += 1
        return fd, st

    def _open_files(self) -> int:
        return (
            sum(1 for f in self._files.values() if f.fd >= 0)
            + sum(1 for w in self._waiting.values() if w.fd >= 0)
            + len(self._recovering)
        )

    def _make_room(self) -> bool:
        """True when one more descriptor fits under max_open_files (parking an idle file if needed)."""
        if self._open_files() < self._max_open:
            return True
        return self._park_one() or self._close_one_waiting()

    def _park_one(self) -> bool:
        """Close the least recently active idle file: read to its end, still in the globs."""
        idle = [
            f
            for f in self._files.values()
            if f.fd >= 0 and f.at_eof and not f.buf and f.orphan_since is None and not f.suspect
        ]
        if not idle:
            return False
        f = min(idle, key=lambda g: g.last_data)
        try:
            st = os.fstat(f.fd)
        except OSError:
            return False
        f.stamp = (st.st_size, st.st_mtime_ns)
        os.close(f.fd)
        f.fd = -1
        return True

    def _close_one_waiting(self) -> bool:
        for w in self._waiting.values():
            if w.fd >= 0:
                os.close(w.fd)
                w.fd = -1
                return True
        return False

    def _shrink_cap(self) -> None:
        """EMFILE/ENFILE below max_open_files: hold fewer from now on, leaving some to the rest."""
        held = self._open_files()
        cap = max(1, held - 4)
        if cap < self._max_open:
            log.warning("source %s: out of file descriptors at %d open files; holding at most %d",
                        self._source, held, cap)
            self._max_open = cap
            self._enforce_cap()

    def _enforce_cap(self) -> None:
        while self._open_files() > self._max_open and (self._park_one() or self._close_one_waiting()):
            pass

    def _reopen(self, path: str, key: _Key) -> int | None:
        """A descriptor for the file with this identity at path, or None (gone, replaced, no room)."""
        if not self._make_room():
            return None
        opened = self._open(path)
        if opened is None:
            return None
        fd, fst = opened
        if _key_of(fst) != key:  # another file has the name now
            os.close(fd)
            return None
        return fd

    def _lose(self, reason: str, nbytes: int) -> None:
        if nbytes > 0:
            self._lost[reason] = self._lost.get(reason, 0) + nbytes

    def _retry_pending(self, now: float) -> None:
        saved, waiting = self._pending, self._pending_waiting
        self._pending, self._pending_waiting = [], []
        self._restore_from(_Checkpoint([], saved, waiting, {}), now)

    def _discover(self, now: float) -> None:
        seen: set[_Key] = set()
        for path in self._globbed():
            try:
                st = os.stat(path)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            key = _key_of(st)
            if key in seen:
                continue
            seen.add(key)
            f = self._files.get(key)
            if f is not None:
                if f.path != path:
                    if f.orphan_since is None:
                        self._rotations += 1
                        self._commit_hints += 1
                    f.path = path
                f.orphan_since = None
                if f.fd < 0 and f.stamp != (st.st_size, st.st_mtime_ns):
                    self._unpark(f, path)
                continue
            w = self._waiting.get(key)
            if w is not None:
                w.path = path
                continue
            if key in self._compressed:
                continue
            if not self._make_room():
                self._deferred[key] = (path, st.st_size)
                continue
            try:
                opened = self._open(path)
            except _FdExhausted:
                self._deferred[key] = (path, st.st_size)
                self._shrink_cap()
                continue
            if opened is None:
                continue
            fd, fst = opened
            if _key_of(fst) != key:  # replaced between stat and open
                os.close(fd)
                continue
            self._deferred.pop(key, None)
            self._waiting[key] = _Waiting(path, fd, key, now)
        self._matched = len(seen)
        if not seen and not self._files and not self._warned_empty:
            self._warned_empty = True
            log.warning("source %s: no file matches %s (yet)", self._source, ", ".join(self._patterns))
        for key in [k for k in self._compressed if k not in seen]:
            del self._compressed[key]
        for key, (path, size) in list(self._deferred.items()):
            if key not in seen:  # never opened, and gone: whatever it held was never read
                del self._deferred[key]
                self._lose("deleted_unread", size)
                log.warning("%s: deleted before it could be opened; %d unread bytes lost", path, size)
        for f in list(self._files.values()):
            if f.fd < 0 and f.key not in seen:  # parked and gone from the globs: cannot follow it
                self._forget_parked(f)
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
                self._commit_hints += 1
        for w in list(self._waiting.values()):
            if w.fd < 0 and not self._reopen_waiting(w, w.key in seen):
                continue
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
                gone = self._waiting.pop(w.key)
                if gone.fd >= 0:
                    os.close(gone.fd)

    def _unpark(self, f: _File, path: str) -> None:
        """Reopen a parked file that changed; a different file under its name is not it."""
        try:
            fd = self._reopen(path, f.key)
        except _FdExhausted:
            return  # stays parked; tried again next poll
        if fd is None:
            return
        f.fd = fd
        f.stamp = None
        f.at_eof = False

    def _forget_parked(self, f: _File) -> None:
        """A parked file left the globs (renamed out, or deleted): it cannot be followed."""
        del self._files[f.key]
        self._retire(f)
        self._commit_hints += 1
        size = f.stamp[0] if f.stamp else f.base
        if size > f.base:
            self._lose("deleted_unread", size - f.base)
            log.warning("%s: closed while idle, then gone with %d unread bytes", f.path, size - f.base)
        else:
            log.debug("%s: closed while idle, now gone from the globs (read to its end)", f.path)

    def _reopen_waiting(self, w: _Waiting, in_globs: bool) -> bool:
        """Give a closed waiting file its descriptor back; forget it when it is gone."""
        fd: int | None = None
        if in_globs:
            try:
                fd = self._reopen(w.path, w.key)
            except _FdExhausted:
                return False
            if fd is None and self._open_files() >= self._max_open:
                return False  # no room yet
        if fd is None:
            del self._waiting[w.key]  # gone (or replaced) before it was classified
            return False
        w.fd = fd
        return True

    def _classify(self, w: _Waiting, now: float, *, final: bool = False) -> None:
        """Decide where a new file starts: 0, a retired offset, or not yet (unless final)."""
        size = os.fstat(w.fd).st_size
        head = _pread(w.fd, min(self._fp, size), 0)
        if _is_compressed(head):
            # app.log.2.gz matched by the glob: never lines, and no descriptor kept for it
            del self._waiting[w.key]
            os.close(w.fd)
            self._compressed[w.key] = w.path
            return
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
                    # A copy of a followed file: its lines come from there. It may wait for ever:
                    # it gives its descriptor back and is reopened (identity verified) to look again.
                    os.close(w.fd)
                    w.fd = -1
                    return
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

    def _service(self, f: _File, budget: int, out: list[TailBatch], now: float) -> int:
        """Check one file for truncation, then read it; returns the budget left."""
        known = f.size  # its size at the last poll: what a truncation now cuts off unread
        st = os.fstat(f.fd)
        size = st.st_size
        f.size = size
        f.mtime = st.st_mtime
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
            budget = self._truncated(f, budget, out, now, known)
            if b"\n" in f.buf:
                return budget
        if budget > 0:
            budget = self._drain(f, budget, out, read=True, now=now)
            if f.suspect:
                # Truncated and rewritten between the checks above and the read: what was read
                # belongs to the new content at the old offset. _drain gave it back; read the
                # new content from 0 instead (else its end is returned now and again from 0).
                f.suspect = False
                self._fp_mismatches += 1
                budget = self._truncated(f, budget, out, now, known)
        return budget

    def _truncated(self, f: _File, budget: int, out: list[TailBatch], now: float, known: int) -> int:
        """Handle a truncation found in f: buffered lines first, then restart at 0."""
        budget = self._drain(f, budget, out, read=False, now=now)
        if b"\n" in f.buf:
            return budget  # buffered lines left over: finish them first
        self._truncate(f, now, known)
        for w in list(self._waiting.values()):
            if w.fd < 0 and not self._reopen_waiting(w, True):
                continue
            self._classify(w, now)
            g = self._files.get(w.key)
            if g is not None and budget > 0:
                budget = self._drain(g, budget, out, read=True, now=now)
        if budget > 0:
            budget = self._drain(f, budget, out, read=True, now=now)
        return budget

    def _truncate(self, f: _File, now: float, known: int) -> None:
        self._truncations += 1
        self._commit_hints += 1
        # Bytes it held past what we returned (as far as we saw it): gone with the truncation,
        # unless a copy inside the globs is adopted at the retired offset (copies_adopted).
        unread = max(0, known - f.base)
        self._lose("truncated_unread", unread)
        log.info("%s was truncated at offset %d; reading it from 0 (%d bytes unread)", f.path, f.base, unread)
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

    def _drain(
        self,
        f: _File,
        budget: int,
        out: list[TailBatch],
        *,
        read: bool,
        now: float,
        stream: Callable[[int], bytes] | None = None,
    ) -> int:
        """Return complete lines from f's buffer, reading on in chunks if read is set.

        The hot path takes every complete line of the buffer at once: one ``split`` up to
        the last newline, one batch (:func:`whole_lines`; CRLF lines too). Only a region
        holding a NUL, a lone CR, a blank or a too long line goes through
        :func:`normalise_line` line by line (``slow_to``).

        When it read anything it checks afterwards that the file is still the one it read
        from (head, and the bytes before the first read position); if not, it gives back
        everything of this call and sets ``f.suspect``. With ``stream`` (a decompressed
        file, read sequentially from ``base + len(buf)``) it reads from that instead, and
        there is nothing to check: the compressed file is final.
        """
        buf = f.buf
        base = f.base
        start = 0
        tail = f.tail
        skipping = f.skipping
        n_out = len(out)
        budget0 = budget
        before = (tail + buf)[-TAIL_BYTES:]  # the bytes just before where reading starts
        read_at = base + len(buf)
        first = b""  # the head, when this call reads the file from 0
        path = f.path
        fd = f.fd
        maxlen = self._max_line
        append = out.append
        lines = blank = nul = too_long = nul_lines = nread = 0
        eof = False
        slow_to = 0  # buf index up to which lines go through normalise_line one at a time
        s_lines: list[bytes] = []  # such lines not in a batch yet, with their offsets
        s_starts: list[int] = []
        s_ends: list[int] = []
        while budget > 0:
            if not skipping and start >= slow_to and buf.rfind(b"\n", start) >= 0:
                # At most ``budget`` lines; the last piece is what follows them (a partial
                # line, or lines beyond the budget): it stays buffered.
                block = (buf[start:] if start else buf).split(b"\n", budget)
                stop = len(buf) - len(block.pop())
                batch = whole_lines(path, buf, start, stop, block, base, maxlen)
                if batch is not None:
                    if s_lines:
                        append(TailBatch(path, s_lines, s_starts[0], s_ends[-1], s_starts, s_ends))
                        s_lines, s_starts, s_ends = [], [], []
                    append(batch)
                    budget -= len(block)
                    lines += len(block)
                    start = stop
                    continue
                slow_to = stop  # this region needs the line rules
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
                            if s_lines:
                                append(TailBatch(path, s_lines, s_starts[0], s_ends[-1], s_starts, s_ends))
                                s_lines, s_starts, s_ends = [], [], []
                            append(TailBatch(path, [], base + start, base + len(buf), skipped="line_too_long"))
                            budget -= 1
                            too_long += 1
                            skipping = True
                            start = len(buf)
                if not read:
                    break
                try:
                    data = os.pread(fd, _CHUNK, base + len(buf)) if stream is None else stream(_CHUNK)
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
                if not nread and read_at == 0:
                    first = data[: self._fp]
                nread += len(data)
                if start:
                    tail = (
                        buf[start - TAIL_BYTES : start] if start >= TAIL_BYTES else (tail + buf[:start])[-TAIL_BYTES:]
                    )
                    buf = buf[start:] + data
                    base += start
                    slow_to = max(0, slow_to - start)
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
                if s_lines:
                    append(TailBatch(path, s_lines, s_starts[0], s_ends[-1], s_starts, s_ends))
                    s_lines, s_starts, s_ends = [], [], []
                append(TailBatch(path, [], lstart, base + start, skipped=reason))
                budget -= 1
                if reason == "line_too_long":
                    too_long += 1
                else:
                    nul_lines += 1
                continue
            if not line:
                blank += 1
                continue
            s_lines.append(line)
            s_starts.append(lstart)
            s_ends.append(base + start)
            budget -= 1
            lines += 1
        if s_lines:
            append(TailBatch(path, s_lines, s_starts[0], s_ends[-1], s_starts, s_ends))
        if nread and stream is None and not self._same_file(f, fd, first, before, read_at):
            del out[n_out:]  # read from a newer generation of the file: give it all back
            f.suspect = True
            return budget0
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

    def _same_file(self, f: _File, fd: int, first: bytes, before: bytes, read_at: int) -> bool:
        """After a read: the head and the bytes before the read position are still what we had.

        Also refreshes a short head (a file read from 0 in this pass), so a copytruncate
        before the next poll still retires the right head.
        """
        want = f.head or first
        cur = _pread(fd, self._fp, 0)
        if cur[: len(want)] != want:
            return False
        if before and _pread(fd, len(before), read_at - len(before)) != before:
            return False
        if len(f.head) < self._fp and len(cur) > len(f.head):
            f.head = cur
        return True

    def _recover(self, budget: int, out: list[TailBatch], now: float) -> int:
        """Read the rests found in compressed files at restore; retire each at its end."""
        for rec in list(self._recovering):
            if budget <= 0:
                break
            f = rec.f
            budget = self._drain(f, budget, out, read=True, now=now, stream=rec.read)
            if f.at_eof and b"\n" not in f.buf:
                self._finish_recovery(rec)
        return budget

    def _finish_recovery(self, rec: _Recovery) -> None:
        self._recovering.remove(rec)
        rec.close()
        f = rec.f
        if rec.corrupt:
            lost = max(rec.saved_size, f.base + len(f.buf)) - f.base
            self._lose("gone_while_stopped", lost)
            self._abandoned += len(f.buf)
            log.warning("%s: damaged %s data after offset %d; %d unread bytes lost", f.path, rec.fmt, f.base, lost)
        elif f.buf:
            log.warning("%s: compressed file ends with an unterminated line (%d bytes)", f.path, len(f.buf))
            self._abandoned += len(f.buf)
            self._lose("unterminated", len(f.buf))
        else:
            log.info("%s: rest of a file compressed while stopped read to its end (%d)", f.path, f.base)
        self._retire(f)
        self._compressed[f.key] = f.path  # never followed itself
        self._commit_hints += 1

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
                self._lose("unterminated", len(f.buf))
            self._retire(f)  # a copy of it (cp + rm across filesystems) resumes here
            self._commit_hints += 1
            if f.fd >= 0:
                os.close(f.fd)
            del self._files[f.key]

    # ------------------------------------------------------------- state

    def state(self) -> dict[str, Any]:
        """Checkpoint: per file identity and the offset after the last returned line."""
        return _encode(
            self._source,
            self._files.values(),
            self._retired,
            self._waiting.values(),
            self._lost,
            self._pending,
            self._pending_waiting,
            self._recovering,
            self._wall() if self._seen_at is None else self._seen_at,
        )

    def restore(self, state: dict[str, Any]) -> list[str]:
        """Resume from a checkpoint; returns warnings about files that changed meanwhile."""
        if self._started or self._files or self._waiting or self._recovering:
            raise RuntimeError("restore() must be called on a new tailer, before poll()")
        checkpoint = _decode(state)
        self._seen_at = self._wall()
        for reason, nbytes in checkpoint.lost.items():  # the counter survives restarts
            self._lost[reason] = self._lost.get(reason, 0) + nbytes
        restored = self._restore_from(checkpoint, self._clock())
        self._enforce_cap()
        return restored.warnings

    def _restore_from(self, checkpoint: _Checkpoint, now: float) -> _Restored:
        """Re-find the checkpoint's files (``state._restore``) and take in what that found."""
        restored = _restore(checkpoint, self._files, self._waiting, self._retired, list(self._globbed()),
                            self._open, self._fp, now)
        self._truncations += restored.truncations
        self._fp_mismatches += restored.fingerprint_mismatches
        for reason, nbytes in restored.lost.items():
            self._lose(reason, nbytes)
        self._pending.extend(restored.pending)
        self._pending_waiting.extend(restored.pending_waiting)
        if restored.recovered:
            self._recovering.extend(restored.recovered)
            self._commit_hints += 1
        if restored.pending and not self._pending_warned:
            self._pending_warned = True
            log.warning("source %s: out of file descriptors; %d saved file(s) kept and retried",
                        self._source, len(restored.pending))
        if restored.warnings and self._started:
            for warning in restored.warnings:
                log.warning("source %s: %s", self._source, warning)
        return restored

    # ------------------------------------------------------------- misc

    def stats(self) -> TailStats:
        """A snapshot of the counters and per-file lag (size - offset at the last poll)."""
        files = tuple(FileLag(f.path, f.base, f.size, max(0, f.size - f.base)) for f in self._files.values()) + tuple(
            FileLag(r.f.path, r.f.base, size, size - r.f.base)
            for r in self._recovering
            for size in [max(r.saved_size, r.f.base + len(r.f.buf))]
        )
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
            bytes_lost=dict(self._lost),
            open_files=self._open_files(),
            files_matched=self._matched,
        )

    @property
    def up(self) -> bool:
        """False when the source has files but could open none of them (every open failing)."""
        if self._open_files() or any(f.fd < 0 for f in self._files.values()):
            return True
        return not (self._failed_poll or self._pending or self._deferred)

    @property
    def commit_hints(self) -> int:
        """Grows on each rotation, truncation, deletion or retirement: time for a checkpoint."""
        return self._commit_hints

    def wait(self, timeout: float) -> None:
        """Block until a filesystem event or min(timeout, poll_interval) passes."""
        self._watcher.wait(timeout)

    def close(self) -> None:
        """Close every descriptor and stop the watcher."""
        self._closed = True
        self._watcher.stop()
        for rec in self._recovering:
            rec.close()
        self._recovering.clear()
        for f in self._files.values():
            if f.fd >= 0:
                os.close(f.fd)
        for w in self._waiting.values():
            if w.fd >= 0:
                os.close(w.fd)
        self._files.clear()
        self._waiting.clear()

    def __enter__(self) -> Tailer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
