"""Keeping CPython's garbage collector from pausing ingestion: a full collection stops every thread."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


def freeze_long_lived() -> None:
    """Collect once, then move every surviving object to the permanent generation (``gc.freeze``).

    For start-up, after the restore and before any thread runs: the restored
    aggregates and dedupe ledger live as long as the process, and a full (gen-2)
    collection, which pauses every thread, would otherwise rescan them each time.
    Frozen objects are still freed by reference counting; only a cycle that
    becomes garbage after the freeze is never collected (the state holds none).
    """
    gc.collect()
    gc.freeze()


@contextlib.contextmanager
def cold_render_gc(cold: bool) -> Iterator[None]:
    """Around a render: if ``cold``, no garbage collection during it and what it built frozen after it.

    A cold render (``Frame.reset``) allocates hundreds of thousands of container
    objects (series keys, member lists, label texts) that stay in the
    ``Exposition``'s caches; with the collector on, they trigger full
    collections that pause every thread (ingestion too) for 50-150 ms at 100k
    series. Here the collector is off for the render (process-wide, so ingestion
    meanwhile runs without collections too, for the render's length) and
    ``gc.freeze()`` afterwards moves everything alive into the permanent
    generation, so the new caches are never scanned, with no collection pause at
    all. The cost: a garbage cycle pending at that instant is never collected;
    cold renders are rare (start-up, retention dropping a month), and the
    caches of the last cold render are freed by reference counting on the next.
    A steady render (not ``cold``) is left alone. The collector is re-enabled
    (if it was on) even when the render raises; nothing is frozen then.
    """
    if not cold:
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        gc.freeze()
    finally:
        if enabled:
            gc.enable()


__all__ = ["cold_render_gc", "freeze_long_lived"]
