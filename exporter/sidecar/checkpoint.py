"""Atomic, verified checkpoints: offsets, aggregates and the dedupe ledger in one file.

Exactly-once rests on committing what was read and what it was counted as
together. Each checkpoint is one file ``checkpoint-<generation>.ckpt``:

    LLMSAVINGS-CHECKPOINT 1\\n
    {"body_len": N, "blob_days": [[day, nbytes], ...], "sha256": "..."}\\n
    <N bytes of JSON body><ledger digests, day after day>

written to a temporary file, fsynced, renamed into place, and the directory
fsynced, so a crash leaves either the old or the new generation, never half
of one. The sha256 covers body and blobs, so a torn or corrupted file is
detected at load: we fall back to the previous good generation (its offsets
and its aggregates belong together, so nothing is counted twice) and say so.
When checkpoint files exist but none is readable we refuse to start rather
than recount from the start of the logs. A write that fails removes its
temporary file; one left by a crash is removed at the next start.

One process owns a state_dir (``StateDirLock``): a second one refuses to start.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

log = logging.getLogger(__name__)

MAGIC = b"LLMSAVINGS-CHECKPOINT 1\n"
_NAME = re.compile(r"^checkpoint-(\d{12})\.ckpt$")
MAX_HEADER = 1 << 20


class CheckpointError(RuntimeError):
    """No usable checkpoint although some exist: starting would recount."""


class StateDirLocked(CheckpointError):
    """Another process owns this state_dir: two owners would count the same logs twice."""


LOCK_NAME = "lock"


class StateDirLock:
    """One owner per state_dir: ``flock(LOCK_EX | LOCK_NB)`` on ``state_dir/lock``, held for the process's life.

    The holder writes its pid, host and start time into the file, so a second
    process (another replica on the same volume, a forgotten container) is refused
    with a message naming the holder. The kernel drops the lock when the holder
    dies, however it dies (kill -9 included): no stale lock to clean up by hand.
    An flock on NFS is advisory and may not be shared between hosts; see README.

    Within one process the lock is shared by every ``acquire`` of the same
    directory (tests re-open a state_dir to simulate a restart) and released when
    the last one is released.
    """

    _held: ClassVar[dict[str, tuple[int, int]]] = {}  # resolved directory -> (fd, users)

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.path = self.directory / LOCK_NAME
        self._key: str | None = None

    def acquire(self) -> None:
        """Take the lock or raise StateDirLocked naming the holder; OSError when the directory is unusable."""
        self.directory.mkdir(parents=True, exist_ok=True)
        key = str(self.directory.resolve())
        held = StateDirLock._held.get(key)
        if held is not None:
            StateDirLock._held[key] = (held[0], held[1] + 1)
            self._key = key
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise StateDirLocked(
                f"{self.path}: state_dir is in use by another exporter ({holder}). "
                "One process per state_dir: give each replica its own directory, or stop the other one."
            ) from None
        except OSError:
            os.close(fd)
            raise
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        data = (json.dumps(info) + "\n").encode()
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
        except OSError as exc:  # the lock is what matters; the note is for the humans
            log.warning("%s: cannot write the holder's details: %s", self.path, exc)
        StateDirLock._held[key] = (fd, 1)
        self._key = key

    def release(self) -> None:
        key, self._key = self._key, None
        if key is None or key not in StateDirLock._held:
            return
        fd, users = StateDirLock._held[key]
        if users > 1:
            StateDirLock._held[key] = (fd, users - 1)
            return
        del StateDirLock._held[key]
        os.close(fd)  # closing the only descriptor drops the flock


def _read_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info['pid']} on host {info['host']} since {info['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown: the lock file names none yet"


@dataclass
class Loaded:
    generation: int
    path: Path
    body: dict[str, Any]
    blobs: dict[int, bytes]
    skipped: list[str]  # newer generations that were unreadable, with why


def encode(body: dict[str, Any], blobs: dict[int, bytes]) -> bytes:
    body_bytes = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    days = sorted(blobs)
    digest = hashlib.sha256(body_bytes)
    for day in days:
        digest.update(blobs[day])
    header = {"body_len": len(body_bytes), "blob_days": [[d, len(blobs[d])] for d in days],
              "sha256": digest.hexdigest()}
    return b"".join([MAGIC, json.dumps(header).encode(), b"\n", body_bytes, *(blobs[d] for d in days)])


def decode(data: bytes) -> tuple[dict[str, Any], dict[int, bytes]]:
    """Parse and verify one checkpoint file's bytes; ValueError says what is wrong."""
    if not data:
        raise ValueError("empty file")
    if not data.startswith(MAGIC):
        raise ValueError("not a checkpoint (bad magic)")
    end = data.find(b"\n", len(MAGIC), len(MAGIC) + MAX_HEADER)
    if end < 0:
        raise ValueError("truncated header")
    try:
        header = json.loads(data[len(MAGIC):end])
        body_len = int(header["body_len"])
        blob_days = [(int(d), int(n)) for d, n in header["blob_days"]]
        expected = str(header["sha256"])
    except (ValueError, KeyError, TypeError, OverflowError):  # OverflowError: int(Infinity), found by tests/fuzz
        raise ValueError("corrupt header") from None
    start = end + 1
    total = start + body_len + sum(n for _, n in blob_days)
    if len(data) != total:
        raise ValueError(f"size {len(data)} != expected {total} (torn write?)")
    digest = hashlib.sha256(data[start:total]).hexdigest()
    if digest != expected:
        raise ValueError("sha256 mismatch (corrupted)")
    body = json.loads(data[start:start + body_len])
    if not isinstance(body, dict):  # only a hand-made file verifies with another shape
        raise ValueError(f"body is a JSON {type(body).__name__}, expected an object")
    blobs: dict[int, bytes] = {}
    pos = start + body_len
    for day, size in blob_days:
        blobs[day] = data[pos:pos + size]
        pos += size
    return body, blobs


