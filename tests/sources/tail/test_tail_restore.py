"""Crash anywhere: restore a checkpoint taken at random points into a new tailer.

A single-threaded simulation (deterministic per seed) mixes appends split at
random bytes, rename rotations, copytruncates (copy inside the globs),
polls with random budgets, checkpoints and crashes. After every restart the
totals must be exact: every id written so far consumed exactly once.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from exporter.sources.tail import STATE_SCHEMA, Tailer
from tests.support.tail import Oracle, copytruncate, expect_ids, lines


class Sim:
    def __init__(self, directory: Path, rng: random.Random) -> None:
        self.dir = directory
        self.rng = rng
        self.path = directory / "app.log"
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.next_id = 0
        self.pending = b""  # bytes of the line being written, not yet flushed
        self.generation = 0

    def write(self) -> None:
        if not self.pending:
            n = self.rng.randint(1, 30)
            self.pending = lines(range(self.next_id, self.next_id + n), self.rng.randint(0, 80))
            if self.rng.random() < 0.2:
                self.pending = self.pending.replace(b"\n", b"\r\n")
            self.next_id += n
        cut = self.rng.randint(1, len(self.pending))
        os.write(self.fd, self.pending[:cut])
        self.pending = self.pending[cut:]

    def finish_line(self) -> None:
        while self.pending:
            self.write()

    def rotate(self) -> None:
        self.finish_line()
        self.generation += 1
        os.rename(self.path, self.dir / f"app.log.{self.generation}")
        os.close(self.fd)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def copytruncate(self) -> None:
        self.finish_line()
        self.generation += 1
        copytruncate(self.path, self.dir / f"app.log.{self.generation}")

    def written_ids(self) -> range:
        """Ids whose line is complete on disk."""
        return range(self.next_id - self.pending.count(b"\n"))

    def close(self) -> None:
        os.close(self.fd)


@pytest.mark.parametrize("seed", range(8))
def test_restore_at_random_points_exact_totals(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    sim = Sim(tmp_path, rng)
    oracle = Oracle(
        [str(tmp_path / "app.log*")],
        use_watchdog=False,
        fingerprint_bytes=rng.choice([64, 256]),
        max_line_bytes=4096,
        copy_settle=0.0,
    )
    crashes = 0
    for _step in range(400):
        r = rng.random()
        if r < 0.55:
            sim.write()
        elif r < 0.58:
            sim.rotate()
        elif r < 0.60:
            sim.copytruncate()
        elif r < 0.85:
            oracle.poll(max_lines=rng.choice([None, None, 1, 3, 50]))
        elif r < 0.95:
            oracle.checkpoint()
        else:
            oracle.crash()
            crashes += 1
            oracle.drain()
            oracle.assert_exactly(expect_ids(sim.written_ids()))
    sim.finish_line()
    oracle.drain()
    oracle.assert_exactly(expect_ids(range(sim.next_id)))
    assert crashes > 0
    sim.close()
    oracle.close()


def test_state_is_json_and_restore_validates(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_bytes(lines(range(3)))
    with Tailer([str(log)], use_watchdog=False) as t:
        t.poll()
        state = t.state()
        assert json.loads(json.dumps(state)) == state
        assert state["schema"] == STATE_SCHEMA
        assert b"request_id" not in json.dumps(state).encode()  # hashes, never content
        with pytest.raises(RuntimeError):
            t.restore(state)  # only on a new tailer
    with Tailer([str(log)], use_watchdog=False) as t2, pytest.raises(ValueError):
        t2.restore({"schema": "something else"})
    with Tailer([str(log)], use_watchdog=False) as t3, pytest.raises(ValueError):
        t3.restore({"schema": STATE_SCHEMA, "files": [{"path": "x"}], "retired": []})
