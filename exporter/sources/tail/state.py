"""The checkpoint: what ``Tailer.state()`` writes and ``Tailer.restore()`` reads.

Functions over the tailer's file table, kept apart from the reading logic so
that the on-disk schema (:data:`STATE_SCHEMA`) changes in one place:
:func:`_encode` turns the table into a JSON-serialisable dict,
:func:`_decode` validates one back into typed entries, and :func:`_locate`
finds a checkpointed file again after a restart by device and inode, and
:func:`_restore` fills a new tailer's file table from a checkpoint: each file
is re-found and its fingerprint checked; one that changed meanwhile restarts
at 0 (its old position retired, so a copy of it can still be adopted) with a
warning.
"""

from __future__ import annotations

import logging
import os
import stat
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from exporter.sources.tail.compressed import _find_compressed, _find_unseen, _Recovery
from exporter.sources.tail.files import (
    _digest,
    _FdExhausted,
    _File,
    _Key,
    _key_of,
    _pread,
    _read_tail,
    _Retired,
    _Waiting,
)

STATE_SCHEMA = "llm-savings-exporter/tail-state/v1"
# The tailer's logger: its messages keep the name they had before restore had a module.
log = logging.getLogger("exporter.sources.tail.tailer")


class _Saved(NamedTuple):
    """One followed file as a checkpoint recorded it."""

    path: str
    key: _Key
    offset: int
    skipping: bool
    head_len: int
    head_hash: str
    tail_len: int
    tail_hash: str
    size: int | None = None  # the file's size when last seen (None: a checkpoint from before it was kept)
    mtime: float | None = None  # its mtime when last seen (None: not kept): bounds the compressed search
    compressed: bool = False  # a compressed successor being read (offsets in the decompressed data)

    def retired(self) -> _Retired:
        """Its checkpointed position, kept in case a copy of the file turns up."""
        return _Retired(None, self.head_len, self.head_hash, self.offset, self.tail_len, self.tail_hash)

    def unread(self) -> int:
        """Bytes known to be in the file after the offset when it was last seen."""
        return max(0, (self.size or 0) - self.offset)

    def to_json(self) -> dict[str, Any]:
        out = {"path": self.path, "dev": self.key.dev, "ino": self.key.ino, "offset": self.offset,
               "skipping": self.skipping, "head_len": self.head_len, "head_hash": self.head_hash,
               "tail_len": self.tail_len, "tail_hash": self.tail_hash}
        if self.size is not None:
            out["size"] = self.size
        if self.mtime is not None:
            out["mtime"] = self.mtime
        if self.compressed:
            out["compressed"] = True
        return out


class _SavedWaiting(NamedTuple):
    """A new file not yet classified when the checkpoint was taken."""

    path: str
    key: _Key


class _Checkpoint(NamedTuple):
    retired: list[_Retired]
    files: list[_Saved]
    waiting: list[_SavedWaiting]
    lost: dict[str, int]
    saved_at: float | None = None  # wall time of the discovery it reflects (None: older state, or a retry)


class _Restored(NamedTuple):
    """What a restore reports besides the file table it filled."""

    warnings: list[str]
    truncations: int
    fingerprint_mismatches: int
    lost: dict[str, int]  # bytes known lost meanwhile, by reason
    pending: list[_Saved]  # not re-found because we ran out of descriptors: kept, retried later
    pending_waiting: list[_SavedWaiting]
    recovered: list[_Recovery]  # gone files whose rest is read from their compressed successor


class _Located(NamedTuple):
    """A checkpointed file found again: its current name, an open descriptor, its size and mtime."""

    path: str
    fd: int
    size: int
    mtime: float


def _encode(
    source: str,
    files: Iterable[_File],
    retired: Iterable[_Retired],
    waiting: Iterable[_Waiting],
    lost: dict[str, int] | None = None,
    pending: Iterable[_Saved] = (),
    pending_waiting: Iterable[_SavedWaiting] = (),
    recovering: Iterable[_Recovery] = (),
    saved_at: float | None = None,
) -> dict[str, Any]:
    """The checkpoint: per file identity and the offset after the last returned line.

    Entries a restore could not re-open yet (out of descriptors) are written back as
    they were read, so a checkpoint taken meanwhile never drops their offsets; ``lost``
    carries the bytes-lost counters across restarts.
    """
    out: dict[str, Any] = {
        "schema": STATE_SCHEMA,
        "source": source,
        "files": [
            {
                "path": f.path,
                "dev": f.key.dev,
                "ino": f.key.ino,
                "offset": f.base,
                "skipping": f.skipping,
                "head_len": len(f.head),
                "head_hash": _digest(f.head),
                "tail_len": len(f.tail),
                "tail_hash": _digest(f.tail),
                "size": max(f.size, f.base),
                **({"mtime": f.mtime} if f.mtime else {}),
            }
            for f in files
        ]
        + [p.to_json() for p in pending]
        + [_recovering_entry(r) for r in recovering],
        "retired": [r.to_json() for r in retired],
        # New files not yet read (empty, or maybe a copy): remembered so that one
        # rotated out of the globs before a restart is still found by inode.
        "waiting": [{"path": w.path, "dev": w.key.dev, "ino": w.key.ino} for w in waiting]
        + [{"path": w.path, "dev": w.key.dev, "ino": w.key.ino} for w in pending_waiting],
        "lost": {k: v for k, v in (lost or {}).items() if v},
    }
    if saved_at is not None:
        # Compressed files newer than this that match nothing saved were never seen: read at restore.
        out["saved_at"] = saved_at
    return out


