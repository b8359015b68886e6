"""The sidecar's own health: counters it keeps and the self-metric samples it publishes."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from exporter import __version__, catalog
from exporter.exposition.render import HealthSample
from exporter.sidecar.sources import source_problem

if TYPE_CHECKING:
    from exporter.sidecar.sidecar import Sidecar


@dataclass
class Health:
    checkpoint_writes: int = 0
    checkpoint_failures: int = 0
    consecutive_checkpoint_failures: int = 0  # reset by a success; /readyz fails past a threshold
    last_checkpoint_error: str | None = None
    last_checkpoint_wall: float | None = None
    price_reloads: dict[str, int] = field(default_factory=lambda: {"success": 0, "error": 0})
    last_price_error: str | None = None


def health_samples(sidecar: Sidecar) -> list[HealthSample]:
    """Every self-metric sample of the sidecar, each built from its catalog entry."""
    now = sidecar.wall()
    samples: list[HealthSample] = [
        HealthSample(catalog.BUILD_INFO, (__version__, platform.python_version()), 1),
        HealthSample(catalog.PRICE_TABLE_NEWEST_EFFECTIVE_TIMESTAMP_SECONDS, (),
                     sidecar.prices.newest.effective_from),
        HealthSample(catalog.CHECKPOINT_WRITES_TOTAL, (), sidecar.health.checkpoint_writes),
        HealthSample(catalog.CHECKPOINT_FAILURES_TOTAL, (), sidecar.health.checkpoint_failures),
        HealthSample(catalog.DEDUPE_LEDGER_IDS, (), len(sidecar.pipeline.ledger)),
        HealthSample(catalog.DEDUPE_EVICTED_IDS_TOTAL, (), sidecar.pipeline.ledger.evicted),
        HealthSample(catalog.LAST_RECORD_TIMESTAMP_SECONDS, (), sidecar.pipeline.aggregates.newest_ts),
    ]
    for version in sidecar.prices.versions:
        info = (version.version, version.effective_from_text, sidecar.prices.sha256)
        samples.append(HealthSample(catalog.PRICE_TABLE_INFO, info, 1))
    if sidecar.health.last_checkpoint_wall is not None:
        age = max(0.0, now - sidecar.health.last_checkpoint_wall)
        samples.append(HealthSample(catalog.CHECKPOINT_AGE_SECONDS, (), age))
    for result, count in sorted(sidecar.health.price_reloads.items()):
        samples.append(HealthSample(catalog.PRICE_TABLE_RELOADS_TOTAL, (result,), count))
    for cap in sidecar.pipeline.caps.all():
        samples.append(HealthSample(catalog.LABEL_OVERFLOW_TOTAL, (cap.name,), cap.overflow))
    counter = sidecar.counter.loaded
    fallbacks = getattr(counter, "fallbacks", 0) if counter is not None else 0
    samples.append(HealthSample(catalog.TOKEN_COUNT_FALLBACKS_TOTAL, ("encoding_unavailable",), fallbacks))
    for runner in sidecar.sources:
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
    if sidecar.receiver is not None:
        snap = sidecar.receiver.stats.snapshot()
        for code, count in sorted(snap["requests"].items()):
            samples.append(HealthSample(catalog.OTLP_REQUESTS_TOTAL, (str(code),), count))
        samples.append(HealthSample(catalog.OTLP_SPANS_TOTAL, ("accepted",), snap["spans_accepted"]))
        rejected, ignored = sum(snap["spans_rejected"].values()), sum(snap["spans_ignored"].values())
        samples.append(HealthSample(catalog.OTLP_SPANS_TOTAL, ("rejected",), rejected))
        samples.append(HealthSample(catalog.OTLP_SPANS_TOTAL, ("ignored",), ignored))
        for reason, count in snap["refused"].items():
            samples.append(HealthSample(catalog.OTLP_REFUSED_TOTAL, (reason,), count))
        samples.append(HealthSample(catalog.OTLP_CORRELATION_EVICTED_TOTAL, (), snap["correlation_evicted"]))
        samples.append(HealthSample(catalog.OTLP_INFLIGHT_BYTES, (), snap["inflight_bytes"]))
        samples.append(HealthSample(catalog.OTLP_CONNECTIONS, (), snap["connections"]))
        samples.append(HealthSample(catalog.SOURCE_UP, ("otlp",), 1))
    return samples


def readiness(sidecar: Sidecar) -> tuple[bool, str]:
    """Ready unless starting, checkpoints keep failing, or a file source can open none of its files."""
    if not sidecar.ready:
        return False, "starting"
    problems: list[str] = []
    failures = sidecar.health.consecutive_checkpoint_failures
    if failures >= sidecar.config.readiness_checkpoint_failures:
        problems.append(f"checkpoint failed {failures} times in a row in {sidecar.config.state_dir}: "
                        f"{sidecar.health.last_checkpoint_error}")
    with sidecar.pipeline.lock:
        for runner in sidecar.sources:
            why = source_problem(runner)
            if why:
                problems.append(f"source {runner.config.name}: {why}")
    if problems:
        return False, "not ready: " + "; ".join(problems)
    return True, "ready"
