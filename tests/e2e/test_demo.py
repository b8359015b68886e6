"""`demo`: the real sidecar over simulated traffic, as a user runs it (a subprocess)."""

from __future__ import annotations

import functools
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

import pytest

from exporter.demo.demo import demo_config, render_line, render_screen, short_count, summarise
from exporter.demo.population import UNPRICED_MODEL
from exporter.demo.simulator import Simulator
from exporter.demo.writer import LOG_NAME, LogWriter, to_line
from exporter.engine.pipeline import Pipeline
from exporter.prices.table import load_price_table
from exporter.sidecar.config import config_from_dict
from exporter.sidecar.sidecar import Sidecar

ROOT = Path(__file__).resolve().parents[2]
START = 1795000000.0  # 2026-11-18T10:13:20Z
T = TypeVar("T")


def poll(check: Callable[[], T | None], timeout: float, what: str) -> T:
    """Call ``check`` until it returns something, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        threading.Event().wait(0.1)  # a poll interval, not a wait for the event itself


class Demo:
    """``python -m exporter demo`` in a subprocess, its stdout read by a thread."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "exporter", "demo", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert self.proc.stdout is not None
        self.errors: list[bytes] = []
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()
        threading.Thread(
            target=self._drain, daemon=True
        ).start()  # a full stderr pipe would block it

    def _read(self, stream: IO[bytes]) -> None:
        for raw in stream:
            self.lines.put(raw.decode())

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.errors.append(raw)

    def next_line(self, timeout: float) -> str:
        line = self.lines.get(timeout=timeout)
        self.seen.append(line)
        return line

    def metrics_url(self) -> str:
        first = self.next_line(30)
        assert first.startswith("demo: metrics on http://"), first
        return first.split()[3]

    def rest(self) -> str:
        while not self.lines.empty():
            self.seen.append(self.lines.get_nowait())
        return "".join(self.seen)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def scrape(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            body: bytes = response.read()
    except OSError:
        return None
    return body.decode()


def sample_sum(body: str, metric: str) -> float:
    total = 0.0
    for line in body.splitlines():
        if line.startswith(metric + "{") or line.startswith(metric + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


@pytest.mark.slow
def test_demo_serves_lintable_metrics_and_exits_by_itself(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (Debian package prometheus)")
    # seed 3 starts an unpriced session within the first seconds (the seed fixes the sequence)
    demo = Demo(
        "--port", "0", "--duration", "8", "--no-summary", "--dir", str(tmp_path), "--seed", "3"
    )
    try:
        url = demo.metrics_url()

        def saved_metrics() -> str | None:
            body = scrape(url)
            if (
                body is not None
                and sample_sum(body, "llm_savings_tokens_saved_total") > 0
                and f'model="{UNPRICED_MODEL}"' in body
            ):
                return body
            return None

        body = poll(saved_metrics, 20, "non-zero tokens saved and an unpriced model")
        lint = subprocess.run(
            [promtool, "check", "metrics"], input=body.encode(), capture_output=True, timeout=30
        )
        assert lint.returncode == 0, lint.stdout.decode() + lint.stderr.decode()
        assert sample_sum(body, "llm_savings_requests_total") > 0
        assert "llm_savings_unpriced_requests_total{" in body
        code = demo.proc.wait(30)
        assert code == 0, b"".join(demo.errors).decode()
    finally:
        demo.kill()
    output = demo.rest()
    assert output.rstrip().endswith("demo: stopped (final checkpoint written)")
    assert "\x1b[" not in output  # --no-summary, and never screen codes into a pipe
    assert list((tmp_path / "state").iterdir())  # the final checkpoint
    assert (tmp_path / LOG_NAME).stat().st_size > 0


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_demo_stops_cleanly_on_a_signal(tmp_path: Path, signum: signal.Signals) -> None:
    demo = Demo("--port", "0", "--dir", str(tmp_path), "--rate", "100")
    try:
        url = demo.metrics_url()
        poll(functools.partial(scrape, url), 20, "the metrics endpoint")
        # plain summary lines (stdout is a pipe), every 2 s
        line = demo.next_line(15)
        assert re.fullmatch(r"\d\d:\d\d:\d\dZ \d{4}-\d\d requests [\d,]+ · saved .*\n?", line), line
        demo.proc.send_signal(signum)
        assert demo.proc.wait(30) == 0
    finally:
        demo.kill()
    assert demo.rest().rstrip().endswith("demo: stopped (final checkpoint written)")
    assert list((tmp_path / "state").iterdir())


def test_busy_port_is_refused_with_a_message(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "exporter",
                "demo",
                "--port",
                str(port),
                "--duration",
                "1",
                "--dir",
                str(tmp_path),
            ],
            capture_output=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=60,
        )
    assert result.returncode == 2
    assert b"cannot listen" in result.stderr and b"--port 0" in result.stderr


def _pipeline(n: int = 4000) -> Pipeline:
    pipeline = Pipeline(load_price_table())
    for item in Simulator(21, START).records(n):
        pipeline.ingest_line(to_line(item).encode())
    return pipeline


def test_summary_agrees_with_the_replay_totals() -> None:
    pipeline = _pipeline()
    totals = pipeline.aggregates.month_totals()["2026-11"]
    summary = summarise(pipeline.aggregates, "2026-11")
    assert summary.requests == totals["requests"]
    assert summary.duplicates == totals["duplicates"] > 0
    assert summary.unpriced == totals["unpriced"] > 0
    assert set(summary.unpriced_models) == {UNPRICED_MODEL}
    assert summary.tokens_saved == totals["tokens_saved"] > 0
    assert summary.would_tokens == totals["would_have_saved_tokens"] > 0
    assert summary.usd_saved == pytest.approx(totals["usd_saved"])
    assert summary.would_usd == pytest.approx(totals["would_have_saved_usd"])
    assert summary.spend == pytest.approx(totals["spend_usd"])
    net = summary.cache_read_savings - summary.cache_write_premium
    assert net == pytest.approx(totals["cache_savings_usd"])
    assert summary.cache_write_premium > 0  # Anthropic writes cost more than input
    assert summary.cache_hit_rate == pytest.approx(totals["cache_hit_rate"])
    # the breakdowns partition the totals
    assert (
        sum(t for t, _ in summary.by_method.values()) == summary.tokens_saved + summary.would_tokens
    )
    assert sum(summary.by_factor_source.values()) == pytest.approx(
        summary.usd_saved + summary.would_usd
    )
    assert "provider" in summary.by_factor_source
    assert set(summary.by_factor_source) <= {"provider", "table", "default"}
    assert sum(spend for _, spend in summary.by_price_version.values()) == pytest.approx(
        summary.spend
    )
    assert (
        sum(n for n, _ in summary.by_price_version.values()) == summary.requests - summary.unpriced
    )
    # unreadable lines have no month: shown with the current one
    all_rejected = sum(pipeline.aggregates.rejected.values())
    assert sum(summary.rejected.values()) == all_rejected > 0
    assert summarise(pipeline.aggregates, "2026-10").requests == 0


def test_screen_and_line_show_the_figures() -> None:
    summary = summarise(_pipeline(1500).aggregates, "2026-11")
    screen = render_screen(
        summary, "http://127.0.0.1:9464/metrics", Path("/tmp/x/gateway.jsonl"), 50.0
    )
    assert f"{summary.tokens_saved:,}" in screen
    assert f"{summary.cache_hit_rate:.1%}" in screen
    version = load_price_table().version_at(START)
    assert version is not None
    assert "tiktoken:o200k_base" in screen and version.version in screen
    assert len(screen.splitlines()) <= 40  # one screen
    line = render_line(summary)
    assert "\n" not in line and len(line) <= 160
    assert f" 2026-11 requests {summary.requests:,} · saved {short_count(summary.tokens_saved)} tok " in line
    share = summary.usd_saved / (summary.spend + summary.usd_saved)
    assert f"(${summary.usd_saved:,.2f}, {share:.1%} off the bill) · spend ${summary.spend:,.2f}" in line
    net_cache = summary.cache_read_savings - summary.cache_write_premium
    assert f" · cache ${net_cache:,.2f}" in line


def _counted(sidecar: Sidecar) -> int:
    """Lines the sidecar has turned into a request, a duplicate or a rejection."""
    with sidecar.pipeline.lock:
        months = sidecar.pipeline.aggregates.month_totals()
    return sum(m["requests"] + m["duplicates"] + m["rejected"] for m in months.values())


def _caught_up(sidecar: Sidecar, written: int) -> bool | None:
    return True if _counted(sidecar) == written else None


def test_rotating_log_is_counted_exactly_once_by_the_sidecar(tmp_path: Path) -> None:
    """The demo's writer and the real sidecar: every line counted once across rename rotations."""
    config = config_from_dict(demo_config(tmp_path, "127.0.0.1", 0), origin="test")
    sidecar = Sidecar(config)
    now = time.time()
    writer = LogWriter(Simulator(4, now), tmp_path, rate_per_s=40, rotate_every_s=3, now=now)
    sidecar.start()
    try:
        for second in range(1, 13):
            writer.step(now + second)
            written = writer.written
            poll(functools.partial(_caught_up, sidecar, written), 20, f"{written} lines counted")
        assert writer.rotations == 4
        assert sorted(p.name for p in tmp_path.glob(f"{LOG_NAME}*")) == [LOG_NAME, f"{LOG_NAME}.1"]
        # nothing is read twice after the renames: still exactly the lines written
        stable_until = time.monotonic() + 1.5
        while time.monotonic() < stable_until:
            assert _counted(sidecar) == writer.written == 12 * 40
            threading.Event().wait(0.1)
    finally:
        writer.close()
        sidecar.stop()
