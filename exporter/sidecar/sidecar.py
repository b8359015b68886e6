"""`run`: the sidecar. Tail sources exactly once, checkpoint, serve /metrics.

Threads: one ingest thread owns the tailers and the checkpoint (so offsets
and aggregates are always captured together) and feeds the pipeline in
slices of ``ingest_slice_lines`` under its lock, releasing it between slices;
the OTLP receiver's dispatcher feeds the same pipeline under that lock, and
the HTTP server copies what a scrape needs under it (``Exposition.take``) and
renders outside it. One process owns a state_dir (``StateDirLock``). Signals:
SIGHUP reloads the price table, SIGTERM/SIGINT stop after a final checkpoint
that includes every OTLP span already acknowledged. Exactly-once for files: the checkpoint holds each file's offset,
the aggregates and the dedupe ledger of the same instant; after a crash the
sidecar resumes from the last checkpoint and re-reads only what that
checkpoint had not counted. OTLP spans acknowledged after the last checkpoint
are lost on a crash (never double counted: a client's retry is deduped by
request id); the checkpoint interval bounds that window.
"""

from __future__ import annotations

import contextlib
import logging
import os
import platform
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from exporter import __version__, catalog
from exporter.engine.aggregate import Aggregates
from exporter.engine.dedupe import DEFAULT_MAX_IDS, DedupeLedger
from exporter.engine.labels import LabelCaps
from exporter.engine.pipeline import Pipeline
from exporter.exposition.render import (
    OPENMETRICS_CONTENT_TYPE,
    TEXT_CONTENT_TYPE,
    Exposition,
    HealthSample,
    check_health_samples,
    wants_openmetrics,
)
from exporter.exposition.server import Endpoints, MetricsServer
from exporter.prices.table import PriceTable, PriceTableChanging, PriceTableError, load_price_table
from exporter.sidecar.checkpoint import CheckpointError, CheckpointStore, Loaded, StateDirLock
from exporter.sidecar.config import ENV_BEARER_TOKEN, Config, SourceConfig, parse_listen
from exporter.sources.formats.registry import LazyTextCounter, LineDecoder, make_line_decoder
from exporter.sources.tail import Tailer

log = logging.getLogger("exporter.sidecar.sidecar")
CHECKPOINT_SCHEMA = "llm-savings-exporter/checkpoint/v1"
PRICE_CHECK_SECONDS = 2.0
# A rotation, truncation or retired file asks for a checkpoint at most this often (besides the
# interval), so a crash loop cannot fall behind logrotate's retention (issue 13 item 1).
EXTRA_CHECKPOINT_SECONDS = 1.0
# Rejected lines logged (source, file, byte offset, reason; never the line) per source and minute.
REJECT_LOGS_PER_MINUTE = 10
INGEST_PASS_LINES = 20_000  # lines per ingest pass (per source)
FIRST_PASS_LINES = 2_000  # the first pass after start-up: its checkpoint commits the restore soon


def restore_state(loaded: Loaded, window_days: float,
                  max_ids: int = DEFAULT_MAX_IDS) -> tuple[Aggregates, DedupeLedger]:
    """Aggregates and ledger from a verified checkpoint; a malformed body is a CheckpointError.

    The sha256 rules out corruption, so a body that does not restore was written by
    another version or by hand: refuse with the file's name rather than a traceback
    (found by tests/fuzz, target checkpoint_state)."""
    try:
        return (Aggregates.from_state(loaded.body["aggregates"]),
                DedupeLedger.from_state(window_days, loaded.blobs, max_ids))
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, OverflowError) as exc:
        raise CheckpointError(f"{loaded.path}: checkpoint body does not restore "
                              f"({type(exc).__name__}: {str(exc)[:200]})") from None


@dataclass
class SourceRunner:
    """One configured source: its tailer and how its lines become records."""

    config: SourceConfig
    tailer: Tailer
    decoder: LineDecoder | None
    last_record_wall: float | None = None
    error: str | None = None
    reject_log: RejectLog = field(default_factory=lambda: RejectLog())

    def pump(self, pipeline: Pipeline, max_lines: int, wall: float) -> int:
        events = self.tailer.poll(max_lines)
        name = self.config.name
        rejected = pipeline.aggregates.rejected  # (month, reason) -> count: a handful of keys
        seen = sum(rejected.values())
        before = dict(rejected)
        for event in events:
            # The tailer's offsets already include this batch: one line that fails must
            # not cost the lines after it, so a failure is contained and counted here.
            try:
                if event.skipped is not None:
                    pipeline.reject(event.skipped, name)
                elif self.decoder is not None:
                    pipeline.ingest_line(event.line, name, self.decoder.decode_line)
                else:
                    self._otlp_line(pipeline, event.line)
            except Exception as exc:  # never the line's text in the log: type and place only
                log.error("source %s: %s at %s offset %d; counted as internal_error",
                          name, type(exc).__name__, event.path, event.offset)
                pipeline.reject("internal_error", name)
            now_rejected = sum(rejected.values())
            if now_rejected != seen:  # this line was rejected: say where (file, offset), never what
                reason = next((k[1] for k, v in rejected.items() if v != before.get(k)), "unknown")
                self.reject_log.note(name, event.path, event.offset, reason, wall)
                seen, before = now_rejected, dict(rejected)
        if events:
            self.last_record_wall = wall
        return len(events)

    def _otlp_line(self, pipeline: Pipeline, line: bytes) -> None:
        from exporter.sources.otlp.file import records_from_otlp_json_line

        records, reasons = records_from_otlp_json_line(line)
        for record in records:
            pipeline.ingest_object(record, self.config.name)
        for reason in reasons:
            pipeline.reject(reason, self.config.name)


