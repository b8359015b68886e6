"""Soak of tailing: rename rotation every few seconds, a restart every minute, counters equal the oracle.

    python tests/soak/soak_tail.py --minutes 10 [--rotate-seconds 3 --restart-seconds 60 --rate 400]

Loopback only, stops by itself. A writer thread appends gateway records to
``logs/app.jsonl`` at ``--rate`` lines/s (about 5% byte-identical resends of
earlier records, as a retrying gateway does) and renames the file to
``app.jsonl.N`` every ``--rotate-seconds``; the sidecar tails ``app.jsonl*``.
Every ``--restart-seconds`` the running ``python -m exporter run`` is stopped —
SIGTERM, and every third time (the second, fifth...) kill -9 — and started again. RSS of the running
sidecar is sampled every 10 s and printed. At the end the writer stops, the
last sidecar catches up, and its counters must equal the oracle:
``llm_savings_requests_total`` = unique request ids written,
``llm_savings_duplicates_total`` = resends (exit status 1 otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.soak.common import SidecarProcess, scrape


class Writer(threading.Thread):
    """Writes at a steady rate, rotating by rename; remembers what it wrote (the oracle)."""

    def __init__(self, logs: Path, rate: float, rotate_seconds: float, seed: int) -> None:
        super().__init__(name="writer", daemon=True)
        self.logs, self.rate, self.rotate_seconds = logs, rate, rotate_seconds
        self.rng = random.Random(seed)
        self.unique: list[bytes] = []
        self.duplicates = 0
        self.rotations = 0
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def line(self, i: int, fresh_file: bool) -> bytes:
        if not fresh_file and self.unique and self.rng.random() < 0.05:
            self.duplicates += 1  # a file never starts with a resend: see jsonl_tail's "shared headers"
            return self.unique[self.rng.randrange(max(0, len(self.unique) - 5000), len(self.unique))]
        obj = {"ts": time.time(), "request_id": f"soak-{i}", "model": ("gpt-4o", "claude-sonnet-4-5")[i % 2],
               "tenant": f"team-{i % 5}", "tokens_before": 1000 + i % 100, "tokens_after": 700,
               "count_method": "tiktoken:o200k_base",
               "usage": {"prompt_tokens": 720, "completion_tokens": 30,
                         "prompt_tokens_details": {"cached_tokens": 200}}}
        line = json.dumps(obj).encode() + b"\n"
        self.unique.append(line)
        return line

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # surfaced by the caller
            self.error = exc

    def _run(self) -> None:
        current = self.logs / "app.jsonl"
        out = open(current, "ab")  # noqa: SIM115 - reopened at each rotation
        fresh, i = True, 0
        started = last_rotation = time.monotonic()
        while not self.stop.is_set():
            due = int((time.monotonic() - started) * self.rate) - i
            lines = []
            for _ in range(max(0, due)):
                lines.append(self.line(i, fresh))
                fresh = False
                i += 1
            if lines:
                out.write(b"".join(lines))
                out.flush()
            if time.monotonic() - last_rotation >= self.rotate_seconds:
                out.close()
                self.rotations += 1
                os.rename(current, self.logs / f"app.jsonl.{self.rotations}")
                out = open(current, "ab")  # noqa: SIM115
                fresh, last_rotation = True, time.monotonic()
            self.stop.wait(0.02)  # the writer's pace
        out.close()


def run(minutes: float, rotate_seconds: float = 3.0, restart_seconds: float = 60.0, rate: float = 400.0,
        seed: int = 20261130, workdir: Path | None = None, log: bool = True) -> dict[str, object]:
    work = workdir or Path(tempfile.mkdtemp(prefix="soak-tail-"))
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    config = work / "config.yaml"
    config.write_text(f'listen: "127.0.0.1:0"\nstate_dir: {work / "state"}\ncheckpoint_interval_seconds: 1\n'
                      f'sources:\n  - name: gw\n    paths: ["{logs}/app.jsonl*"]\n    watch: true\n'
                      "    poll_interval_seconds: 0.2\n")
    writer = Writer(logs, rate, rotate_seconds, seed)
    rss: list[tuple[float, int]] = []
    restarts: list[str] = []
    generation = 0
    sidecar = SidecarProcess(config, work / f"stderr-{generation}.log")
    sidecar.metrics_port()
    writer.start()
    started = time.monotonic()
    end = started + minutes * 60
    next_restart, next_sample = started + restart_seconds, started
    try:
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_sample:
                rss.append((round(now - started, 1), sidecar.rss_kib()))
                if log:
                    print(f"t={rss[-1][0]:7.1f}s rss={rss[-1][1]} KiB lines={len(writer.unique)}", flush=True)
                next_sample = now + 10
            if now >= next_restart and now + 5 < end:
                kill = len(restarts) % 3 == 1  # SIGTERM, kill -9, SIGTERM, SIGTERM, kill -9, ...
                code = sidecar.stop(kill=kill)
                restarts.append(f"{'SIGKILL' if kill else 'SIGTERM'}->{code}")
                generation += 1
                sidecar = SidecarProcess(config, work / f"stderr-{generation}.log")
                sidecar.metrics_port()
                next_restart = time.monotonic() + restart_seconds
            time.sleep(0.1)  # the soak's own pace
        writer.stop.set()
        writer.join(30)
        if writer.error is not None:
            raise writer.error
        expected_requests, expected_duplicates = len(writer.unique), writer.duplicates
        port = sidecar.metrics_port()
        deadline = time.monotonic() + 120
        counted = duplicates = -1.0
        while time.monotonic() < deadline:
            sums, _ = scrape(port)
            counted = sums.get("llm_savings_requests_total", 0.0)
            duplicates = sums.get("llm_savings_duplicates_total", 0.0)
            if (counted >= expected_requests and duplicates >= expected_duplicates
                    and sums.get("llm_savings_source_bytes_behind", 1.0) == 0):
                break
            time.sleep(0.2)  # pacing while the last sidecar catches up
        rss.append((round(time.monotonic() - started, 1), sidecar.rss_kib()))
        final_code = sidecar.stop()
    except BaseException:
        writer.stop.set()
        if sidecar.proc.poll() is None:
            sidecar.stop(kill=True)
        raise
    ok = (counted == expected_requests and duplicates == expected_duplicates and final_code == 0
          and all(r.startswith("SIGKILL") or r.endswith("->0") for r in restarts))
    return {"minutes": minutes, "lines_written": expected_requests + expected_duplicates,
            "unique_ids": expected_requests, "requests_counted": int(counted),
            "resends": expected_duplicates, "duplicates_counted": int(duplicates),
            "rotations": writer.rotations, "restarts": restarts, "rss_kib_samples": rss, "ok": ok}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rotate-seconds", type=float, default=3.0)
    parser.add_argument("--restart-seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=400.0, help="lines per second")
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args(argv)
    figures = run(args.minutes, args.rotate_seconds, args.restart_seconds, args.rate, args.seed)
    for key, value in figures.items():
        print(f"{key:20} {value}")
    return 0 if figures["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
