"""`run`: the sidecar. Tail sources exactly once, checkpoint, serve /metrics.

Threads: one ingest thread owns the tailers and the checkpoint (so offsets
and aggregates are always captured together), the OTLP receiver's dispatcher
feeds the same pipeline under its lock, and the HTTP server renders under
that lock. Exactly-once for files: the checkpoint holds each file's offset,
the aggregates and the dedupe ledger of the same instant; after a crash the
sidecar resumes from the last checkpoint and re-reads only what that
checkpoint had not counted. OTLP spans acknowledged after the last checkpoint
are lost on a crash (never double counted: a client's retry is deduped by
request id); the checkpoint interval bounds that window.
"""

from __future__ import annotations

import logging
import os
import platform
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from exporter import __version__, catalog
from exporter.engine.aggregate import Aggregates
from exporter.engine.dedupe import DEFAULT_MAX_IDS, DedupeLedger
from exporter.engine.labels import LabelCaps
from exporter.engine.pipeline import Pipeline
from exporter.exposition.render import Exposition, HealthSample, check_health_samples, render_for
from exporter.exposition.server import Endpoints, MetricsServer
from exporter.prices.table import PriceTableError, load_price_table
from exporter.sidecar.checkpoint import CheckpointError, CheckpointStore, Loaded
from exporter.sidecar.config import ENV_BEARER_TOKEN, Config, SourceConfig, parse_listen
from exporter.sources.formats.registry import LazyTextCounter, LineDecoder, make_line_decoder
from exporter.sources.tail import Tailer

log = logging.getLogger("exporter.sidecar.sidecar")
CHECKPOINT_SCHEMA = "llm-savings-exporter/checkpoint/v1"
PRICE_CHECK_SECONDS = 2.0


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

    def pump(self, pipeline: Pipeline, max_lines: int, wall: float) -> int:
        events = self.tailer.poll(max_lines)
        name = self.config.name
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
class Health:
    checkpoint_writes: int = 0
    checkpoint_failures: int = 0
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
        self.store = CheckpointStore(config.state_dir)
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
                            clock=monotonic)
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

        otlp = self.config.otlp
        return OtlpReceiver(sink, host, port, max_body_bytes=otlp.max_body_bytes,
                            queue_size=otlp.queue_size, bearer_token=token, reject=reject,
                            max_inflight_bytes=otlp.max_inflight_bytes,
                            max_connections=otlp.max_connections,
                            request_timeout=otlp.request_timeout_seconds,
                            idle_timeout=otlp.idle_timeout_seconds)

    @property
    def port(self) -> int:
        return self.server.port

    # --- the ingest loop -----------------------------------------------------
    def ingest_once(self, max_lines: int = 20_000) -> int:
        """One pass over every source; returns how many lines were consumed."""
        total = 0
        wall = self.wall()
        with self.pipeline.lock:
            for runner in self.sources:
                try:
                    total += runner.pump(self.pipeline, max_lines, wall)
                    runner.error = None
                except OSError as exc:
                    runner.error = str(exc)
                    log.warning("source %s: %s", runner.config.name, exc)
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
            log.error("checkpoint failed: %s", exc)
            return False
        self.health.checkpoint_writes += 1
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
        """Hot reload: a valid changed table applies from now on; a bad one is refused, the old stays."""
        if self.config.prices is None:
            return
        stamp = self._stat_prices()
        if not force and stamp == self._price_stamp:
            return
        self._price_stamp = stamp
        try:
            table = load_price_table(self.config.prices)
        except PriceTableError as exc:
            self.health.price_reloads["error"] += 1
            self.health.last_price_error = str(exc)
            log.error("price table reload refused, keeping version set %s: %s", self.prices.sha256[:12], exc)
            return
        if table.sha256 == self.prices.sha256:
            return
        with self.pipeline.lock:
            self.prices = table
            self.pipeline.set_prices(table)
        self.health.price_reloads["success"] += 1
        self.health.last_price_error = None
        log.info("price table reloaded: %d version(s), newest %s", len(table.versions), table.newest.version)

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

    def _loop(self) -> None:
        interval = self.config.checkpoint_interval_seconds
        last_checkpoint = self.monotonic()
        poll = min([s.poll_interval_seconds for s in self.config.sources] or [1.0])
        while not self._stop.is_set():
            try:
                consumed = self.ingest_once()
                now = self.monotonic()
                if self._price_event.is_set() or now - self._price_checked >= PRICE_CHECK_SECONDS:
                    self._price_event.clear()
                    self._price_checked = now
                    self.check_prices()
                if now - last_checkpoint >= interval:
                    self.checkpoint()
                    last_checkpoint = now
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

    def stop(self) -> None:
        """Stop ingesting, take the final checkpoint, close everything."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        if self.receiver is not None:
            self.receiver.stop()
        if self.pusher is not None:
            self.pusher.shutdown()
        try:
            self.ingest_once(max_lines=1_000_000)  # what was written before the signal still counts
        except Exception:  # the final checkpoint matters more than the last lines
            log.exception("final ingest pass failed")
        self.checkpoint()
        self.close()

    def close(self) -> None:
        """Release files, watchers and the port without a final checkpoint."""
        observer = getattr(self, "_observer", None)
        if observer is not None:
            observer.stop()
        for runner in self.sources:
            runner.tailer.close()
        self.server.stop()

    def run_until_signalled(self) -> int:
        def handle(signum: int, _frame: Any) -> None:
            log.info("signal %d: stopping", signum)
            self._stop.set()

        signal.signal(signal.SIGTERM, handle)
        signal.signal(signal.SIGINT, handle)
        self.start()
        while not self._stop.is_set():
            self._stop.wait(0.5)
        self.stop()
        return 0

    # --- what the HTTP server serves -------------------------------------------
    def readiness(self) -> tuple[bool, str]:
        if not self.ready:
            return False, "starting"
        return True, "ready"

    def metrics(self, accept: str | None) -> tuple[bytes, str]:
        with self.pipeline.lock:  # health and aggregates of the same instant: one consistent scrape
            health = self.health_samples()
            return render_for(accept, self.exposition, self.pipeline.aggregates, health)

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
                HealthSample(catalog.SOURCE_UP, (name,), 0 if runner.error else 1),
            ]
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
            for reason, count in snap["refused"].items():
                samples.append(HealthSample(catalog.OTLP_REFUSED_TOTAL, (reason,), count))
            samples.append(HealthSample(catalog.OTLP_INFLIGHT_BYTES, (), snap["inflight_bytes"]))
            samples.append(HealthSample(catalog.OTLP_CONNECTIONS, (), snap["connections"]))
            samples.append(HealthSample(catalog.SOURCE_UP, ("otlp",), 1))
        return samples


__all__ = ["Sidecar"]