@dataclass
class RejectLog:
    """Logs rejected lines by place (source, file, byte offset) and reason, at most
    REJECT_LOGS_PER_MINUTE per source and minute, then one summary of the rest. The line's
    content never reaches the log (it may hold prompt text)."""

    window_start: float = 0.0
    logged: int = 0
    suppressed: int = 0
    total: int = 0

    def note(self, source: str, path: str, offset: int, reason: str, wall: float) -> None:
        self.total += 1
        if wall - self.window_start >= 60.0:
            if self.suppressed:
                log.warning("source %s: %d more rejected line(s) in the last minute not logged",
                            source, self.suppressed)
            self.window_start, self.logged, self.suppressed = wall, 0, 0
        if self.logged < REJECT_LOGS_PER_MINUTE:
            self.logged += 1
            log.warning("source %s: rejected line at %s byte offset %d: %s", source, path, offset, reason)
        else:
            self.suppressed += 1


@dataclass
class Health:
    checkpoint_writes: int = 0
    checkpoint_failures: int = 0
    consecutive_checkpoint_failures: int = 0  # reset by a success; /readyz fails past a threshold
    last_checkpoint_error: str | None = None
    last_checkpoint_wall: float | None = None
    price_reloads: dict[str, int] = field(default_factory=lambda: {"success": 0, "error": 0})
    last_price_error: str | None = None


