"""The checkpoint body's schema and how aggregates and ledger come back from it."""

from __future__ import annotations

from exporter.engine.aggregate import Aggregates
from exporter.engine.dedupe import DEFAULT_MAX_IDS, DedupeLedger
from exporter.sidecar.checkpoint import CheckpointError, Loaded

CHECKPOINT_SCHEMA = "llm-savings-exporter/checkpoint/v1"


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
