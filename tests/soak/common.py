"""The real sidecar as a subprocess for the soak and load runs (loopback only, stopped by the caller)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
METRICS_PORT = re.compile(rb"serving /metrics on \S+ \(port (\d+)\)")
OTLP_PORT = re.compile(rb"OTLP/HTTP receiver listening on http://127\.0\.0\.1:(\d+)")


class SidecarProcess:
    """``python -m exporter run --config FILE``; stderr goes to a file we read the ports from."""

    def __init__(self, config: Path, stderr: Path) -> None:
        self.stderr_path = stderr
        self._stderr = open(stderr, "wb")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen([sys.executable, "-m", "exporter", "run", "--config", str(config)],
                                     stdout=subprocess.DEVNULL, stderr=self._stderr, cwd=ROOT,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})

    def _port(self, pattern: re.Pattern[bytes], timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sidecar exited {self.proc.returncode}: {self.log()}")
            match = pattern.search(self.stderr_path.read_bytes())
            if match:
                return int(match.group(1))
            if time.monotonic() > deadline:
                raise RuntimeError(f"no port after {timeout}s: {self.log()}")
            time.sleep(0.05)  # pacing of the check

    def metrics_port(self, timeout: float = 60.0) -> int:
        return self._port(METRICS_PORT, timeout)

    def otlp_port(self, timeout: float = 60.0) -> int:
        return self._port(OTLP_PORT, timeout)

    def log(self) -> str:
        return self.stderr_path.read_bytes().decode(errors="replace")[-3000:]

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def stop(self, kill: bool = False, timeout: float = 60.0) -> int:
        self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        return self.wait(timeout)

    def wait(self, timeout: float = 60.0) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            self._stderr.close()


def scrape(port: int, timeout: float = 10.0) -> tuple[dict[str, float], float]:
    """Sample name -> sum over its series, and how long the scrape took (seconds)."""
    started = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as response:
        text = response.read().decode()
    elapsed = time.monotonic() - started
    sums: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            sums[sample.name] = sums.get(sample.name, 0.0) + sample.value
    return sums, elapsed