def _recovering_entry(r: _Recovery) -> dict[str, Any]:
    """A compressed successor being read: found again at restore by its decompressed fingerprint."""
    f = r.f
    return _Saved(f.path, f.key, f.base, f.skipping, len(f.head), _digest(f.head), len(f.tail), _digest(f.tail),
                  max(r.saved_size, f.size, f.base), r.mtime, True).to_json()


def _decode(state: Any) -> _Checkpoint:
    """Validate a checkpoint; ValueError when it is not one or is malformed."""
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
        files = [
            _Saved(
                str(e["path"]),
                _Key(int(e["dev"]), int(e["ino"])),
                int(e["offset"]),
                bool(e["skipping"]),
                int(e["head_len"]),
                str(e["head_hash"]),
                int(e["tail_len"]),
                str(e["tail_hash"]),
                int(e["size"]) if "size" in e else None,
                float(e["mtime"]) if "mtime" in e else None,
                bool(e.get("compressed", False)),
            )
            for e in state["files"]
        ]
        waiting = [_SavedWaiting(str(e["path"]), _Key(int(e["dev"]), int(e["ino"]))) for e in state.get("waiting", [])]
        lost = {str(k): int(v) for k, v in state.get("lost", {}).items()}
        saved_at = float(state["saved_at"]) if state.get("saved_at") is not None else None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"malformed tailer state: {exc!r}") from exc
    return _Checkpoint(retired, files, waiting, lost, saved_at)


def _locate(
    path: str,
    key: _Key,
    globbed: list[str],
    open_file: Callable[[str], tuple[int, os.stat_result] | None],
) -> _Located | None:
    """Find the file with this device and inode: at its path, in the globs, in its dir.

    ``_FdExhausted`` from ``open_file`` propagates: out of descriptors is not "gone".
    """

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
                            if entry.inode() == key.ino:
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
        if _key_of(st) != key or not stat.S_ISREG(st.st_mode):
            continue
        opened = open_file(cand)
        if opened is None:
            continue
        fd, fst = opened
        if _key_of(fst) != key:
            os.close(fd)
            continue
        return _Located(cand, fd, fst.st_size, fst.st_mtime)
    return None


