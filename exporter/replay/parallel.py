"""Parallel replay: disjoint byte ranges of the input counted in forked processes, then added up.

Replay is bound by Python work per record on one core; big logs are split at
line boundaries into one range per job, each range is counted by its own
pipeline, and the integer aggregates are added (``Aggregates.add``). That is
exactly a one-pass replay when the parts are independent, which is checked
after the fact, never assumed:

- no request id counted in a part was seen in an earlier part (else the
  later one is a duplicate that part could not know of);
- no dedupe window expiry can have happened (all counted records span less
  than the window) and the ids stay under the ledger's cap (no eviction);
- no label cap was reached (caps admit values in arrival order).

When any check fails, or a job fails, the parts are discarded and the input
is replayed in one pass: the result is always the one-pass result, parallel
only makes it sooner. Forked workers (Linux) inherit the price table and the
decoder; they return their aggregates, the digests of the ids they counted
and what the checks need.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import traceback
from array import array
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, BinaryIO

from exporter.engine.aggregate import Aggregates
from exporter.engine.dedupe import BUCKET_SECONDS
from exporter.engine.pipeline import Pipeline

MIN_BYTES_PER_JOB = 16 << 20  # below this a fork and a merge cost more than they save
MAX_JOBS = 16

Range = tuple[str, int, int]  # (path, start offset, end offset): whole lines only


@dataclass
class PartResult:
    """What one job counted, and what the exactness checks need."""

    aggregates: Aggregates
    lines: int
    ids: AbstractSet[int] | array[int]  # digests of the ids this part counted (a set when counted here)
    first_hour: int | None  # oldest and newest hour holding a counted id
    last_hour: int | None
    evicted: int
    cap_values: dict[str, set[str]]  # label values admitted, per cap
    cap_overflow: dict[str, int]


def default_jobs() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_JOBS))


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def split_ranges(paths: list[str], jobs: int) -> list[list[Range]]:
    """Cut the files into ``jobs`` runs of whole lines of about equal bytes, in input order."""
    sizes = [os.path.getsize(p) for p in paths]
    total = sum(sizes)
    share = -(-total // jobs) if total else 0
    parts: list[list[Range]] = [[] for _ in range(jobs)]
    part, room = 0, share
    for path, size in zip(paths, sizes, strict=True):
        start = 0
        with open(path, "rb") as stream:
            while start < size:
                last = part == jobs - 1 or size - start <= room  # the rest of this file fits this part
                end = size if last else _line_end(stream, start + room, size)
                parts[part].append((path, start, end))
                room -= end - start
                start = end
                if room <= 0 and part < jobs - 1:
                    part, room = part + 1, share
    return [p for p in parts if p]


def _line_end(stream: BinaryIO, offset: int, size: int) -> int:
    """The offset just past the first newline at or after ``offset`` (or the file's end)."""
    stream.seek(offset)
    while True:
        block = stream.read(1 << 16)
        if not block:
            return size
        found = block.find(b"\n")
        if found >= 0:
            return stream.tell() - len(block) + found + 1


def count_ranges(ranges: list[Range], pipeline: Pipeline, feed: Callable[[Any, int], int], *,
                 here: bool = False) -> PartResult:
    """Count ``ranges`` into ``pipeline`` with ``feed(stream, limit)``; the part's result.

    ``here``: counted in this process, the ids come back as a set of digests (the
    other parts are checked against it); else as a packed array, cheap to send back.
    """
    lines = 0
    for path, start, end in ranges:
        with open(path, "rb") as stream:
            stream.seek(start)
            lines += feed(stream, end - start)
    ledger = pipeline.ledger
    hours = ledger.hours()
    caps = pipeline.caps.all()
    return PartResult(
        aggregates=pipeline.aggregates, lines=lines,
        ids=ledger.digest_set() if here else ledger.digests(),
        first_hour=min(hours) if hours else None, last_hour=max(hours) if hours else None,
        evicted=ledger.evicted, cap_values={cap.name: set(cap.values) for cap in caps},
        cap_overflow={cap.name: cap.overflow for cap in caps},
    )


def _job(conn: Connection, work: Callable[[], PartResult]) -> None:
    try:
        conn.send(("ok", work()))
    except BaseException:
        conn.send(("error", traceback.format_exc(limit=5)))
    finally:
        conn.close()


def run_parts(works: Sequence[Callable[[], PartResult]]) -> list[PartResult] | str:
    """Run the first work here and the others in forked processes; their results, or why not."""
    context = multiprocessing.get_context("fork")
    children = []
    for work in works[1:]:
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=_job, args=(send, work), daemon=True)
        process.start()
        send.close()
        children.append((process, receive))
    results: list[PartResult] = [works[0]()]
    failure = ""
    for process, receive in children:
        try:
            status, value = receive.recv()
        except EOFError:
            status, value = "error", f"worker {process.pid} died (exit code {process.exitcode})"
        process.join()
        if status == "ok":
            results.append(value)
        else:
            failure = failure or str(value)
    return failure or results


def why_not_additive(parts: list[PartResult], window_days: float, max_ids: int,
                     cap_sizes: dict[str, int]) -> str | None:
    """None when adding the parts gives exactly the one-pass counts; else the reason it may not."""
    first = parts[0].ids if isinstance(parts[0].ids, AbstractSet) else set(parts[0].ids)
    between: set[int] = set()  # the ids of the parts after the first and before this one
    for index, part in enumerate(parts):
        if part.evicted:
            return "the dedupe ledger evicted ids"
        if index == 0:
            continue
        if not first.isdisjoint(part.ids) or not between.isdisjoint(part.ids):
            return f"part {index + 1} counted request ids an earlier part holds"
        if index < len(parts) - 1:
            between.update(part.ids)
    if sum(len(part.ids) for part in parts) > max_ids:  # disjoint by now
        return "more request ids than the dedupe ledger keeps"
    hours = [h for p in parts for h in (p.first_hour, p.last_hour) if h is not None]
    if hours and max(hours) - min(hours) > window_days * 86_400 // BUCKET_SECONDS:
        return "the records span more than the dedupe window"
    for name, size in cap_sizes.items():
        admitted = set().union(*(p.cap_values[name] for p in parts))
        if len(admitted) >= size:
            return f"the {name} label cap is reached"
    return None


def add_parts(pipeline: Pipeline, parts: list[PartResult]) -> int:
    """Add the parts' counts into ``pipeline``; returns the lines read."""
    for part in parts:
        pipeline.aggregates.add(part.aggregates)
        for cap in pipeline.caps.all():
            cap.values |= part.cap_values[cap.name]
            cap.overflow += part.cap_overflow[cap.name]
    return sum(part.lines for part in parts)


def note(message: str) -> None:
    sys.stderr.write(f"replay: {message}\n")
