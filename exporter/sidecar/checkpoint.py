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
than recount from the start of the logs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MAGIC = b"LLMSAVINGS-CHECKPOINT 1\n"
_NAME = re.compile(r"^checkpoint-(\d{12})\.ckpt$")
MAX_HEADER = 1 << 20


class CheckpointError(RuntimeError):
    """No usable checkpoint although some exist: starting would recount."""


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
        dir_fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        for _generation, path in self._generations()[self.keep:]:
            with contextlib.suppress(OSError):
                path.unlink()
        return final
