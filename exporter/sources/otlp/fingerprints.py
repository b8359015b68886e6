"""Rule (c) of ``exporter.sources.otlp.correlator``: the fingerprints of recent model-call spans.

A fingerprint's unmatched prints are kept by (dialect, has a response id),
each queue in arrival order: a span scans only the queues it can match (other
dialects; only those without ids when it has one), and a matched print leaves
its queue, so a stream of identical calls from one instrumentation never makes
the scan long (it did: every earlier print was scanned, and skipped, for each
new span). Of several candidates the earliest to arrive matches, as when all
were in one list.

A print is a plain tuple of strings and numbers, and the matched ones are a
set of arrival numbers, so the memory's tens of thousands of prints hold no object
the garbage collector has to walk (as dataclasses they were half the objects it
walked on each full collection, 72 ms a time at 65,536 entries).

A fingerprint with one print (nearly every one: two spans share a model and
all four usage numbers when two instrumentations report one call) holds the
print itself, not a dict of queues, so the common span adds, matches and
forgets its print without making or dropping two containers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Container, Iterable
from dataclasses import dataclass, field

Fingerprint = tuple[str, int, int, int, int]


# One model-call span's print: (dialect, end_ns, family, has_response_id, seq), ``seq`` its
# arrival number (unique). A plain tuple: the collector untracks exact tuples of atoms, not a
# NamedTuple's.
Print = tuple[str, int, int, bool, int]
# A fingerprint's prints: the print alone, or its queues once it has several.
Held = Print | dict[tuple[str, bool], deque[Print]]


@dataclass(slots=True)
class PrintIndex:
    queues: dict[Fingerprint, Held] = field(default_factory=dict)
    matched: set[int] = field(default_factory=set)  # seq of the prints matched and not forgotten yet

    def add(self, fingerprint: Fingerprint, entry: Print, held: Held | None = None) -> None:
        """Hold ``entry`` under ``fingerprint``; ``held``: what ``queues`` holds for it now, when the
        caller looked it up already (a fingerprint is a new tuple each time: its hash is not kept)."""
        if held is None:
            held = self.queues.get(fingerprint)
            if held is None:
                self.queues[fingerprint] = entry
                return
        if isinstance(held, tuple):
            held = self.queues[fingerprint] = {(held[0], held[3]): deque((held,))}
        key = (entry[0], entry[3])
        queue = held.get(key)
        if queue is None:
            held[key] = deque((entry,))
        else:
            queue.append(entry)

    def prints(self) -> list[Print]:
        """Every print held, unmatched and not forgotten (for tests and sizing)."""
        out: list[Print] = []
        for held in self.queues.values():
            if isinstance(held, tuple):
                out.append(held)
            else:
                out.extend(entry for queue in held.values() for entry in queue)
        return out

    def match(self, fingerprint: Fingerprint, dialect: str, has_response_id: bool, end_ns: int,
              tolerance_ns: int, families: Container[int]) -> int | None:
        """The family of the earliest print of another dialect ending within the tolerance
        (never two with response ids), now matched; None when there is none."""
        held = self.queues.get(fingerprint)
        if held is None:
            return None
        return self.match_held(fingerprint, held, dialect, has_response_id, end_ns, tolerance_ns, families)

    def match_held(self, fingerprint: Fingerprint, held: Held, dialect: str, has_response_id: bool, end_ns: int,
                   tolerance_ns: int, families: Container[int]) -> int | None:
        """``match``, given what ``queues`` holds for ``fingerprint`` (``held``, looked up by the caller)."""
        best: Print | None = None
        if isinstance(held, tuple):
            if (held[0] == dialect or (held[3] and has_response_id)
                    or abs(held[1] - end_ns) > tolerance_ns or held[2] not in families):
                return None
            best = held
        else:
            best = self._earliest(held, dialect, has_response_id, end_ns, tolerance_ns, families)
        if best is None:
            return None
        self.matched.add(best[4])
        self.drop(fingerprint, best)
        return best[2]

    @staticmethod
    def _earliest(queues: dict[tuple[str, bool], deque[Print]], dialect: str, has_response_id: bool,
                  end_ns: int, tolerance_ns: int, families: Container[int]) -> Print | None:
        """``match``'s scan of a fingerprint's queues: the earliest print that may match."""
        best: Print | None = None
        for (other, has_id), queue in queues.items():
            if other == dialect or (has_id and has_response_id):
                continue
            for entry in queue:  # the first that matches in this queue
                if best is not None and entry[4] > best[4]:
                    break
                if abs(entry[1] - end_ns) > tolerance_ns or entry[2] not in families:
                    continue
                best = entry
                break
        return best

    def forget(self, fingerprint: Fingerprint, entry: Print) -> None:
        """``entry`` is out of the memory's window: drop it unless it was matched (then it left
        its queue already)."""
        self.forget_all(((fingerprint, entry),))

    def forget_all(self, prints: Iterable[tuple[Fingerprint, Print]]) -> None:
        """``forget`` each (fingerprint, print) in turn: the memory forgets a request's prints together."""
        matched, queues = self.matched, self.queues
        for fingerprint, entry in prints:
            if matched and entry[4] in matched:
                matched.discard(entry[4])
            elif queues.get(fingerprint) is entry:  # the common case: the fingerprint's only print
                del queues[fingerprint]
            else:
                self.drop(fingerprint, entry)

    def drop(self, fingerprint: Fingerprint, entry: Print) -> None:
        """Forget ``entry`` (matched, or out of the memory's window)."""
        queues = self.queues.get(fingerprint)
        if isinstance(queues, tuple):
            if queues[4] == entry[4]:  # seq: unique
                del self.queues[fingerprint]
            return
        key = (entry[0], entry[3])
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


__all__ = ["Fingerprint", "Held", "Print", "PrintIndex"]
