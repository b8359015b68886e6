"""`run`: the sidecar. Tail sources exactly once, checkpoint, serve /metrics.

Threads: one ingest thread owns the tailers and the checkpoint (offsets and
aggregates are captured together) and feeds the pipeline in slices of
``ingest_slice_lines`` under its lock; the OTLP receiver's dispatcher feeds the
same pipeline under that lock; a scrape copies what it needs under it
(``Exposition.take``) and renders outside it. One process owns a state_dir
(``StateDirLock``). SIGHUP reloads the price table; SIGTERM/SIGINT stop after a
final checkpoint holding every OTLP span already acknowledged. After a crash the
sidecar resumes from the last checkpoint and re-reads only what it had not
counted; OTLP spans acknowledged after that checkpoint are lost (never double
counted: a client's retry is deduped by request id).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from functools import partial
from typing import Any

from prometheus_client.registry import Collector

from exporter import __version__
from exporter.engine.aggregate import Aggregates
from exporter.engine.dedupe import DedupeLedger
from exporter.engine.labels import LabelCaps
from exporter.engine.pipeline import Pipeline
from exporter.exposition.collector import ProcessFamilies, cold_render_gc, freeze_long_lived, set_young_threshold
from exporter.exposition.render import (
    OPENMETRICS_CONTENT_TYPE,
    TEXT_CONTENT_TYPE,
    Exposition,
    HealthSample,
    check_health_samples,
    wants_openmetrics,
)
from exporter.exposition.server import Endpoints, MetricsServer
from exporter.prices.table import load_price_table
from exporter.report.live import landing_page
from exporter.sidecar.checkpoint import CheckpointError, CheckpointStore, StateDirLock
from exporter.sidecar.config import Config, parse_listen
from exporter.sidecar.health import Health, health_samples, readiness
from exporter.sidecar.otlp_receiver import make_receiver
from exporter.sidecar.price_reload import PriceReloader, describe_price_change
from exporter.sidecar.sources import SourceRunner
from exporter.sidecar.startup import match_sources, startup_lines
from exporter.sidecar.state import CHECKPOINT_SCHEMA, restore_state
from exporter.sources.formats.registry import LazyTextCounter, make_line_decoder
from exporter.sources.tail import Tailer

log = logging.getLogger("exporter.sidecar.sidecar")
# A rotation, truncation or retired file asks for a checkpoint at most this often (besides the
# interval), so a crash loop cannot fall behind logrotate's retention (issue 13 item 1).
EXTRA_CHECKPOINT_SECONDS = 1.0
INGEST_PASS_LINES = 20_000  # lines per ingest pass (per source)
FIRST_PASS_LINES = 2_000  # the first pass after start-up: its checkpoint commits the restore soon


class Sidecar:
    """One sidecar: clocks and the process collector are passed in (``process_collector``: prometheus_client's
    ``ProcessCollector(registry=None)`` in ``run``; None serves no process_* families, as the golden tests want)."""

    def __init__(self, config: Config, *, wall_clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic, process_collector: Collector | None = None) -> None:
        self.config = config
        self.process = ProcessFamilies(process_collector) if process_collector is not None else None
        self.wall = wall_clock
        self.monotonic = monotonic
        self.health = Health()
        self.ready = False
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._young_threshold_before = 0  # the collector's young threshold before start() set it
        self._switch_interval_before = 0.0  # sys.getswitchinterval() before start() set it, 0 when untouched
        self.prices = load_price_table(config.prices)  # refuse to start on a bad table
        self.reloader = PriceReloader(config.prices, config.price_settle_seconds, self.health, monotonic(),
                                      monotonic=monotonic)
        self._reload_requested = threading.Event()  # set by SIGHUP, served by the ingest loop
        self._render_lock = threading.Lock()  # one render at a time: frames apply in the order taken
        self.lock = StateDirLock(config.state_dir)
        self.lock.acquire()  # StateDirLocked: another process owns this state_dir
        try:
            self._init_state(config, wall_clock, monotonic)
        except BaseException:
            self.lock.release()
            raise

    def _init_state(self, config: Config, wall_clock: Callable[[], float],
                    monotonic: Callable[[], float]) -> None:
        self.store = CheckpointStore(config.state_dir)
        self.store.remove_stale_temporaries()  # safe: we hold the lock, no other writer exists
        self.counter = LazyTextCounter()
        loaded = self.store.load()  # CheckpointError: refuse rather than recount
        body: dict[str, Any] = loaded.body if loaded else {}
        if loaded and body.get("schema") != CHECKPOINT_SCHEMA:
            raise CheckpointError(f"{loaded.path}: unknown checkpoint schema {body.get('schema')!r}")
        if loaded and loaded.skipped:
            log.warning("fell back to checkpoint %s: %s", loaded.path.name, "; ".join(loaded.skipped))
        aggregates, ledger = (restore_state(loaded, config.dedupe_window_days, config.dedupe_max_ids) if loaded
                              else (Aggregates(), DedupeLedger(config.dedupe_window_days, config.dedupe_max_ids)))
        labels = config.labels
        caps = LabelCaps(labels.max_models, labels.max_tenants, labels.max_methods, labels.max_components,
                         labels.tenant_allowlist, labels.model_allowlist)
        self.pipeline = Pipeline(self.prices, timezone=config.timezone, caps=caps, counter=self.counter,
                                 aggregates=aggregates, ledger=ledger, wall_clock=wall_clock,
                                 future_skew_seconds=config.future_skew_seconds,
                                 max_request_tokens=config.max_request_tokens)
        self._apply_retention()
        self.sources: list[SourceRunner] = []
        saved_sources: dict[str, Any] = body.get("sources", {}) if loaded else {}
        for source in config.sources:
            tailer = Tailer(source.paths, max_line_bytes=source.max_line_bytes, use_watchdog=source.watch,
                            poll_interval=source.poll_interval_seconds, source_name=source.name,
                            clock=monotonic, max_open_files=source.max_open_files)
            if source.name in saved_sources:
                for warning in tailer.restore(saved_sources[source.name]):
                    log.warning("source %s: %s", source.name, warning)
            decoder = (make_line_decoder(source.format, source.mapping, self.counter)
                       if source.type == "jsonl" else None)
            self.sources.append(SourceRunner(source, tailer, decoder))
        self.exposition = Exposition(self.pipeline.month_of.start)
        host, port = parse_listen(config.listen)
        self.server = MetricsServer(host, port, Endpoints(self.metrics, self.readiness, partial(landing_page, self)))
        self.receiver: Any = None
        if config.otlp.enabled:
            self.receiver = make_receiver(config.otlp, self.pipeline)
        self.pusher: Any = None
        self.ready = True
        if loaded:
            log.info("resumed from checkpoint %s", loaded.path.name)

    @property
    def port(self) -> int:
        return self.server.port

    # --- the ingest loop -----------------------------------------------------
    def ingest_once(self, max_lines: int = INGEST_PASS_LINES) -> int:
        """One pass over every source (up to ``max_lines`` each); returns how many lines were consumed.

        The pipeline lock is taken per slice of ``ingest_slice_lines`` lines and released
        between slices, so a scrape, the OTLP dispatcher or a checkpoint waits for one
        slice at most, never for a whole catch-up pass. Each slice leaves the tailer's
        offsets and the aggregates consistent, so a checkpoint may land between slices.
        """
        total = 0
        wall = self.wall()
        slice_lines = max(1, self.config.ingest_slice_lines)
        for runner in self.sources:
            left = max_lines
            while left > 0:
                step = min(slice_lines, left)
                with self.pipeline.lock:
                    try:
                        got = runner.pump(self.pipeline, step, wall)
                        runner.error = None
                    except OSError as exc:
                        runner.error = str(exc)
                        log.warning("source %s: %s", runner.config.name, exc)
                        got = 0
                total += got
                left -= got
                if got < step:
                    break
                time.sleep(0)  # hand the GIL over: a thread blocked on the lock gets its turn
        return total

    def checkpoint(self) -> bool:
        """Commit offsets, aggregates and ledger together; False (and counted) on failure."""
        try:
            with self.pipeline.lock:
                self._apply_retention()
                body = {
                    "schema": CHECKPOINT_SCHEMA,
                    "written_at": self.wall(),
                    "exporter_version": __version__,
                    "timezone": self.config.timezone,
                    "aggregates": self.pipeline.aggregates.to_state(),
                    "sources": {r.config.name: r.tailer.state() for r in self.sources},
                }
                blobs = self.pipeline.ledger.to_state()
            self.store.save(body, blobs)
        except OSError as exc:
            self.health.checkpoint_failures += 1
            self.health.consecutive_checkpoint_failures += 1
            self.health.last_checkpoint_error = str(exc)
            log.error("checkpoint failed (%d in a row): %s", self.health.consecutive_checkpoint_failures, exc)
            return False
        self.health.checkpoint_writes += 1
        self.health.consecutive_checkpoint_failures = 0
        self.health.last_checkpoint_error = None
        self.health.last_checkpoint_wall = self.wall()
        return True

    def _apply_retention(self) -> None:
        now = datetime.fromtimestamp(self.wall(), self.pipeline.month_of.zone)
        index = now.year * 12 + now.month - 1 - self.config.month_retention
        oldest = f"{index // 12:04d}-{index % 12 + 1:02d}"
        self.pipeline.oldest_month = oldest
        if any(m < oldest for m in self.pipeline.aggregates.months() if m != "unknown"):
            dropped = self.pipeline.aggregates.drop_months_before(oldest)
            log.info("dropped %d month(s) older than %s", dropped, oldest)

    def check_prices(self, force: bool = False) -> None:
        """Hot reload: a valid changed table applies from now on; a bad one is refused, the old stays."""
        table = self.reloader.check(self.prices, force)
        if table is None:
            return
        old = self.prices
        with self.pipeline.lock:
            self.prices = table
            self.pipeline.set_prices(table)
        self.health.price_reloads["success"] += 1
        self.health.last_price_error = None
        log.info("price table reloaded: %s", describe_price_change(old, table))

    def _commit_hints(self) -> int:
        return sum(r.tailer.commit_hints for r in self.sources)

    def checkpoint_due(self, now: float, last_checkpoint: float, hints_at_checkpoint: int | None,
                       catching_up: bool = False) -> bool:
        """When to commit: the first pass after start-up (restore, first reads), every
        checkpoint_interval, and - at most one extra per EXTRA_CHECKPOINT_SECONDS - soon after a
        followed file was rotated, truncated or retired, or while a backlog is being read (a pass
        that hit its line cap): commit points keep up with the files, so a crash loop resumes
        from recent offsets instead of one that logrotate's retention has deleted meanwhile."""
        if hints_at_checkpoint is None:
            return True
        if now - last_checkpoint >= self.config.checkpoint_interval_seconds:
            return True
        return ((catching_up or self._commit_hints() != hints_at_checkpoint)
                and now - last_checkpoint >= min(EXTRA_CHECKPOINT_SECONDS, self.config.checkpoint_interval_seconds))

    def _loop(self) -> None:
        last_checkpoint = self.monotonic()
        hints: int | None = None  # None: no checkpoint yet in this run
        poll = min([s.poll_interval_seconds for s in self.config.sources] or [1.0])
        while not self._stop.is_set():
            try:
                # The first pass is short, so the first commit comes soon after the restore.
                cap = FIRST_PASS_LINES if hints is None else INGEST_PASS_LINES
                consumed = self.ingest_once(cap)
                now = self.monotonic()
                if self._reload_requested.is_set():
                    self._reload_requested.clear()
                    self.reloader.checked = now
                    self.check_prices(force=True)
                elif self.reloader.due(now):
                    self.reloader.event.clear()
                    self.reloader.checked = now
                    self.check_prices()
                if self.checkpoint_due(now, last_checkpoint, hints, catching_up=consumed >= cap):
                    pending = self._commit_hints()
                    self.checkpoint()
                    last_checkpoint, hints = now, pending
                if not consumed:
                    if len(self.sources) == 1:
                        self.sources[0].tailer.wait(min(poll, 0.5))
                    else:
                        self._stop.wait(min(poll, 0.25))
            except Exception:  # never let one bad pass kill ingestion
                log.exception("ingest pass failed")
                self._stop.wait(1.0)

    # --- lifecycle -------------------------------------------------------------
    def start(self) -> None:
        with self.pipeline.lock:  # a self-metric the catalog lacks stops the start, never vanishes from /metrics
            check_health_samples(self.health_samples())
        if self.process is not None:
            self.process.check()
        # short-lived per-request objects freed before a collection sees them; restored by close()
        self._young_threshold_before = set_young_threshold(self.config.gc_young_threshold)
        if self.config.gil_switch_interval_ms:  # fewer forced hand-overs between busy receiver threads
            self._switch_interval_before = sys.getswitchinterval()
            sys.setswitchinterval(self.config.gil_switch_interval_ms / 1000)
        freeze_long_lived()  # the restored state, before any thread: full collections never rescan it
        self.server.start()
        if self.receiver is not None:
            self.receiver.start()
        self._observer = self.reloader.watch()
        if self.config.otlp_push.enabled:
            from exporter.exposition.otlp_push import start_push

            self.pusher = start_push(self)
        thread = threading.Thread(target=self._loop, name="ingest", daemon=True)
        thread.start()
        self._threads.append(thread)
        for line in startup_lines(self.config, self.prices, match_sources(self.config), self.port,
                                  None if self.receiver is None else self.receiver.port):
            log.info("%s", line)  # names, paths, addresses and counts only: never a record's content

    def stop(self) -> bool:
        """Stop ingesting, take the final checkpoint, close everything; whether that checkpoint landed.

        Order matters: the ingest thread finishes its pass, the OTLP receiver stops
        accepting (new requests get 503, so the client keeps them) and drains what it
        acknowledged into the pipeline, the last lines are read, then the checkpoint.
        """
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        if self.receiver is not None:
            self.receiver.stop(timeout=30.0)
        if self.pusher is not None:
            self.pusher.shutdown()
        try:
            self.ingest_once(max_lines=1_000_000)  # what was written before the signal still counts
        except Exception:  # the final checkpoint matters more than the last lines
            log.exception("final ingest pass failed")
        landed = self.checkpoint()
        self.close()
        return landed

    def close(self) -> None:
        """Release files, watchers, the port and the state_dir lock without a final checkpoint."""
        observer = getattr(self, "_observer", None)
        if observer is not None:
            observer.stop()
        for runner in self.sources:
            runner.tailer.close()
        self.server.stop()
        if self._young_threshold_before:
            set_young_threshold(self._young_threshold_before)
            self._young_threshold_before = 0
        if self._switch_interval_before:
            sys.setswitchinterval(self._switch_interval_before)
            self._switch_interval_before = 0.0
        self.lock.release()

    def request_price_reload(self) -> None:
        """What SIGHUP does: the ingest loop reloads the price table at its next pass."""
        self._reload_requested.set()
        self.reloader.event.set()

    def run_until_signalled(self) -> int:
        """Serve until SIGTERM or SIGINT; SIGHUP reloads the price table. 0 when the final checkpoint landed."""
        def stop(signum: int, _frame: Any) -> None:
            log.info("signal %s: finishing the current batch, final checkpoint, exit",
                     signal.Signals(signum).name)
            self._stop.set()

        def reload(_signum: int, _frame: Any) -> None:
            log.info("SIGHUP: reloading the price table %s", self.config.prices or "(bundled)")
            self.request_price_reload()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGHUP, reload)
        self.start()
        while not self._stop.is_set():
            self._stop.wait(0.5)
        landed = self.stop()
        log.info("stopped (final checkpoint %s)", "written" if landed else "FAILED")
        return 0 if landed else 1

    # --- what the HTTP server serves -------------------------------------------
    def readiness(self) -> tuple[bool, str]:
        return readiness(self)

    def metrics(self, accept: str | None) -> tuple[bytes, str]:
        """One consistent scrape: health and aggregates copied at the same instant, rendered outside the lock."""
        om = wants_openmetrics(accept)
        extra = () if self.process is None else (self.process.render(om),)  # /proc reads, outside every lock
        with self.series_view() as families:
            body = self.exposition.render_series(families, om, extra)
        return body, OPENMETRICS_CONTENT_TYPE if om else TEXT_CONTENT_TYPE

    @contextlib.contextmanager
    def series_view(self) -> Iterator[Iterator[tuple[Any, Iterable[tuple[tuple[str, ...], float | int]]]]]:
        """Every family's series as one consistent frame (what a scrape and the OTLP push read): health
        and aggregates copied at the same instant under the pipeline lock, read outside it."""
        with self._render_lock:
            with self.pipeline.lock:
                health = self.health_samples()
                frame = self.exposition.take(self.pipeline.aggregates)
            with cold_render_gc(frame.reset):  # no collection pausing ingestion during a cold render
                yield self.exposition.series_of(frame, health)

    def health_samples(self) -> list[HealthSample]:
        return health_samples(self)

    def summary(self) -> dict[str, Any]:
        with self.pipeline.lock:
            months = self.pipeline.aggregates.month_totals()
        current = datetime.fromtimestamp(self.wall(), self.pipeline.month_of.zone).strftime("%Y-%m")
        totals = months.get(current, {})
        return {"month": current, **totals}


__all__ = ["Sidecar"]
