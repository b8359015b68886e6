"""Helpers for the end-to-end sidecar tests: scrape, parse, poll, replay.

Shared by test_sidecar_crash/months/badinput/rotation and test_exposition_golden.
Values are read back through prometheus_client's own parsers, so what the tests
compare is what a scraper sees, not our renderer's idea of it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as om_families,
)
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
OPENMETRICS_ACCEPT = "application/openmetrics-text; version=1.0.0; charset=utf-8"
T = TypeVar("T")
PORT_LINE = re.compile(rb"serving /metrics on \S+ \(port (\d+)\)")
Samples = dict[tuple[tuple[str, str], ...], float]


def poll(check: Callable[[], T | None], timeout: float, what: str, interval: float = 0.02) -> T:
    """Call ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)  # pacing between checks, not a wait for the event itself


def scrape(port: int, openmetrics: bool = False, timeout: float = 10.0) -> str:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics")
    if openmetrics:
        request.add_header("Accept", OPENMETRICS_ACCEPT)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        body: bytes = response.read()
    return body.decode("utf-8")


def samples(text: str, openmetrics: bool = False) -> dict[str, Samples]:
    """Sample name -> {sorted label pairs -> value}, via prometheus_client's parsers."""
    out: dict[str, Samples] = {}
    parse = om_families if openmetrics else text_string_to_metric_families
    for family in parse(text):
        for sample in family.samples:
            key = tuple(sorted(sample.labels.items()))
            table = out.setdefault(sample.name, {})
            assert key not in table, f"duplicate series {sample.name}{dict(key)}"
            table[key] = float(sample.value)
    return out


def total(parsed: dict[str, Samples], name: str, **match: str) -> float:
    """Sum of a sample's values over the series whose labels include ``match``."""
    found = 0.0
    for key, value in parsed.get(name, {}).items():
        labels = dict(key)
        if all(labels.get(k) == v for k, v in match.items()):
            found += value
    return found


def by_label(parsed: dict[str, Samples], name: str, label: str) -> dict[str, float]:
    """Sum of a sample's values grouped by one label."""
    out: dict[str, float] = {}
    for key, value in parsed.get(name, {}).items():
        group = dict(key).get(label, "")
        out[group] = out.get(group, 0.0) + value
    return out


def replay_json(files: list[Path], *extra: str) -> dict[str, Any]:
    """``python -m exporter replay FILES --json`` (the real CLI, a subprocess)."""
    result = subprocess.run(
        [sys.executable, "-m", "exporter", "replay", *map(str, files), "--json", *extra],
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def vm_rss_kib(pid: int | str = "self") -> int:
    """Resident set size of a process (Linux /proc), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc status")


def vm_hwm_kib(pid: int | str = "self") -> int:
    """Peak resident set size of a process (Linux /proc), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc status")


class Process:
    """One `python -m exporter run` subprocess; stderr goes to a file we read for the port."""

    def __init__(self, config: Path, stderr: Path, *args: str) -> None:
        self.stderr_path = stderr
        self.stderr = open(stderr, "wb")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "exporter", "run", "--config", str(config), *args],
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )

    def port(self, timeout: float = 30.0) -> int:
        def found() -> int | None:
            if self.proc.poll() is not None:
                raise AssertionError(f"sidecar exited {self.proc.returncode}: {self.log()}")
            match = PORT_LINE.search(self.stderr_path.read_bytes())
            return int(match.group(1)) if match else None

        return poll(found, timeout, "the sidecar's listening port")

    def log(self) -> str:
        return self.stderr_path.read_bytes().decode(errors="replace")[-4000:]

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.wait()

    def wait(self, timeout: float = 30.0) -> int:
        code = self.proc.wait(timeout)
        self.stderr.close()
        return code
