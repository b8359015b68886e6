"""`demo`: the embedded default — simulated gateway traffic, the real sidecar, a live summary.

Nothing here is a shortcut around the product: the simulator writes a JSON-lines
log the way a gateway would (``exporter.demo.simulator``), and the sidecar tails it
with the bundled price table exactly as ``run --config`` would, checkpoints
into ``<dir>/state`` and serves ``/metrics``. The summary reads the same
aggregates the counters are rendered from.

The summary is one screen redrawn every 2 s on a terminal, one plain line per
refresh otherwise (logs, CI). SIGINT and SIGTERM stop the simulator, then the
sidecar (final checkpoint); ``--duration`` stops by itself.
"""

from __future__ import annotations

import logging
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from prometheus_client import ProcessCollector

from exporter.demo.simulator import Simulator
from exporter.demo.writer import LOG_NAME
from exporter.engine.aggregate import (
    CACHE_READ,
    FRESH,
    REQUESTS,
    SAVED,
    WOULD_SAVE,
    WRITE_1H,
    WRITE_5M,
    Aggregates,
    cell_dollars,
)

REFRESH_SECONDS = 2.0
log = logging.getLogger("exporter.demo.demo")


@dataclass(frozen=True)
class DemoOptions:
    """What ``demo`` is asked for: where to serve, how fast to simulate, for how long."""

    host: str = "127.0.0.1"
    port: int = 9464
    rate: float = 50.0  # simulated requests per second, > 0
    duration: float | None = None  # seconds; None: until a signal
    directory: str | None = None  # None: a temporary directory, removed at exit
    no_summary: bool = False
    seed: int | None = None  # None: from the clock
    rotate_every: float = 300.0  # seconds between log rotations


class DemoError(Exception):
    """The demo cannot start; the message says why."""


def demo_config(directory: Path, host: str, port: int) -> dict[str, Any]:
    """The demo's sidecar config: the simulator's log, the bundled prices, state beside it."""
    return {
        "listen": f"{host}:{port}",
        "state_dir": str(directory / "state"),
        "checkpoint_interval_seconds": 5,
        "sources": [
            {
                "name": "gateway",
                "type": "jsonl",
                "paths": [str(directory / f"{LOG_NAME}*")],
                "format": "canonical",
                "poll_interval_seconds": 0.5,
            }
        ],
    }


# --- the summary ----------------------------------------------------------------------


@dataclass
class Summary:
    """Month-to-date figures of one month, with the provenance breakdowns the counters carry."""

    month: str
    requests: int = 0
    duplicates: int = 0
    unpriced: int = 0
    tokens_saved: int = 0
    usd_saved: float = 0.0
    would_tokens: int = 0
    would_usd: float = 0.0
    spend: float = 0.0
    cache_read_savings: float = 0.0
    cache_write_premium: float = 0.0
    prompt_tokens: int = 0
    cache_read_tokens: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    by_method: dict[str, list[float]] = field(default_factory=dict)  # method -> [tokens, usd]
    by_factor_source: dict[str, float] = field(default_factory=dict)  # usd saved
    by_price_version: dict[str, list[float]] = field(
        default_factory=dict
    )  # version -> [requests, spend]
    unpriced_models: dict[str, int] = field(default_factory=dict)

    @property
    def cache_hit_rate(self) -> float:
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def summarise(agg: Aggregates, month: str) -> Summary:
    """Read the aggregates (caller holds the pipeline lock) into a ``Summary`` of ``month``."""
    out = Summary(month)
    for key, cell, rates in agg.priced_cells():
        if key[0] != month:
            continue
        method = key[3]
        out.requests += cell[REQUESTS]
        out.tokens_saved += cell[SAVED]
        out.would_tokens += cell[WOULD_SAVE]
        out.cache_read_tokens += cell[CACHE_READ]
        out.prompt_tokens += cell[FRESH] + cell[CACHE_READ] + cell[WRITE_5M] + cell[WRITE_1H]
        if method:
            row = out.by_method.setdefault(method, [0, 0.0])
            row[0] += cell[SAVED] + cell[WOULD_SAVE]
        if rates is None:
            out.unpriced += cell[REQUESTS]
            out.unpriced_models[key[1]] = out.unpriced_models.get(key[1], 0) + cell[REQUESTS]
            continue
        dollars = cell_dollars(cell, rates, method)
        out.usd_saved += dollars.usd_saved
        out.would_usd += dollars.would_have_saved
        out.spend += dollars.spend
        out.cache_read_savings += dollars.cache_read_savings
        out.cache_write_premium += dollars.cache_write_premium
        if method:
            out.by_method[method][1] += dollars.usd_saved + dollars.would_have_saved
            if cell[SAVED] or cell[WOULD_SAVE]:
                source = dollars.factor_source
                out.by_factor_source[source] = out.by_factor_source.get(source, 0.0) + (
                    dollars.usd_saved + dollars.would_have_saved
                )
        version = out.by_price_version.setdefault(rates.version, [0, 0.0])
        version[0] += cell[REQUESTS]
        version[1] += dollars.spend
    out.duplicates = agg.duplicates.get(month, 0)
    for (rejected_month, reason), count in agg.rejected.items():
        if rejected_month in (
            month,
            "unknown",
        ):  # unreadable lines have no month; they happened now
            out.rejected[reason] = out.rejected.get(reason, 0) + count
    return out