class CheckpointStore:
    def __init__(self, directory: str | Path, keep: int = 3) -> None:
        self.directory = Path(directory)
        self.keep = max(2, keep)
        self.generation = 0

    def _generations(self) -> list[tuple[int, Path]]:
        if not self.directory.is_dir():
            return []
        found = []
        for entry in self.directory.iterdir():
            match = _NAME.match(entry.name)
            if match:
                found.append((int(match.group(1)), entry))
        return sorted(found, reverse=True)

    def remove_stale_temporaries(self) -> list[str]:
        """Delete ``*.tmp`` left by a checkpoint that died mid-write; call only while holding the lock."""
        removed: list[str] = []
        if not self.directory.is_dir():
            return removed
        for entry in sorted(self.directory.glob("*.tmp")):
            try:
                entry.unlink()
            except OSError as exc:
                log.warning("cannot remove stale temporary %s: %s", entry, exc.strerror)
                continue
            removed.append(entry.name)
            log.info("removed stale temporary %s (a checkpoint interrupted mid-write)", entry)
        return removed

    def load(self) -> Loaded | None:
        """The newest readable generation; None when there is none at all."""
        generations = self._generations()
        skipped: list[str] = []
        for generation, path in generations:
            try:
                body, blobs = decode(path.read_bytes())
            except (OSError, ValueError) as exc:
                skipped.append(f"{path.name}: {exc}")
                log.warning("checkpoint %s unusable: %s; trying the previous generation", path.name, exc)
                continue
            self.generation = max(g for g, _ in generations)
            return Loaded(generation, path, body, blobs, skipped)
        if generations:
            raise CheckpointError(
                f"{self.directory}: no readable checkpoint among {len(generations)} "
                f"({'; '.join(skipped)}). Refusing to start, because starting empty would count the "
                "logs again. Move the directory aside to start over deliberately."
            )
        return None

    def save(self, body: dict[str, Any], blobs: dict[int, bytes]) -> Path:
        """Write the next generation atomically and durably; prune old ones."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.generation += 1
        final = self.directory / f"checkpoint-{self.generation:012d}.ckpt"
        temp = self.directory / f".checkpoint-{self.generation:012d}.tmp"
        data = encode(body, blobs)
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, final)
        except BaseException:  # ENOSPC, EIO, a read-only remount: no half-written .tmp stays behind
            self.generation -= 1
            with contextlib.suppress(OSError):
                temp.unlink()
            raise
        dir_fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        for _generation, path in self._generations()[self.keep:]:
            with contextlib.suppress(OSError):
                path.unlink()
        return final
