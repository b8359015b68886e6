"""Hot reload of the price table: file changes (watchdog events and stat polling), SIGHUP, and
tables written in place (retried until they hold still, never applied half-written)."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from exporter.prices.table import PriceTable, PriceTableChanging, PriceTableError, load_price_table
from exporter.sidecar.health import Health

log = logging.getLogger(__name__)
PRICE_CHECK_SECONDS = 2.0
# A table that drops versions still in use applies only after its file held still this long.
DEFAULT_SHRINK_HOLD_SECONDS = 10.0


class PriceReloader:
    """Decides when the price table file is read again and whether what was read may apply."""

    def __init__(self, path: str | None, settle_seconds: float, health: Health, now: float, *,
                 monotonic: Callable[[], float] = time.monotonic,
                 shrink_hold_seconds: float = DEFAULT_SHRINK_HOLD_SECONDS) -> None:
        self.path = path
        self.settle_seconds = settle_seconds
        self.health = health
        self.monotonic = monotonic
        self.shrink_hold_seconds = shrink_hold_seconds
        self.held: tuple[tuple[int, int, int] | None, float] | None = None  # (stamp, since) of a shrinking table
        self.stamp = self._stat()
        self.checked = now
        self.event = threading.Event()  # a file event in the table's directory
        self.force = False  # a reload was asked for (SIGHUP) and has not been applied yet
        self.retry = False  # the table was being written: look again at the next pass

    def due(self, now: float) -> bool:
        return self.event.is_set() or self.retry or now - self.checked >= PRICE_CHECK_SECONDS

    def _stat(self) -> tuple[int, int, int] | None:
        if self.path is None:
            return None
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def check(self, current: PriceTable, force: bool = False) -> PriceTable | None:
        """The table to apply from now on, or None (unchanged, refused, or still being written).

        ``force`` (SIGHUP) reloads even when the file looks unchanged. A file that
        changes while it is read (written in place) is neither applied nor counted
        as an error: it is retried at the next pass until it holds still.
        """
        if self.path is None:
            return None
        if force:
            self.force = True
        stamp = self._stat()
        if not (self.force or self.retry) and stamp == self.stamp:
            return None
        try:
            table = load_price_table(self.path, settle_seconds=self.settle_seconds)
        except PriceTableChanging as exc:
            if not self.retry:
                log.info("%s", exc)
            self.retry = True
            return None
        except PriceTableError as exc:
            self.stamp, self.retry, self.force = stamp, False, False
            self.health.price_reloads["error"] += 1
            self.health.last_price_error = str(exc)
            log.error("price table reload refused, keeping version set %s: %s", current.sha256[:12], exc)
            return None
        dropped = sorted({v.version for v in current.versions} - {v.version for v in table.versions})
        if dropped and not self.force and not self._held_long_enough(stamp, dropped):
            return None  # looked at again at the next periodic check (the stamp is not taken yet)
        self.held = None
        self.stamp, self.retry, forced, self.force = stamp, False, self.force, False
        if table.sha256 == current.sha256:
            if forced:
                log.info("price table reload: unchanged (sha256 %s)", table.sha256[:12])
            return None
        return table

    def _held_long_enough(self, stamp: tuple[int, int, int] | None, dropped: list[str]) -> bool:
        """A table without some versions in use may be a prefix of one still being written in place
        (a prefix cut at a version boundary is itself a valid table): it applies only once the file
        has not changed for ``shrink_hold_seconds``, or at once on SIGHUP (the operator says the
        file is complete). Dropping versions is rare; waiting is cheap."""
        now = self.monotonic()
        if self.held is None or self.held[0] != stamp:
            self.held = (stamp, now)
            log.info("price table drops version(s) %s: applying it once the file has held still for %.0f s",
                     ", ".join(dropped), self.shrink_hold_seconds)
            return False
        return now - self.held[1] >= self.shrink_hold_seconds

    def watch(self) -> Any:
        """A watchdog observer on the table's directory that sets ``event``; None without a file."""
        if self.path is None:
            return None
        try:
            from watchdog.events import FileSystemEvent, FileSystemEventHandler
            from watchdog.observers import Observer
        except ImportError:  # pragma: no cover - watchdog is a base dependency
            return None
        event_flag = self.event

        class _Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                event_flag.set()

        observer = Observer()
        observer.schedule(_Handler(), str(Path(self.path).resolve().parent), recursive=False)
        observer.daemon = True
        observer.start()
        return observer


def describe_price_change(old: PriceTable, new: PriceTable) -> str:
    """What a reload changed, for the log: versions added and removed, sha256 old -> new."""
    before = {v.version for v in old.versions}
    after = {v.version for v in new.versions}
    added, removed = sorted(after - before), sorted(before - after)
    return (f"versions added {added or 'none'}, removed {removed or 'none'}, "
            f"{len(new.versions)} in force (newest {new.newest.version}); "
            f"sha256 {old.sha256[:12]} -> {new.sha256[:12]}")
