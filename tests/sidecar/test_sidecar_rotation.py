"""Rotation through the running sidecar in polling-only mode (``watch: false``, as on NFS).

The real ``Sidecar`` runs its ingest thread and HTTP server; the test writes,
rotates (rename, copytruncate) and reads ``/metrics`` over HTTP, polling with a
deadline. Oracle: every request id counted once; the same id again - in one
file, across two files, in a file replayed later - is a duplicate, and an exact
copy of a followed file is not read at all.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from exporter.sidecar.sidecar import Sidecar
from tests.support.processes import poll, samples, scrape, total
from tests.support.sidecar import WALL, make_config, record_line


class Running:
    """A started Sidecar; ``counted()`` waits until /metrics shows ``lines`` records."""

    def __init__(self, tmp: Path, pattern: str) -> None:
        sources = [{"name": "gw", "paths": [str(tmp / "logs" / pattern)], "watch": False,
                    "poll_interval_seconds": 0.05}]
        self.sidecar = Sidecar(make_config(tmp, sources=sources), wall_clock=lambda: WALL)
        self.sidecar.start()

    def counted(self, lines: int, timeout: float = 20.0, *, requests_only: bool = False) -> dict[str, float]:
        """Wait until ``lines`` lines are counted; ``requests_only``: until ``lines`` requests are."""
        def check() -> dict[str, float] | None:
            parsed = samples(scrape(self.sidecar.port))
            seen = {name: total(parsed, f"llm_savings_{name}_total")
                    for name in ("requests", "duplicates", "records_rejected")}
            got = seen["requests"] if requests_only else sum(seen.values())
            assert got <= lines, f"over-counted: {seen}, expected {lines} lines"
            return seen if got == lines else None

        return poll(check, timeout, f"{lines} lines counted")

    def stop(self) -> None:
        self.sidecar.stop()


@pytest.fixture
def logs(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "logs").mkdir()
    yield tmp_path / "logs"


def _append(path: Path, lines: list[bytes]) -> None:
    with open(path, "ab") as f:
        f.writelines(lines)


def test_rename_rotation_counts_every_line_once(tmp_path: Path, logs: Path) -> None:
    run = Running(tmp_path, "app.jsonl*")
    try:
        app = logs / "app.jsonl"
        _append(app, [record_line(i) for i in range(100)])
        run.counted(100)
        writer = open(app, "ab")  # noqa: SIM115 - the gateway still holds the old file
        os.rename(app, logs / "app.jsonl.1")
        writer.writelines(record_line(i) for i in range(100, 130))  # late lines into the rotated file
        writer.close()
        _append(app, [record_line(i) for i in range(130, 200)])
        seen = run.counted(200)
        for n in range(2, 6):  # rotate again and again, without waiting in between
            os.rename(app, logs / f"app.jsonl.{n}")
            _append(app, [record_line(i) for i in range(200 * n - 200, 200 * n)])
        seen = run.counted(1000)
    finally:
        run.stop()
    assert seen == {"requests": 1000, "duplicates": 0, "records_rejected": 0}


def test_rename_rotation_out_of_the_globs_is_drained_by_descriptor(tmp_path: Path, logs: Path) -> None:
    run = Running(tmp_path, "app.jsonl")
    try:
        app = logs / "app.jsonl"
        _append(app, [record_line(i) for i in range(50)])
        run.counted(50)
        writer = open(app, "ab")  # noqa: SIM115
        os.rename(app, logs / "app.jsonl.old")  # no longer matches the glob
        writer.writelines(record_line(i) for i in range(50, 80))
        writer.close()
        _append(app, [record_line(i) for i in range(80, 120)])
        seen = run.counted(120)
    finally:
        run.stop()
    assert seen["requests"] == 120


@pytest.mark.parametrize(("copy_inside_globs", "caught_up"), [(True, True), (True, False), (False, True)],
                         ids=["copy-in-globs", "copy-in-globs-racing", "copy-elsewhere"])
def test_copytruncate_counts_every_line_once(tmp_path: Path, logs: Path, copy_inside_globs: bool,
                                             caught_up: bool) -> None:
    run = Running(tmp_path, "app.jsonl*")
    rng = random.Random(7)
    try:
        app = logs / "app.jsonl"
        written = 0
        writer = open(app, "ab", buffering=0)  # noqa: SIM115 - O_APPEND, as logrotate expects
        for n in range(1, 6):
            batch = rng.randint(20, 80)
            writer.write(b"".join(record_line(i) for i in range(written, written + batch)))
            written += batch
            if caught_up:  # the sidecar has read everything before the copy (always so for a copy elsewhere:
                run.counted(written)  # it can't give back unread lines)
            target = logs / f"app.jsonl.{n}" if copy_inside_globs else tmp_path / f"archived.{n}"
            shutil.copyfile(app, target)  # copytruncate: copy, then truncate in place
            os.truncate(app, 0)
        writer.write(b"".join(record_line(i) for i in range(written, written + 40)))
        written += 40
        writer.close()
        seen = run.counted(written, requests_only=not caught_up)
    finally:
        run.stop()
    assert seen["requests"] == written and seen["records_rejected"] == 0
    if caught_up:
        assert seen["duplicates"] == 0
    # Racing (several copy+truncate+regrow rounds between two polls) a copy can be read again (the
    # known window in jsonl_tail's docstring): the ledger counts those lines as duplicates, never as
    # requests, which is the exactly-once promise for the counters.


def test_same_request_id_in_one_file_across_files_and_in_a_replayed_file(tmp_path: Path, logs: Path) -> None:
    run = Running(tmp_path, "*.jsonl")
    try:
        a, b = logs / "a.jsonl", logs / "b.jsonl"
        _append(a, [record_line(i) for i in range(40)] + [record_line(5), record_line(6)])  # in one file
        _append(b, [record_line(i) for i in range(100, 130)] + [record_line(7), record_line(8, tokens_after=1)])
        seen = run.counted(42 + 32)
        assert seen == {"requests": 70, "duplicates": 4, "records_rejected": 0}
        shutil.copyfile(a, logs / "a-copy.jsonl")  # an exact copy of a followed file: never read
        # a re-export of old records, in a new order, as another file: every line a duplicate
        lines = [record_line(i) for i in [*range(10, 40), *range(100, 110)]]
        random.Random(3).shuffle(lines)
        _append(logs / "replayed.jsonl", [record_line(500), *lines])  # a new first line: not a copy
        seen = run.counted(42 + 32 + 41)
        parsed = samples(scrape(run.sidecar.port))
    finally:
        run.stop()
    assert seen == {"requests": 71, "duplicates": 4 + 40, "records_rejected": 0}
    # the first occurrence won: record 8's duplicate (tokens_after=1) changed nothing
    by_model_saved = total(parsed, "llm_savings_tokens_saved_total")
    expected_saved = sum(1000 + i % 17 - 600 for i in [*range(40), *range(100, 130), 500])
    assert by_model_saved == expected_saved


def test_rotation_while_stopped_is_resumed_exactly(tmp_path: Path, logs: Path) -> None:
    app = logs / "app.jsonl"
    run = Running(tmp_path, "app.jsonl*")
    try:
        _append(app, [record_line(i) for i in range(60)])
        run.counted(60)
    finally:
        run.stop()
    # while it is down: more lines, a rotation, lines in the new file
    _append(app, [record_line(i) for i in range(60, 90)])
    os.rename(app, logs / "app.jsonl.1")
    _append(app, [record_line(i) for i in range(90, 120)])
    again = Running(tmp_path, "app.jsonl*")
    try:
        seen = again.counted(120)
    finally:
        again.stop()
    assert seen == {"requests": 120, "duplicates": 0, "records_rejected": 0}
