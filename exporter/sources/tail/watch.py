"""Waking ``Tailer.wait()`` early on file events (inotify via watchdog).

Only an optimisation: correctness never depends on events (network
filesystems send none), every poll expands the globs anyway. Watchdog is
started lazily, so a tailer that is only polled starts no threads.
"""

from __future__ import annotations

import glob
import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

# The tailer's logger: its messages keep the name they had before the watcher had a module.
log = logging.getLogger("exporter.sources.tail.tailer")


def _watch_root(pattern: str) -> tuple[str, bool]:
    """Directory to watch for a glob, and whether the watch must be recursive."""
    parts = pattern.split(os.sep)
    for i, part in enumerate(parts):
        if glob.has_magic(part):
            root = os.sep.join(parts[:i]) or (os.sep if pattern.startswith(os.sep) else ".")
            return root, i < len(parts) - 1
    return os.path.dirname(pattern) or ".", False


class _Watcher:
    """Sets an event when something changes under the directories of the globs."""

    def __init__(self, patterns: Sequence[str], use_watchdog: bool, poll_interval: float) -> None:
        self._patterns = patterns
        self._use_watchdog = use_watchdog
        self._poll_interval = poll_interval
        self._wake = threading.Event()
        self._observer: Any = None
        self._watched: set[str] = set()

    def wait(self, timeout: float) -> None:
        """Block until a filesystem event or min(timeout, poll_interval) passes."""
        if self._use_watchdog:
            self._watch()
        if self._wake.wait(max(0.0, min(timeout, self._poll_interval))):
            self._wake.clear()

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None

    def _watch(self) -> None:
        """Start watchdog lazily (no threads unless wait() is used); retry missing dirs."""
        try:
            from watchdog.events import (
                DirCreatedEvent,
                DirMovedEvent,
                FileClosedEvent,
                FileCreatedEvent,
                FileDeletedEvent,
                FileModifiedEvent,
                FileMovedEvent,
                FileSystemEvent,
                FileSystemEventHandler,
            )
            from watchdog.observers import Observer
        except ImportError:  # pragma: no cover - watchdog is a dependency
            self._use_watchdog = False
            return
        wake = self._wake
        wanted: list[type[FileSystemEvent]] = [
            FileModifiedEvent,
            FileCreatedEvent,
            FileMovedEvent,
            FileDeletedEvent,
            FileClosedEvent,
            DirCreatedEvent,
            DirMovedEvent,
        ]

        class _Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                wake.set()

        try:
            if self._observer is None:
                self._observer = Observer()
                self._observer.start()
            for pattern in self._patterns:
                root, recursive = _watch_root(pattern)
                if root in self._watched or not os.path.isdir(root):
                    continue
                try:  # only changes wake us, not other readers opening the files
                    self._observer.schedule(_Handler(), root, recursive=recursive, event_filter=wanted)
                except TypeError:  # watchdog < 4.0: no event_filter
                    self._observer.schedule(_Handler(), root, recursive=recursive)
                self._watched.add(root)
        except OSError as exc:  # e.g. inotify limits: polling still works
            log.warning("file events unavailable (%s); polling every %ss", exc, self._poll_interval)
            self._use_watchdog = False
