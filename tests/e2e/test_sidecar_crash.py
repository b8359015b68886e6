"""kill -9 the real sidecar over and over; every request id is still counted exactly once.

The real ``python -m exporter run --config FILE`` runs as a subprocess with a
checkpoint every 0.05 s while a writer thread appends a seeded stream of lines
(fresh records, byte-identical duplicates of earlier ones, a few invalid lines;
some lines written in two halves; rotation by rename to ``app.jsonl.N`` now and
then). The sidecar is killed with SIGKILL at seeded points and restarted each
time: right after start, at random instants, while a checkpoint's temporary
file is being written (a 60k-id backlog makes the ledger, hence each
checkpoint, big), and right after a new generation lands. At the end a last
sidecar catches up and is stopped with SIGTERM, and

* the counters on ``/metrics`` (parsed by prometheus_client),
* the month totals restored from its final checkpoint (``Sidecar.summary()``
  and ``month_totals()``), and
* ``replay --json`` over the same files

all equal the oracle: unique request ids counted once, each re-sent line one
duplicate, each invalid line one rejection. Takes ~35-55 s; other kill points:
``LLM_SAVINGS_CRASH_SEED=<n> pytest tests/e2e/test_sidecar_crash.py``; copytruncate instead of
rename (the copy inside the globs): ``LLM_SAVINGS_CRASH_ROTATE=copytruncate``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from exporter.sidecar.config import load_config
from exporter.sidecar.sidecar import Sidecar
from tests.support.processes import Process, by_label, poll, replay_json, samples, scrape, total
from tests.support.sidecar import record_line

SEED = int(os.environ.get("LLM_SAVINGS_CRASH_SEED", "20261130"))  # vary it to explore other kill points
BACKLOG = 60_000  # unique ids already in the log at the first start: a big ledger, slow checkpoints
LIVE_LINES = 12_000  # lines the writer appends while the sidecar is being killed
# rename (default) or copytruncate (the copy inside the globs): LLM_SAVINGS_CRASH_ROTATE
ROTATE = os.environ.get("LLM_SAVINGS_CRASH_ROTATE", "rename")
KILLS = 20  # plus the first one, inside the backlog
pytestmark = pytest.mark.slow


@dataclass
class Oracle:
    """What the counters must say: built from what was written, by request id."""

    first: dict[str, bytes] = field(default_factory=dict)
    unique: list[bytes] = field(default_factory=list)  # first occurrences, in write order
    duplicates: int = 0
    rejected: int = 0
    lines: list[bytes] = field(default_factory=list)

    def add(self, line: bytes) -> None:
        self.lines.append(line)
        try:
            obj = json.loads(line)
        except ValueError:
            self.rejected += 1
            return
        if obj["request_id"] in self.first:
            self.duplicates += 1
        else:
            self.first[obj["request_id"]] = line
            self.unique.append(line)

    @property
    def requests(self) -> int:
        return len(self.first)

    def tokens_saved(self) -> int:
        saved = 0
        for line in self.first.values():
            obj = json.loads(line)
            saved += max(0, obj["tokens_before"] - obj["tokens_after"])
        return saved

    def by_model(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for line in self.first.values():
            model = json.loads(line)["model"]
            out[model] = out.get(model, 0) + 1
        return out


class Writer(threading.Thread):
    """Appends the seeded stream to logs/app.jsonl, rotating by rename now and then."""

    def __init__(self, logs: Path, oracle: Oracle, rng: random.Random, ts: float) -> None:
        super().__init__(name="writer", daemon=True)
        self.logs = logs
        self.oracle = oracle
        self.rng = rng
        self.ts = ts
        self.rotations = 0
        self.took = 0.0
        self.error: BaseException | None = None
        self.done = threading.Event()

    def plan(self) -> Iterator[bytes]:
        rng = self.rng
        for i in range(BACKLOG, BACKLOG + LIVE_LINES):
            roll = rng.random()
            unique = self.oracle.unique
            if roll < 0.06:  # the same request sent again (a gateway retry), byte for byte
                yield unique[rng.randrange(max(0, len(unique) - 2000), len(unique))]
            elif roll < 0.08:  # an old one replayed from the backlog
                yield unique[rng.randrange(0, 2000)]
            elif roll < 0.09:
                yield b'{"ts": %d, "request_id": "bad-%d", "model": ' % (int(self.ts), i) + b"\n"
            else:
                yield record_line(i, ts=self.ts + i % 600)

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # surfaced by the test
            self.error = exc
        finally:
            self.done.set()

    def _run(self) -> None:
        begun = time.monotonic()
        rng = self.rng
        current = self.logs / "app.jsonl"
        out = open(current, "ab")  # noqa: SIM115 - reopened on every rotation
        fresh_file = True
        since_rotation = 0
        pending: list[bytes] = []
        batch = rng.randint(1, 120)
        for line in self.plan():
            if fresh_file and (b"bad-" in line or json.loads(line)["request_id"] in self.oracle.first):
                # a file starts with a fresh record: a duplicate as a file's first line
                # would share its head with the original's file (the tailer's documented
                # "shared headers" limit: such a file is taken for a copy)
                continue
            fresh_file = False
            self.oracle.add(line)
            pending.append(line)
            since_rotation += 1
            if len(pending) >= batch:
                data = b"".join(pending)
                pending.clear()
                batch = rng.randint(1, 120)
                if rng.random() < 0.3:  # a line arrives in two writes
                    cut = rng.randint(1, len(data) - 1)
                    out.write(data[:cut])
                    out.flush()
                    out.write(data[cut:])
                else:
                    out.write(data)
                out.flush()
                time.sleep(rng.uniform(0.0, 0.2))  # the writer's pace (spans the kills), not a wait for an event
                if since_rotation > rng.randint(800, 2500):
                    out.close()
                    self.rotations += 1
                    rotated = self.logs / f"app.jsonl.{self.rotations}"
                    if ROTATE == "copytruncate":
                        shutil.copyfile(current, rotated)
                        os.truncate(current, 0)
                    else:
                        os.rename(current, rotated)
                    out = open(current, "ab")  # noqa: SIM115
                    fresh_file = True
                    since_rotation = 0
        out.write(b"".join(pending))
        out.close()
        self.took = time.monotonic() - begun


def _generations(state: Path) -> tuple[int, bool]:
    """Newest committed generation number, and whether a checkpoint is being written."""
    newest = 0
    writing = False
    try:
        names = os.listdir(state)
    except FileNotFoundError:
        return 0, False
    for name in names:
        if name.endswith(".tmp"):
            writing = True
        elif name.startswith("checkpoint-"):
            newest = max(newest, int(name[len("checkpoint-"):-len(".ckpt")]))
    return newest, writing


def _kill_at(proc: Process, state: Path, how: str, rng: random.Random) -> str:
    """Choose the kill instant for ``how``; returns what actually happened (for the report)."""
    if how == "startup":
        time.sleep(rng.uniform(0.0, 0.6))  # a random kill instant, maybe before the port is bound
        proc.kill9()
        return how
    proc.port()
    if how == "random":
        time.sleep(rng.uniform(0.0, 0.8))  # a random kill instant while it runs
    elif how in ("during_checkpoint", "after_checkpoint"):
        before, _ = _generations(state)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:  # a busy poll: the .tmp file lives for milliseconds
            newest, writing = _generations(state)
            if how == "during_checkpoint" and writing:
                break
            if how == "after_checkpoint" and newest > before:
                break
        else:
            how += "(missed)"
    proc.kill9()
    return how


def test_kill_nine_at_many_points_counts_every_request_once(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    logs, state = tmp_path / "logs", tmp_path / "state"
    logs.mkdir()
    ts = time.time() - 7200  # this month (month_retention uses the real clock in the subprocess)
    oracle = Oracle()
    with open(logs / "app.jsonl.0", "wb") as f:
        for i in range(BACKLOG):
            line = record_line(i, ts=ts + i % 600)
            oracle.add(line)
            f.write(line)
    config = tmp_path / "config.yaml"
    config.write_text(
        "schema: llm-savings-config/v1\n"
        'listen: "127.0.0.1:0"\n'
        f"state_dir: {state}\n"
        "checkpoint_interval_seconds: 0.05\n"
        "log_level: INFO\n"
        "sources:\n"
        "  - name: gw\n"
        f'    paths: ["{logs}/app.jsonl*"]\n'
        "    watch: false\n"
        "    poll_interval_seconds: 0.05\n"
    )
    writer = Writer(logs, oracle, random.Random(SEED + 1), ts)
    plan = ["startup", "random", "during_checkpoint", "after_checkpoint"] * (KILLS // 4)
    rng.shuffle(plan)
    plan = ["during_checkpoint", *plan]  # the first kill lands inside the backlog's checkpoints
    done: list[str] = []
    torn = 0
    started = time.monotonic()
    for n, how in enumerate(plan):
        if n == 1:
            writer.start()
        proc = Process(config, tmp_path / f"stderr-{n}.log")
        done.append(_kill_at(proc, state, how, rng))
        assert proc.proc.returncode == -signal.SIGKILL, proc.log()
        torn += int(_generations(state)[1])  # a half-written .tmp left behind: killed mid-write
    writer.join(60)
    writer_took = writer.took
    assert writer.done.is_set() and writer.error is None, writer.error
    assert writer.rotations >= 3
    assert writer_took > 5  # the writer really ran alongside the kills
    assert sum(not h.endswith("(missed)") for h in done if "checkpoint" in h) >= 8, done
    assert torn >= 1, "no kill landed inside a checkpoint write"
    print("kills:", done, "torn:", torn)

    final = Process(config, tmp_path / "stderr-final.log")
    try:
        port = final.port()
        expected_lines = oracle.requests + oracle.duplicates + oracle.rejected

        def caught_up() -> dict[str, dict[tuple[tuple[str, str], ...], float]] | None:
            parsed = samples(scrape(port))
            seen = (total(parsed, "llm_savings_requests_total")
                    + total(parsed, "llm_savings_duplicates_total")
                    + total(parsed, "llm_savings_records_rejected_total"))
            assert seen <= expected_lines, f"counted {seen} lines, only {expected_lines} written"
            if seen == expected_lines and total(parsed, "llm_savings_source_bytes_behind") == 0:
                return parsed
            return None

        parsed = poll(caught_up, 60, "the last sidecar to catch up", interval=0.1)
        final.proc.send_signal(signal.SIGTERM)
        assert final.wait() == 0, final.log()
    finally:
        if final.proc.poll() is None:
            final.kill9()

    # /metrics: exactly the oracle
    assert total(parsed, "llm_savings_requests_total") == oracle.requests
    assert total(parsed, "llm_savings_duplicates_total") == oracle.duplicates
    assert total(parsed, "llm_savings_records_rejected_total") == oracle.rejected
    assert by_label(parsed, "llm_savings_records_rejected_total", "reason") == {
        "invalid_json": oracle.rejected}
    assert total(parsed, "llm_savings_tokens_saved_total") == oracle.tokens_saved()
    assert by_label(parsed, "llm_savings_requests_total", "model") == {
        m: float(c) for m, c in oracle.by_model().items()}

    # replay --json over the same files: the same totals
    files = sorted(logs.iterdir(), key=lambda p: (p.name == "app.jsonl", int(p.suffix[1:] or 0)
                                                    if p.suffix[1:].isdigit() else 0))
    replayed = replay_json(files)["months"]
    assert sum(m["requests"] for m in replayed.values()) == oracle.requests
    assert sum(m["duplicates"] for m in replayed.values()) == oracle.duplicates
    assert sum(m["rejected"] for m in replayed.values()) == oracle.rejected

    # the final checkpoint restores exactly those totals (summary() is the current month's)
    restored = Sidecar(load_config(config))
    try:
        with restored.pipeline.lock:
            months = restored.pipeline.aggregates.month_totals()
        summary = restored.summary()
    finally:
        for runner in restored.sources:
            runner.tailer.close()
        restored.server.stop()
    assert months == replayed
    assert {k: v for k, v in summary.items() if k != "month"} == months.get(summary["month"], {}) \
        or summary["month"] not in months
    usd = total(parsed, "llm_savings_usd_saved_total")
    assert usd == pytest.approx(sum(m["usd_saved"] for m in replayed.values()), rel=1e-12)
    spend = total(parsed, "llm_savings_spend_usd_total")
    assert spend == pytest.approx(sum(m["spend_usd"] for m in replayed.values()), rel=1e-12)
    assert time.monotonic() - started < 120
