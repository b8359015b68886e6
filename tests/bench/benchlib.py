"""Shared helpers of the benchmark suite: result rows, process timing, RSS, machine facts.

Why alternating whole-process runs: the machine is shared (other test runs
load both cores), so a figure on its own is noise; two figures measured in
the same script, alternately, are each hit by the same noise and their ratio
is what we report.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@dataclass
class Row:
    """One line of the final table."""

    figure: str
    ours: str
    peer: str
    ratio: str
    target: str
    met: str  # "yes" | "NO (...)" | "skipped (...)" | "n/a"
    notes: list[str] = field(default_factory=list)


def verdict(ok: bool, miss: str = "") -> str:
    return "yes" if ok else f"NO{f' ({miss})' if miss else ''}"


@dataclass
class ProcessTiming:
    wall: float
    cpu: float  # user + sys of the child (and its children), from wait4's rusage
    max_rss_kb: int
    stdout: bytes


def run_timed(cmd: list[str], env: dict[str, str] | None = None) -> ProcessTiming:
    """Run ``cmd`` to completion; wall clock and the child's own CPU and peak RSS."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]}... exited {proc.returncode}")
    return ProcessTiming(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, out)


def alternate(cmds: dict[str, list[str]], rounds: int) -> dict[str, list[ProcessTiming]]:
    """Run every command ``rounds`` times, rotating which goes first each round."""
    names = list(cmds)
    results: dict[str, list[ProcessTiming]] = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            timing = run_timed(cmds[name])
            results[name].append(timing)
            print(f"    round {r + 1} {name:<10} wall {timing.wall:7.2f}s  cpu {timing.cpu:7.2f}s", flush=True)
    return results


def median_wall(timings: list[ProcessTiming]) -> float:
    return statistics.median(t.wall for t in timings)


def median_cpu(timings: list[ProcessTiming]) -> float:
    return statistics.median(t.cpu for t in timings)


def rss_mb() -> float:
    """This process's resident set (VmRSS) in MB (10^6 bytes)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / 1e6
    raise RuntimeError("no VmRSS in /proc/self/status")


def machine() -> dict[str, str]:
    """nproc, CPU model, load average, Python: what the figures were measured on."""
    model = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return {
        "nproc": str(os.cpu_count()),
        "cpu": model,
        "load": load,
        "python": platform.python_version(),
        "kernel": platform.release(),
    }