class Sidecar:
    def __init__(self, config: Config, *, wall_clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.wall = wall_clock
        self.monotonic = monotonic
        self.health = Health()
        self.ready = False
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.prices = load_price_table(config.prices)  # refuse to start on a bad table
        self._price_stamp = self._stat_prices()
        self._price_checked = monotonic()
        self._price_event = threading.Event()
        self._price_force = False  # a reload was asked for (SIGHUP) and has not been applied yet
        self._price_retry = False  # the table was being written: look again at the next pass
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
                                 future_skew_seconds=config.future_skew_seconds)
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
        self.server = MetricsServer(host, port, Endpoints(self.metrics, self.readiness, self.summary))
        self.receiver: Any = None
        if config.otlp.enabled:
            self.receiver = self._make_receiver()
        self.pusher: Any = None
        self.ready = True
        if loaded:
            log.info("resumed from checkpoint %s", loaded.path.name)

    # --- construction helpers ------------------------------------------------
    def _make_receiver(self) -> Any:
        from exporter.sources.otlp.http import OtlpReceiver

        token = os.environ.get(ENV_BEARER_TOKEN)
        if self.config.otlp.bearer_token_file:
            token = Path(self.config.otlp.bearer_token_file).read_text(encoding="utf-8").strip()
        host, port = parse_listen(self.config.otlp.listen)

        def sink(records: list[dict[str, Any]], source: str) -> None:
            with self.pipeline.lock:
                for record in records:
                    self.pipeline.ingest_object(record, source)

        def reject(reason: str, source: str, ts: float | None = None) -> None:
            with self.pipeline.lock:
                self.pipeline.reject(reason, source, ts)

        return OtlpReceiver(sink, host, port, max_body_bytes=self.config.otlp.max_body_bytes,
                            queue_size=self.config.otlp.queue_size, bearer_token=token, reject=reject)

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

    def _stat_prices(self) -> tuple[int, int, int] | None:
        if self.config.prices is None:
            return None
        try:
            st = os.stat(self.config.prices)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def check_prices(self, force: bool = False) -> None:
        """Hot reload: a valid changed table applies from now on; a bad one is refused, the old stays.

        ``force`` (SIGHUP) reloads even when the file looks unchanged. A file that
        changes while it is read (written in place) is neither applied nor counted
        as an error: it is retried at the next pass until it holds still.
        """
        if self.config.prices is None:
            return
        if force:
            self._price_force = True
        stamp = self._stat_prices()
        if not (self._price_force or self._price_retry) and stamp == self._price_stamp:
            return
        try:
            table = load_price_table(self.config.prices, settle_seconds=self.config.price_settle_seconds)
        except PriceTableChanging as exc:
            if not self._price_retry:
                log.info("%s", exc)
            self._price_retry = True
            return
        except PriceTableError as exc:
            self._price_stamp, self._price_retry, self._price_force = stamp, False, False
            self.health.price_reloads["error"] += 1
            self.health.last_price_error = str(exc)
            log.error("price table reload refused, keeping version set %s: %s", self.prices.sha256[:12], exc)
            return
        self._price_stamp, self._price_retry, forced, self._price_force = stamp, False, self._price_force, False
        if table.sha256 == self.prices.sha256:
            if forced:
                log.info("price table reload: unchanged (sha256 %s)", table.sha256[:12])
            return
        old = self.prices
        with self.pipeline.lock:
            self.prices = table
            self.pipeline.set_prices(table)
        self.health.price_reloads["success"] += 1
        self.health.last_price_error = None
        log.info("price table reloaded: %s", describe_price_change(old, table))

    def _watch_prices(self) -> Any:
        if self.config.prices is None:
            return None
        try:
            from watchdog.events import FileSystemEvent, FileSystemEventHandler
            from watchdog.observers import Observer
        except ImportError:  # pragma: no cover - watchdog is a base dependency
            return None
        event_flag = self._price_event

        class _Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                event_flag.set()

        observer = Observer()
        observer.schedule(_Handler(), str(Path(self.config.prices).resolve().parent), recursive=False)
        observer.daemon = True
        observer.start()
        return observer

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
                    self._price_checked = now
                    self.check_prices(force=True)
                elif (self._price_event.is_set() or self._price_retry
                      or now - self._price_checked >= PRICE_CHECK_SECONDS):
                    self._price_event.clear()
                    self._price_checked = now
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
        self.server.start()
        if self.receiver is not None:
            self.receiver.start()
        self._observer = self._watch_prices()
        if self.config.otlp_push.enabled:
            from exporter.exposition.otlp_push import start_push

            self.pusher = start_push(self)
        thread = threading.Thread(target=self._loop, name="ingest", daemon=True)
        thread.start()
        self._threads.append(thread)
        log.info("serving /metrics on %s (port %d)", self.config.listen, self.port)

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
        self.lock.release()

    def request_price_reload(self) -> None:
        """What SIGHUP does: the ingest loop reloads the price table at its next pass."""
        self._reload_requested.set()
        self._price_event.set()

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
        """Ready unless starting, checkpoints keep failing, or a file source can open none of its files."""
        if not self.ready:
            return False, "starting"
        problems: list[str] = []
        failures = self.health.consecutive_checkpoint_failures
        if failures >= self.config.readiness_checkpoint_failures:
            problems.append(f"checkpoint failed {failures} times in a row in {self.config.state_dir}: "
                            f"{self.health.last_checkpoint_error}")
        with self.pipeline.lock:
            for runner in self.sources:
                why = source_problem(runner)
                if why:
                    problems.append(f"source {runner.config.name}: {why}")
        if problems:
            return False, "not ready: " + "; ".join(problems)
        return True, "ready"

    def metrics(self, accept: str | None) -> tuple[bytes, str]:
        """One consistent scrape: health and aggregates copied at the same instant, rendered outside the lock."""
        om = wants_openmetrics(accept)
        with self._render_lock:
            with self.pipeline.lock:
                health = self.health_samples()
                frame = self.exposition.take(self.pipeline.aggregates)
            body = self.exposition.render_frame(frame, health, om)
        return body, OPENMETRICS_CONTENT_TYPE if om else TEXT_CONTENT_TYPE

    @contextlib.contextmanager
    def series_view(self) -> Iterator[Iterator[tuple[Any, Iterable[tuple[tuple[str, ...], float | int]]]]]:
        """Every family's series as one consistent frame (what the OTLP push reads), outside the pipeline lock."""
        with self._render_lock:
            with self.pipeline.lock:
                health = self.health_samples()
                frame = self.exposition.take(self.pipeline.aggregates)
            yield self.exposition.series_of(frame, health)

    def summary(self) -> dict[str, Any]:
        with self.pipeline.lock:
            months = self.pipeline.aggregates.month_totals()
        current = datetime.fromtimestamp(self.wall(), self.pipeline.month_of.zone).strftime("%Y-%m")
        totals = months.get(current, {})
        return {"month": current, **totals}

    def health_samples(self) -> list[HealthSample]:
        now = self.wall()
        samples: list[HealthSample] = [
            HealthSample(catalog.BUILD_INFO, (__version__, platform.python_version()), 1),
            HealthSample(catalog.PRICE_TABLE_NEWEST_EFFECTIVE_TIMESTAMP_SECONDS, (),
                         self.prices.newest.effective_from),
            HealthSample(catalog.CHECKPOINT_WRITES_TOTAL, (), self.health.checkpoint_writes),
            HealthSample(catalog.CHECKPOINT_FAILURES_TOTAL, (), self.health.checkpoint_failures),
            HealthSample(catalog.DEDUPE_LEDGER_IDS, (), len(self.pipeline.ledger)),
            HealthSample(catalog.DEDUPE_EVICTED_IDS_TOTAL, (), self.pipeline.ledger.evicted),
            HealthSample(catalog.LAST_RECORD_TIMESTAMP_SECONDS, (), self.pipeline.aggregates.newest_ts),
        ]
        for version in self.prices.versions:
            info = (version.version, version.effective_from_text, self.prices.sha256)
            samples.append(HealthSample(catalog.PRICE_TABLE_INFO, info, 1))
        if self.health.last_checkpoint_wall is not None:
            age = max(0.0, now - self.health.last_checkpoint_wall)
            samples.append(HealthSample(catalog.CHECKPOINT_AGE_SECONDS, (), age))
        for result, count in sorted(self.health.price_reloads.items()):
            samples.append(HealthSample(catalog.PRICE_TABLE_RELOADS_TOTAL, (result,), count))
        for cap in self.pipeline.caps.all():
            samples.append(HealthSample(catalog.LABEL_OVERFLOW_TOTAL, (cap.name,), cap.overflow))
        counter = self.counter.loaded
        fallbacks = getattr(counter, "fallbacks", 0) if counter is not None else 0
        samples.append(HealthSample(catalog.TOKEN_COUNT_FALLBACKS_TOTAL, ("encoding_unavailable",), fallbacks))
        for runner in self.sources:
            stats = runner.tailer.stats()
            name = runner.config.name
            samples += [
                HealthSample(catalog.SOURCE_LINES_READ_TOTAL, (name,), stats.lines_read),
                HealthSample(catalog.SOURCE_BYTES_READ_TOTAL, (name,), stats.bytes_read),
                HealthSample(catalog.SOURCE_BYTES_BEHIND, (name,), stats.bytes_behind),
                HealthSample(catalog.SOURCE_UP, (name,), 0 if runner.error or not runner.tailer.up else 1),
                HealthSample(catalog.SOURCE_OPEN_FILES, (name,), stats.open_files),
                HealthSample(catalog.SOURCE_FILES, (name,), stats.files_matched),
            ]
            for reason, lost in sorted(stats.bytes_lost.items()):
                samples.append(HealthSample(catalog.SOURCE_BYTES_LOST_TOTAL, (name, reason), lost))
            if runner.last_record_wall is not None:
                samples.append(HealthSample(catalog.SOURCE_LAST_EVENT_TIMESTAMP_SECONDS, (name,),
                                            runner.last_record_wall))
        if self.receiver is not None:
            snap = self.receiver.stats.snapshot()
            for code, count in sorted(snap["requests"].items()):
                samples.append(HealthSample(catalog.OTLP_REQUESTS_TOTAL, (str(code),), count))
            samples.append(HealthSample(catalog.OTLP_SPANS_TOTAL, ("accepted",), snap["spans_accepted"]))
            rejected, ignored = sum(snap["spans_rejected"].values()), sum(snap["spans_ignored"].values())
            samples.append(HealthSample(catalog.OTLP_SPANS_TOTAL, ("rejected",), rejected))
            samples.append(HealthSample(catalog.OTLP_SPANS_TOTAL, ("ignored",), ignored))
            samples.append(HealthSample(catalog.SOURCE_UP, ("otlp",), 1))
        return samples


def source_problem(runner: SourceRunner) -> str | None:
    """Why a file source is not working, or None: its last error, or no file it can open."""
    if runner.error:
        return runner.error
    stats = runner.tailer.stats()
    if stats.open_errors and not stats.files_followed and not stats.files_waiting:
        return f"can open none of its files ({stats.open_errors} open errors; see the log)"
    return None


def describe_price_change(old: PriceTable, new: PriceTable) -> str:
    """What a reload changed, for the log: versions added and removed, sha256 old -> new."""
    before = {v.version for v in old.versions}
    after = {v.version for v in new.versions}
    added, removed = sorted(after - before), sorted(before - after)
    return (f"versions added {added or 'none'}, removed {removed or 'none'}, "
            f"{len(new.versions)} in force (newest {new.newest.version}); "
            f"sha256 {old.sha256[:12]} -> {new.sha256[:12]}")


__all__ = ["Sidecar"]