def _restore(
    checkpoint: _Checkpoint,
    files: dict[_Key, _File],
    waiting: dict[_Key, _Waiting],
    retired: deque[_Retired],
    globbed: list[str],
    open_file: Callable[[str], tuple[int, os.stat_result] | None],
    fingerprint_bytes: int,
    now: float,
) -> _Restored:
    """Fill a new tailer's (empty) file table from a checkpoint; see ``Tailer.restore``.

    Also used to retry entries left pending (out of descriptors): then ``checkpoint``
    holds only those, and its retired list and lost counters are empty.
    """
    retired.extend(checkpoint.retired)
    warnings: list[str] = []
    lost: dict[str, int] = {}
    pending: list[_Saved] = []
    pending_waiting: list[_SavedWaiting] = []
    recovered: list[_Recovery] = []
    truncations = mismatches = 0
    for saved in checkpoint.files:
        path, key, offset = saved.path, saved.key, saved.offset
        recovery: _Recovery | None = None
        try:
            # A compressed successor we were reading is found again by its content only.
            found = None if saved.compressed else _locate(path, key, globbed, open_file)
            if found is None:
                recovery = _find_compressed(saved, globbed, fingerprint_bytes, now) if _may_recover(saved) else None
        except _FdExhausted:
            pending.append(saved)  # there, but no descriptor to spare: keep its offset, retry later
            continue
        if found is None:
            if recovery is not None:
                recovered.append(recovery)
                warnings.append(_recovered_warning(saved, recovery))
                continue
            unread = saved.unread()
            if unread or saved.size is None:
                lost["gone_while_stopped"] = lost.get("gone_while_stopped", 0) + unread
                warnings.append(f"{path}: gone while stopped; its unread bytes are lost "
                                f"({unread if saved.size is not None else 'unknown'} known)")
            else:
                log.debug("%s: gone while stopped, read to its end before (rotated away)", path)
            continue
        cur_path, fd, size, mtime = found
        try:
            head = _pread(fd, min(fingerprint_bytes, size), 0)
            tail = _read_tail(fd, offset) if size >= offset else b""
        except OSError as exc:
            os.close(fd)
            pending.append(saved)
            warnings.append(f"{cur_path}: cannot read it to restore ({exc.strerror}); retrying later")
            continue
        head_len = saved.head_len
        if head_len and (len(head) < head_len or _digest(head[:head_len]) != saved.head_hash):
            os.close(fd)  # not our file any more: discovery treats it as new
            # Its inode was freed and reused: the file itself may have been compressed meanwhile.
            try:
                recovery = _find_compressed(saved, globbed, fingerprint_bytes, now) if _may_recover(saved) else None
            except _FdExhausted:
                pending.append(saved)
                continue
            mismatches += 1
            if recovery is not None:
                recovered.append(recovery)
                warnings.append(_recovered_warning(saved, recovery))
                continue
            retired.append(saved.retired())
            unread = saved.unread()
            if unread:
                lost["gone_while_stopped"] = lost.get("gone_while_stopped", 0) + unread
            warnings.append(
                f"{cur_path}: identity changed while stopped (inode reused, or truncated "
                f"and rewritten); offset {offset} dropped ({unread} unread bytes lost), file read as new"
            )
            continue
        if size < offset:
            truncations += 1
            problem = "truncated while stopped"
        elif len(tail) != saved.tail_len or _digest(tail) != saved.tail_hash:
            mismatches += 1
            problem = "rewritten while stopped"
        else:
            files[key] = _File(cur_path, fd, key, offset, head, tail, saved.skipping, now)
            files[key].size = max(size, offset)
            files[key].mtime = mtime
            if cur_path != path:
                warnings.append(f"{path}: renamed to {cur_path} while stopped; following it")
            continue
        unread = saved.unread()
        if unread:
            lost["truncated_unread"] = lost.get("truncated_unread", 0) + unread
        if offset > 0:
            retired.append(saved.retired())
        files[key] = _File(cur_path, fd, key, 0, head, b"", False, now)
        files[key].mtime = mtime
        warnings.append(f"{cur_path}: {problem} (offset was {offset}); reading it from 0")
    for w in checkpoint.waiting:
        try:
            found = _locate(w.path, w.key, globbed, open_file)
        except _FdExhausted:
            pending_waiting.append(w)
            continue
        if found is None:
            continue
        if w.key in files or w.key in waiting:
            os.close(found.fd)
        else:
            waiting[w.key] = _Waiting(found.path, found.fd, w.key, now)
    if checkpoint.saved_at is not None:
        try:
            unseen = _find_unseen(globbed, checkpoint.saved_at, _known_heads(checkpoint, files, waiting, retired,
                                                                             recovered, fingerprint_bytes),
                                  {*files, *waiting, *(r.f.key for r in recovered)}, fingerprint_bytes, now)
        except _FdExhausted:
            unseen = []
            warnings.append("out of file descriptors: compressed files created after the checkpoint not looked for")
        for rec in unseen:
            recovered.append(rec)
            warnings.append(f"{rec.f.path}: compressed after the checkpoint and matching no saved file; "
                            f"reading it from 0 ({rec.fmt})")
    return _Restored(warnings, truncations, mismatches, lost, pending, pending_waiting, recovered)


def _known_heads(
    checkpoint: _Checkpoint,
    files: dict[_Key, _File],
    waiting: dict[_Key, _Waiting],
    retired: Iterable[_Retired],
    recovered: Iterable[_Recovery],
    fingerprint_bytes: int,
) -> list[tuple[int, str]]:
    """(head length, head digest) of every file the checkpoint or this restore knows of."""
    known = [(s.head_len, s.head_hash) for s in checkpoint.files]
    known += [(r.head_len, r.head_hash) for r in [*checkpoint.retired, *retired]]
    known += [(len(f.head), _digest(f.head)) for f in [*files.values(), *(r.f for r in recovered)]]
    for w in waiting.values():
        if w.fd >= 0:
            try:
                head = _pread(w.fd, fingerprint_bytes, 0)
            except OSError:
                continue
            known.append((len(head), _digest(head)))
    return known


def _may_recover(saved: _Saved) -> bool:
    """Worth looking for its compressed successor: it has a head to recognise it by.

    Also when it was read to its end at the checkpoint: a file still being written grew
    after it (the sidecar was killed, the writer went on until the rotation).
    """
    return saved.head_len > 0


def _recovered_warning(saved: _Saved, recovery: _Recovery) -> str:
    return (f"{saved.path}: compressed while stopped; reading the rest from {recovery.f.path} "
            f"({recovery.fmt}) at offset {saved.offset}")
