"""Tailer throughput benchmark (not collected by pytest: run it by hand).

    python tests/bench/bench_tail.py [--seconds 10] [--rate 60000] [--rotate-every 3]

Phase 1 (burst): a pre-written file of --burst-lines lines is tailed as fast as
possible with ``poll_batches`` (what the sidecar reads); prints lines/s.
Phase 2 (follow): a writer *process* appends --rate lines/s of ~300-byte
gateway records in 10 ms batches and rotates (rename app.log -> app.log.N)
every --rotate-every seconds, for --seconds; the tailer follows with
poll()/wait() like the sidecar. Prints the lines/s kept up with, the worst lag
in bytes, the catch-up time after the writer stops, and checks that every
line arrived exactly once.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from exporter.sources.tail import Tailer

_TEMPLATE = (
    '{{"ts":"2026-11-30T05:00:00.{i:06d}Z","request_id":"req-{i:010d}","model":"claude-sonnet-4-5",'
    '"provider":"anthropic","tenant":"team-{t}","tokens_before":{b},"tokens_after":{a},'
    '"count_method":"provider","usage":{{"input_tokens":{a},"cache_read_input_tokens":{c},'
    '"cache_creation_input_tokens":0,"output_tokens":{o}}}}}\n'
)


def record(i: int) -> bytes:
    return _TEMPLATE.format(i=i % 1_000_000, t=i % 7, b=4000 + i % 500, a=2500, c=i % 900, o=321).encode()


def writer(directory: str, seconds: float, rate: int, rotate_every: float, done: mp.Queue) -> None:  # type: ignore[type-arg]
    path = os.path.join(directory, "app.log")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    start = time.monotonic()
    next_rotate = start + rotate_every
    gen = 0
    i = 0
    per_batch = max(1, rate // 100)
    while True:
        now = time.monotonic()
        if now - start >= seconds:
            break
        if now >= next_rotate:
            gen += 1
            os.rename(path, f"{path}.{gen}")
            os.close(fd)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            next_rotate += rotate_every
        os.write(fd, b"".join(record(j) for j in range(i, i + per_batch)))
        i += per_batch
        target = start + i / rate
        delay = target - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    os.close(fd)
    done.put((i, gen, time.monotonic() - start))


def burst(directory: Path, n: int) -> float:
    path = directory / "burst.log"
    with open(path, "wb") as f:
        for k in range(0, n, 10_000):
            f.write(b"".join(record(j) for j in range(k, min(n, k + 10_000))))
    t = Tailer([str(path)], use_watchdog=False)
    got = 0
    started = time.perf_counter()
    while got < n:
        got += sum(len(batch.lines) for batch in t.poll_batches())
    elapsed = time.perf_counter() - started
    t.close()
    assert got == n, got
    return n / elapsed


def follow(directory: Path, seconds: float, rate: int, rotate_every: float) -> None:
    done: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    proc = mp.Process(target=writer, args=(str(directory), seconds, rate, rotate_every, done))
    (directory / "app.log").touch()
    tailer = Tailer([str(directory / "app.log*")], use_watchdog=True, poll_interval=0.05)
    proc.start()
    started = time.monotonic()
    got = 0
    max_lag = 0
    total: int | None = None
    writer_stopped_at = 0.0
    last_id = -1
    order_ok = True
    while total is None or got < total:
        batches = tailer.poll_batches()  # what the sidecar reads: the lines of each read at once
        events = [line for batch in batches for line in batch.lines]
        got += len(events)
        for line in events[:: max(1, len(events) // 4) or 1]:  # spot-check ordering cheaply
            rid = int(line[line.index(b"req-") + 4 : line.index(b"req-") + 14])
            order_ok &= rid > last_id
            last_id = rid
        max_lag = max(max_lag, tailer.stats().bytes_behind)
        if total is None and not done.empty():
            total, gens, _ = done.get()
            writer_stopped_at = time.monotonic()
        if not events:
            tailer.wait(0.05)
        if time.monotonic() - started > seconds + 60:
            break
    caught_up = time.monotonic() - writer_stopped_at
    proc.join()
    st = tailer.stats()
    tailer.close()
    elapsed = writer_stopped_at - started
    print(f"follow: writer {total} lines in {elapsed:.1f}s ({(total or 0) / elapsed:,.0f} lines/s), {gens} rotations")
    print(f"        tailer got {got} lines (exactly once: {got == total}, in order: {order_ok})")
    print(f"        worst lag {max_lag:,} bytes, caught up {caught_up * 1000:.0f} ms after the writer stopped")
    print(f"        rotations seen {st.rotations}, bytes read {st.bytes_read:,}")
    if got != total or caught_up > 2.0:
        print("FAILED to keep up")
        sys.exit(1)
    achieved = (total or 0) / elapsed
    print(f"KEPT UP with {achieved:,.0f} lines/s")
    if achieved < 0.95 * rate:
        print(f"note: the writer reached only {achieved:,.0f} of the {rate:,} lines/s asked (CPU busy?)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=int, default=60_000)
    ap.add_argument("--rotate-every", type=float, default=3.0)
    ap.add_argument("--burst-lines", type=int, default=500_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        rate = burst(Path(d), args.burst_lines)
        print(f"burst:  {rate:,.0f} lines/s ({args.burst_lines} lines of ~{len(record(1))} bytes)")
    with tempfile.TemporaryDirectory() as d:
        follow(Path(d), args.seconds, args.rate, args.rotate_every)


if __name__ == "__main__":
    main()
