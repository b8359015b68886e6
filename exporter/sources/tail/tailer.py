"""The :class:`Tailer`: discover, classify, read and reap the files of some globs.

The stream contract it keeps is the package docstring (``exporter.sources.tail``).
Line rules and event types are in ``lines.py``, per-file records and raw reads in
``files.py``, the checkpoint and restore in ``state.py``, file events in ``watch.py``.
"""

from __future__ import annotations

import glob
import logging
import os
import stat
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from exporter.sources.tail.files import (
    TAIL_BYTES,
    _digest,
    _File,
    _is_compressed,
    _Key,
    _key_of,
    _pread,
    _read_tail,
    _Retired,
    _Waiting,
)
from exporter.sources.tail.lines import SKIP_REASONS, FileLag, TailEvent, TailStats, normalise_line
from exporter.sources.tail.state import _decode, _encode, _restore
from exporter.sources.tail.watch import _Watcher

log = logging.getLogger(__name__)

_CHUNK = 1 << 20
_MAX_RETIRED = 32
_UNLIMITED = sys.maxsize


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
    ) -> None:
        if isinstance(patterns, str):
            raise TypeError("patterns must be a sequence of globs, not one string")
        if max_line_bytes < 1 or fingerprint_bytes < 1:
            raise ValueError("max_line_bytes and fingerprint_bytes must be positive")
        self._patterns = tuple(patterns)
        self._max_line = max_line_bytes
        self._fp = fingerprint_bytes
        self._clock = clock
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
            key = _key_of(st)
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
            if _key_of(fst) != key:  # replaced between stat and open
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
        if _is_compressed(head):
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
        return _encode(self._source, self._files.values(), self._retired, self._waiting.values())

    def restore(self, state: dict[str, Any]) -> list[str]:
        """Resume from a checkpoint; returns warnings about files that changed meanwhile."""
        if self._started or self._files or self._waiting:
            raise RuntimeError("restore() must be called on a new tailer, before poll()")
        checkpoint = _decode(state)
        restored = _restore(
            checkpoint,
            self._files,
            self._waiting,
            self._retired,
            list(self._globbed()),
            self._open,
            self._fp,
            self._clock(),
        )
        self._truncations += restored.truncations
        self._fp_mismatches += restored.fingerprint_mismatches
        return restored.warnings

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
        self._watcher.wait(timeout)

    def close(self) -> None:
        """Close every descriptor and stop the watcher."""
        self._closed = True
        self._watcher.stop()
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
