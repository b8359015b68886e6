"""Rule (c) of ``exporter.sources.otlp.correlate``: the fingerprints of recent model-call spans.

A fingerprint's unmatched prints are kept by (dialect, has a response id),
each queue in arrival order: a span scans only the queues it can match (other
dialects; only those without ids when it has one), and a matched print leaves
its queue, so a stream of identical calls from one instrumentation never makes
the scan long (it did: every earlier print was scanned, and skipped, for each
new span). Of several candidates the earliest to arrive matches, as when all
were in one list.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Container
from dataclasses import dataclass, field

Fingerprint = tuple[str, int, int, int, int]


@dataclass(slots=True)
class Print:
    dialect: str
    end_ns: int
    family: int
    has_response_id: bool
    seq: int  # arrival order
    matched: bool = False


@dataclass(slots=True)
class PrintIndex:
    queues: dict[Fingerprint, dict[tuple[str, bool], deque[Print]]] = field(default_factory=dict)

    def add(self, fingerprint: Fingerprint, entry: Print) -> None:
        queues = self.queues.setdefault(fingerprint, {})
        queues.setdefault((entry.dialect, entry.has_response_id), deque()).append(entry)

    def match(self, fingerprint: Fingerprint, dialect: str, has_response_id: bool, end_ns: int,
              tolerance_ns: int, families: Container[int]) -> int | None:
        """The family of the earliest print of another dialect ending within the tolerance
        (never two with response ids), now matched; None when there is none."""
        queues = self.queues.get(fingerprint)
        if not queues:
            return None
        best: Print | None = None
        for (other, has_id), queue in queues.items():
            if other == dialect or (has_id and has_response_id):
                continue
            for entry in queue:  # the first that matches in this queue
                if best is not None and entry.seq > best.seq:
                    break
                if abs(entry.end_ns - end_ns) > tolerance_ns or entry.family not in families:
                    continue
                best = entry
                break
        if best is None:
            return None
        best.matched = True
        self.drop(fingerprint, best)
        return best.family

    def drop(self, fingerprint: Fingerprint, entry: Print) -> None:
        """Forget ``entry`` (matched, or out of the memory's window)."""
        queues = self.queues.get(fingerprint)
        key = (entry.dialect, entry.has_response_id)
        queue = queues.get(key) if queues is not None else None
        if queues is None or queue is None:
            return
        if queue and queue[0] is entry:
            queue.popleft()
        elif entry in queue:
            queue.remove(entry)
        if not queue:
            del queues[key]
            if not queues:
                del self.queues[fingerprint]


__all__ = ["Fingerprint", "Print", "PrintIndex"]