def _usd(value: float) -> str:
    sign = "-" if value < 0 else ""
    amount = abs(value)
    return f"{sign}${amount:,.2f}" if amount >= 1 else f"{sign}${amount:,.4f}"


def render_screen(s: Summary, metrics_url: str, log_path: Path, lines_per_s: float) -> str:
    """The one-screen summary for a terminal."""
    net_cache = s.cache_read_savings - s.cache_write_premium
    lines = [
        f"llm-savings-exporter demo — month {s.month} (UTC), month to date",
        f"metrics {metrics_url}   log {log_path}   {lines_per_s:,.0f} lines/s",
        "",
        "proxy savings (what the compression proxy removed)",
        f"  tokens saved            {s.tokens_saved:>16,}   {_usd(s.usd_saved):>14}",
        f"  would have saved        {s.would_tokens:>16,}   {_usd(s.would_usd):>14}   shadow",
        "provider prompt cache (the provider's saving, never credited to the proxy)",
        f"  cache hit rate          {s.cache_hit_rate:>16.1%}",
        f"  read savings            {'':>16}   {_usd(s.cache_read_savings):>14}",
        f"  write premium           {'':>16}   {_usd(-s.cache_write_premium):>14}",
        f"  net cache savings       {'':>16}   {_usd(net_cache):>14}",
        f"spend                     {'':>16}   {_usd(s.spend):>14}",
        "",
        f"requests {s.requests:,}   duplicates {s.duplicates:,}   unpriced {s.unpriced:,}"
        + (f" ({', '.join(sorted(s.unpriced_models))})" if s.unpriced_models else ""),
        "rejected " + (", ".join(f"{r} {n:,}" for r, n in sorted(s.rejected.items())) or "0"),
        "",
        "by count method (saved + would-have-saved)",
    ]
    for method, (tokens, usd) in sorted(s.by_method.items(), key=lambda item: -item[1][0]):
        lines.append(f"  {method:<22}  {int(tokens):>16,}   {_usd(usd):>14}")
    factors = "   ".join(f"{src} {_usd(usd)}" for src, usd in sorted(s.by_factor_source.items()))
    versions = "   ".join(
        f"{ver} {_usd(spend)} ({int(n):,} req)"
        for ver, (n, spend) in sorted(s.by_price_version.items())
    )
    lines.append(f"dollars saved by factor source   {factors or '-'}")
    lines.append(f"spend by price version   {versions or '-'}")
    lines += ["", "Ctrl-C stops (final checkpoint)."]
    return "\n".join(lines)


def short_count(n: int) -> str:
    """A token count for a one-line summary: 999, 12.3k, 1.2M, 3.4B (the unit chosen after rounding)."""
    if n < 1000:
        return str(n)
    for divisor, suffix in ((1e3, "k"), (1e6, "M")):
        if round(n / divisor, 1) < 1000:
            return f"{n / divisor:.1f}{suffix}"
    return f"{n / 1e9:.1f}B"


def render_line(s: Summary, now: datetime | None = None) -> str:
    """One short line per refresh when stdout is not a terminal (a pipe, a log file).

    ``saved`` is the proxy's saving; its percentage is of what the month's priced
    requests would have cost without it (spend + saved). ``cache`` is the provider's
    net cache saving, kept apart. Shadow savings, rejects and unpriced requests are
    appended only when there are some.
    """
    moment = (now or datetime.now(UTC)).strftime("%H:%M:%SZ")
    bill = s.spend + s.usd_saved
    share = f", {s.usd_saved / bill:.1%} off the bill" if bill > 0 else ""
    line = (f"{moment} {s.month} requests {s.requests:,} · saved {short_count(s.tokens_saved)} tok "
            f"({_usd(s.usd_saved)}{share}) · spend {_usd(s.spend)} · "
            f"cache {_usd(s.cache_read_savings - s.cache_write_premium)}")
    if s.would_tokens:
        line += f" · shadow {short_count(s.would_tokens)} tok"
    rejected = sum(s.rejected.values())
    if rejected or s.unpriced:
        line += f" · {rejected:,} rejected, {s.unpriced:,} unpriced"
    return line


