"""The correlation memory as it read before its entries were kept per request: the reference.

``ReferenceCorrelator`` is ``exporter.sources.otlp.correlator``'s memory as it
was when every entry was one item of one deque, evicted one by one, with one fix
both have since: a model-call span's entry forgets the family it was placed
in, and the span's own link to a family only while it is still that one (a
span placed again in another family used to forget the newer family with its
older entry, and the older family never). The product
keeps a request's entries together and forgets them in bulk;
``test_correlation_reference`` holds it to this one, request by request: the
same families, request ids and kept members, and the same count of entries
held and forgotten early.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from exporter.sources.otlp.correlator import MAX_DEPTH, Member, SpanCorrelator


@dataclass
class ReferenceCorrelator(SpanCorrelator):
    """``SpanCorrelator`` with its memory as one queue: the rules it does not touch (``_resent``,
    ``_compatible``, ``_choose``) are the product's own, so only the memory is compared."""

    _order: deque[tuple[float, str, Any]] = field(default_factory=deque)

    # --- memory -------------------------------------------------------------
    def _remember(self, kind: str, key: Any) -> None:
        self._order.append((self._now, kind, key))  # by the arrival of the request

    def _evict(self) -> None:
        """Forget the entries past the window, then the oldest beyond the cap (counted: forgotten early)."""
        horizon = self._now - self.window_seconds
        order = self._order
        aged = 0
        for arrived, _, _ in order:  # by arrival: the aged ones are the oldest
            if arrived >= horizon:
                break
            aged += 1
        early = max(0, len(order) - aged - self.max_entries)
        self.evicted_early += early
        for _ in range(aged + early):
            _, kind, key = order.popleft()
            if kind == "parent":
                self._parent.pop(key, None)
            elif kind == "model":
                key, family = key
                if self._family_of.get(key) == family:  # not placed again since, in another family
                    del self._family_of[key]
                    self._seen_ids.pop(key, None)
                self._families.pop(family, None)
            elif kind == "pending":
                self._pending.pop(key, None)
            elif kind == "print":
                self._prints.forget(*key)

    # --- the rules ------------------------------------------------------------
    def resolve(self, links: Sequence[tuple[str, str]], members: Sequence[Member]) -> None:
        """Assign each member its family and request id; mark the ones to drop (``keep``).

        ``links``: (span key, parent key) of every span of the request.
        """
        with self._lock:
            self._now = self.clock()
            self._evict()
            known, order, now = self._parent, self._order, self._now
            for key, parent in links:
                if parent and key not in known:
                    known[key] = parent
                    order.append((now, "parent", key))
            # a non-model span links a waiting descendant to its own parent
            if self._pending:
                model_keys = {m.key for m in members}
                for key, parent in links:
                    if key in model_keys:
                        continue
                    waiting = self._pending.pop(key, None)
                    if waiting is not None and parent:
                        self._pending[parent] = waiting
                        self._remember("pending", parent)
            for member in members:
                self._place_member(member)
            self._choose(members)

    def _place_member(self, member: Member) -> None:
        family_of, key, usage, order, now = self._family_of, member.key, member.usage, self._order, self._now
        again = family_of.get(key)
        if again is not None and again in self._families and self._resent(again, member):
            member.family = again
            return
        family = None
        # (a) an ancestor seen before (this request or an earlier one)
        cursor, depth, last = member.parent_key, 0, member.parent_key
        parents = self._parent
        while cursor and depth < MAX_DEPTH:
            found = family_of.get(cursor)
            if found is not None and self._compatible(found, member):
                family = found
                break
            last = cursor
            cursor = parents.get(cursor, "")
            depth += 1
        pending = self._pending
        # (a) a descendant seen before, waiting for this span
        if family is None and pending:
            waiting = pending.get(key)
            if waiting is not None and self._compatible(waiting, member):
                family = waiting
                del pending[key]
        # (c) the fingerprint, across dialects (model and the four usage numbers)
        fingerprint = (
            None if usage is None or not (usage[0] or usage[3]) or not member.model
            else (member.model.lower(), *usage)
        )
        has_id = member.response_id is not None
        if family is None and fingerprint is not None:
            family = self._prints.match(fingerprint, member.dialect, has_id, member.end_ns,
                                        self.end_tolerance_ns, self._families)
        if family is None:
            self._next += 1  # a new family
            family = self._next
            self._families[family] = (member.request_id, usage, False)
            if fingerprint is not None:
                entry = (member.dialect, member.end_ns, family, has_id, family)
                self._prints.add(fingerprint, entry)
                order.append((now, "print", (fingerprint, entry)))
        else:
            known = self._families[family]
            if known[1] is None:
                self._families[family] = (known[0], usage, known[2])
        member.family = family
        family_of[key] = family
        self._seen_ids[key] = member.response_id  # type: ignore[assignment]  # None too, as it was
        order.append((now, "model", (key, family)))
        if last and last not in family_of and last not in pending:
            pending[last] = family  # an ancestor not seen yet joins when it comes
            order.append((now, "pending", last))