# --- the command ----------------------------------------------------------------------


class _Signals:
    """SIGINT/SIGTERM set ``stop``; a second signal falls back to the default (hard stop)."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self.previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.stop.is_set():
            signal.signal(
                signum, signal.SIG_DFL if signum == signal.SIGTERM else signal.default_int_handler
            )
            return
        self.stop.set()

    def __exit__(self, *_exc: object) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)


def run_demo(
    options: DemoOptions, out: TextIO | None = None, stop: threading.Event | None = None
) -> int:
    """Simulate, tail and summarise until ``stop`` is set, a signal arrives or the duration ends.

    Raises DemoError when the sidecar cannot start (bad config, the port taken).
    """
    from exporter.sidecar.config import ConfigError, config_from_dict
    from exporter.sidecar.sidecar import Sidecar

    out = out or sys.stdout
    stop = stop or threading.Event()
    temporary = options.directory is None
    directory = (
        Path(tempfile.mkdtemp(prefix="llm-savings-demo-"))
        if options.directory is None
        else Path(options.directory)
    )
    directory.mkdir(parents=True, exist_ok=True)
    try:
        with _Signals(stop):
            try:
                config = config_from_dict(
                    demo_config(directory, options.host, options.port), origin="demo"
                )
                sidecar = Sidecar(config, process_collector=ProcessCollector(registry=None))
            except ConfigError as exc:
                raise DemoError(str(exc)) from exc
            except OSError as exc:
                raise DemoError(
                    f"cannot listen on {options.host}:{options.port}: {exc.strerror}"
                    " (try --port 0)"
                ) from exc
            return _serve(options, out, stop, directory, sidecar)
    finally:
        if temporary:
            shutil.rmtree(directory, ignore_errors=True)


def _serve(
    options: DemoOptions, out: TextIO, stop: threading.Event, directory: Path, sidecar: Any
) -> int:
    seed = options.seed if options.seed is not None else time.time_ns() & 0xFFFFFFFF
    sim_stop = threading.Event()
    simulator = Simulator(seed, time.time(), rate_per_s=options.rate)
    sim_thread = threading.Thread(
        target=simulator.run,
        args=(directory, options.rate, sim_stop, options.rotate_every, time.time),
        name="simulator",
        daemon=True,
    )
    sidecar.start()
    sim_thread.start()
    url = f"http://{_url_host(options.host)}:{sidecar.port}/metrics"
    print(
        f"demo: metrics on {url} ; log {directory / LOG_NAME} (seed {seed}, {options.rate:g} req/s)",
        file=out,
        flush=True,
    )
    tty = out.isatty() and not options.no_summary
    deadline = time.monotonic() + options.duration if options.duration is not None else None
    last_lines, last_time = 0, time.monotonic()
    try:
        while not stop.is_set():
            wait = (
                REFRESH_SECONDS
                if deadline is None
                else min(REFRESH_SECONDS, deadline - time.monotonic())
            )
            if wait > 0 and stop.wait(wait):
                break
            if options.no_summary:
                pass
            else:
                summary = _current(sidecar)
                if tty:
                    now = time.monotonic()
                    read = sum(r.tailer.stats().lines_read for r in sidecar.sources)
                    rate = (read - last_lines) / max(now - last_time, 1e-6)
                    last_lines, last_time = read, now
                    out.write(
                        "\x1b[H\x1b[2J"
                        + render_screen(summary, url, directory / LOG_NAME, rate)
                        + "\n"
                    )
                else:
                    out.write(render_line(summary) + "\n")
                out.flush()
            if deadline is not None and time.monotonic() >= deadline:
                break
    finally:
        sim_stop.set()
        sim_thread.join(timeout=10)
        sidecar.stop()  # final checkpoint
    if not options.no_summary:
        print(render_line(_current(sidecar)), file=out)
    print("demo: stopped (final checkpoint written)", file=out, flush=True)
    return 0


def _current(sidecar: Any) -> Summary:
    month = datetime.now(UTC).strftime("%Y-%m")
    with sidecar.pipeline.lock:
        return summarise(sidecar.pipeline.aggregates, month)


def _url_host(host: str) -> str:
    if host in ("", "0.0.0.0", "::"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


__all__ = [
    "DemoError",
    "DemoOptions",
    "Summary",
    "demo_config",
    "render_line",
    "render_screen",
    "run_demo",
    "short_count",
    "summarise",
]
