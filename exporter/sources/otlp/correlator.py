"""One provider call, reported by several spans, counted once.

Instrumentations stack: the anthropic SDK's own span under OpenInference's,
LiteLLM's request span beside an SDK instrumentation, Langfuse wrapping
OpenAI. Each span is a model call with usage; counted naively, the call is
counted twice. The rules (docs/telemetry.md, "Counted once"):

(a) Nested spans of one trace. A model-call span whose ancestor (through any
    spans seen, model calls or not, up to ``MAX_DEPTH`` links) is a model-call
    span with COMPATIBLE usage (same input total and output, or one of them
    without usage) reports the same call: they form one family. A family's
    members in one export request: only the most complete is kept (usage over
    none, no completeness flag over one, a response id over none; then the
    first), ``source_dialect`` says which; the others are ignored as
    ``same_call``. Spans of one trace may come in different export requests
    (BatchSpanProcessor batches by end time; a child ends first): the rule
    then holds through a memory of recently seen spans - a span joins the
    family of an ancestor seen before, and a descendant seen before joins the
    family of the ancestor it was waiting for. A family keeps the request id
    it was first emitted with, and every later member is emitted with it, so
    the pipeline's dedupe counts the first one and counts the rest as
    duplicates. Across export requests the FIRST exported member therefore
    wins, not the most complete; with BatchSpanProcessor that is the inner
    span, which in every captured stack is the more complete one (the SDK's
    span under OpenInference's).
(b) The same response id in different traces: the response id is the dedupe
    key (``gen_ai.response.id``), so the pipeline counts it once; nothing to
    do here.
(c) Two spans of one call sharing neither trace nor response id (the
    anthropic SDK's span and OpenInference's ``messages.stream`` span, each a
    root of its own trace): a fingerprint of the model, the exact usage
    numbers (input total, cache read, cache write total, output) and the end
    time within ``correlation_end_tolerance_seconds`` (default 1 s), only
    between spans of DIFFERENT dialects, each span matched at most once, and
    never when both carry response ids (equal ids are rule b, different ids
    are different calls). False-merge risk: two different calls of the same
    model with identical usage, ending within the tolerance, each reported by
    only one of two instrumentations (the other missed it). With both
    instrumentations seeing every call the one-to-one matching keeps the
    count right even when identical calls pair up crosswise. Spans without
    usage or with zero tokens are never fingerprinted.

Re-sent spans (an export retried after a 429) are recognised by their span
id and get the id they had, so the pipeline dedupes them as before. Nothing
is ever dropped on the strength of the memory alone: a record dropped here is
one whose better sibling is in the same export request (which is enqueued or
refused as a whole).

The memory is bounded: entries older than ``correlation_window_seconds``
(default 120 s, by arrival) or beyond ``correlation_max_entries`` (default
``MAX_ENTRIES``) are forgotten; a member arriving later than that is counted
as a call of its own. Entries forgotten by the cap while still inside the
window are counted (``evicted_early``): above a few hundred model-call spans
a second the cap, not the window, decides how long the memory lasts. An
entry is a parent link, a waiting ancestor, a model-call span or its
fingerprint. A request's entries are kept together (``_Arrival``) and
forgotten in bulk; when the cap cuts through a request, its entries go in the
order they were added, as they would from one queue of all entries.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from exporter.sources.otlp.fingerprints import Fingerprint, Print, PrintIndex
from exporter.sources.otlp.spans import CORRELATION_MAX_ENTRIES

try:  # the inner loop in C (_correlator.c), built when the install had a C compiler
    from exporter.sources.otlp import _correlator as _native
except ImportError:  # pragma: no cover - exercised by installs without a compiler
    _native = None  # type: ignore[assignment]
# Whether the C loop is in use by default; the Python code below decides the same, step for step.
NATIVE = _native is not None

MAX_DEPTH = 8
MAX_ENTRIES = CORRELATION_MAX_ENTRIES


@dataclass(slots=True)
class Member:
    """One mapped model-call span of an export request, as the correlator sees it."""

    key: str  # "<trace>:<span>"
    parent_key: str  # "" for a root
    dialect: str
    usage: tuple[int, int, int, int] | None  # (input total, cache read, cache write, output)
    model: str
    end_ns: int
    response_id: str | None
    request_id: str | None
    rank: tuple[int, int, int]
    index: int = -1  # the span's place in its request (in ``correlate``'s views)
    family: int = -1
    keep: bool = True


# A family: (request id, usage, emitted), replaced whole on change. A plain tuple of strings and
# numbers, which the garbage collector untracks (the memory holds tens of thousands of families;
# as objects they were walked on every full collection).
_Family = tuple[str | None, tuple[int, int, int, int] | None, bool]


# The kinds of entry the memory holds, one letter each in ``_Arrival.codes``.
PARENT, PENDING, MODEL, PRINT = KINDS = ("P", "Q", "M", "F")
# Runs an iterator to its end in C: the bulk forgetting below.
_consume: Callable[[Iterable[Any]], None] = deque(maxlen=0).extend


@dataclass(slots=True)
class _Arrival:
    """The entries one request added to the memory, kept together: they arrived at one time, so the
    window forgets them together, and the cap forgets the oldest first.

    Each kind's entries are in a list of their own, in the order they were added, and ``codes``
    holds every entry's kind in that order (one letter each). The first n entries are then, of each
    kind, the first ``codes.count(kind, ...)`` of its list: forgotten a list slice at a time, in the
    dictionaries' own C loops, and exactly the entries a single queue of them would have given up.
    """

    arrived: float
    parents: list[str] = field(default_factory=list)  # span keys whose parent link was remembered
    pendings: list[str] = field(default_factory=list)  # unseen ancestor keys a family waits for
    models: list[str] = field(default_factory=list)  # model-call span keys placed in a family
    placed: list[int] = field(default_factory=list)  # ... and the family each was placed in
    prints: list[tuple[Fingerprint, Print]] = field(default_factory=list)
    codes: str = ""
    done: list[int] = field(default_factory=lambda: [0, 0, 0, 0])  # entries forgotten, of each kind: P, Q, M, F

    @property
    def left(self) -> int:
        """Entries not forgotten yet (the forgotten ones are a prefix of ``codes``)."""
        return len(self.codes) - sum(self.done)


@dataclass
class SpanCorrelator:
    window_seconds: float = 120.0
    end_tolerance_ns: int = 1_000_000_000
    clock: Callable[[], float] = time.monotonic
    max_entries: int = MAX_ENTRIES
    native: bool = NATIVE  # _place and the prints' forgetting in C (False: the Python code, the same decisions)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _parent: dict[str, str] = field(default_factory=dict)  # span key -> parent key (any span)
    _family_of: dict[str, int] = field(default_factory=dict)  # model span key -> family
    _pending: dict[str, int] = field(default_factory=dict)  # unseen ancestor key -> family
    # model span key -> its response id, when it has one (``get`` gives None for the rest)
    _seen_ids: dict[str, str] = field(default_factory=dict)
    _families: dict[int, _Family] = field(default_factory=dict)
    _prints: PrintIndex = field(default_factory=PrintIndex)
    _arrivals: deque[_Arrival] = field(default_factory=deque)  # by arrival, oldest first
    _held: int = 0  # entries held, in all arrivals
    _next: int = 0
    _now: float = 0.0  # the clock when the request being resolved arrived
    # entries forgotten because of max_entries while still inside the window (not the aged-out ones)
    evicted_early: int = 0

    # --- memory -------------------------------------------------------------
    @property
    def held(self) -> int:
        """Entries the memory holds: parent links, waiting ancestors, model-call spans, fingerprints."""
        return self._held

    def _evict(self) -> None:
        """Forget the entries past the window, then the oldest beyond the cap (counted: forgotten early)."""
        horizon = self._now - self.window_seconds
        arrivals = self._arrivals
        while arrivals and arrivals[0].arrived < horizon:  # by arrival: the aged ones are the oldest
            arrival = arrivals.popleft()
            left = arrival.left
            self._forget(arrival, left)
            self._held -= left
        early = max(0, self._held - self.max_entries)
        self.evicted_early += early
        self._held -= early
        while early:
            arrival = arrivals[0]
            left = arrival.left
            take = min(left, early)
            self._forget(arrival, take)
            if take == left:
                arrivals.popleft()
            early -= take

    def _forget(self, arrival: _Arrival, count: int) -> None:
        """Forget the next ``count`` entries of ``arrival``, a kind at a time (each kind its own maps)."""
        codes, (p, q, m, f) = arrival.codes, arrival.done
        start = p + q + m + f
        end = start + count
        parents, pendings, models, prints = (codes.count(kind, start, end) for kind in KINDS)
        arrival.done = [p + parents, q + pendings, m + models, f + prints]
        if parents:
            _consume(map(self._parent.pop, arrival.parents[p:p + parents], repeat(None)))
        if pendings:
            _consume(map(self._pending.pop, arrival.pendings[q:q + pendings], repeat(None)))
        if models:
            keys, placed = arrival.models[m:m + models], arrival.placed[m:m + models]
            popped = list(map(self._family_of.pop, keys, repeat(0)))  # 0: gone already
            if popped != placed:
                self._forget_replaced(keys, placed, popped)
            elif self._seen_ids:
                _consume(map(self._seen_ids.pop, keys, repeat(None)))
            _consume(map(self._families.pop, placed, repeat(None)))  # each entry's own family
        if prints:
            if self.native:
                _native.forget_prints(self._prints.queues, self._prints.matched, arrival.prints[f:f + prints])
            else:
                self._prints.forget_all(arrival.prints[f:f + prints])

    def _forget_replaced(self, keys: list[str], placed: list[int], popped: list[int]) -> None:
        """``_forget`` of model entries some of whose keys were placed again since, in another family:
        that later placement is its own entry's to forget. Undoes the bulk pops (last first, so a key
        popped twice gets its first value back), then forgets entry by entry."""
        family_of = self._family_of
        for key, family in zip(reversed(keys), reversed(popped), strict=True):
            if family:
                family_of[key] = family
        for key, family in zip(keys, placed, strict=True):
            if family_of.get(key) == family:
                del family_of[key]
                self._seen_ids.pop(key, None)

    # --- the rules ------------------------------------------------------------
    def resolve(self, links: Sequence[tuple[str, str]], members: Sequence[Member]) -> None:
        """Assign each member its family and request id; mark the ones to drop (``keep``).

        ``links``: (span key, parent key) of every span of the request.
        """
        with self._lock:
            self._now = self.clock()
            self._evict()
            arrival = _Arrival(self._now)
            if self.native and type(links) is list and _native.link(  # _link, in C (False: not done)
                    links, members, self._parent, self._pending, arrival.parents, arrival.pendings):
                codes = [PARENT * len(arrival.parents), PENDING * len(arrival.pendings)]
            else:
                codes = self._link(links, members, arrival)
            if self.native and members:
                state = (self._family_of, self._families, self._parent, self._pending, self._seen_ids,
                         self._prints.queues, self._prints.matched, self.end_tolerance_ns)
                lists = (arrival.models, arrival.placed, arrival.pendings, arrival.prints)
                box = [self._next]  # the C loop sets it as it makes each family, so an error keeps it right
                try:
                    codes.append(_native.place(state, members, lists, box))
                finally:
                    self._next = box[0]
            else:
                for member in members:
                    codes.append(self._place(member, arrival))
            _native.choose(self._families, members) if self.native else self._choose(members)
            arrival.codes = "".join(codes)
            if arrival.codes:
                self._arrivals.append(arrival)
                self._held += len(arrival.codes)

    def _link(self, links: Sequence[tuple[str, str]], members: Sequence[Member], arrival: _Arrival) -> list[str]:
        """Remember each new span's parent link, and let a non-model span pass a waiting descendant on
        to its own parent; the kinds of the entries this added, in order."""
        known, parents = self._parent, arrival.parents
        for key, parent in links:
            if parent and key not in known:
                known[key] = parent
                parents.append(key)
        codes = [PARENT * len(parents)]
        if self._pending:
            model_keys = {m.key for m in members}
            for key, parent in links:
                if key in model_keys:
                    continue
                waiting = self._pending.pop(key, None)
                if waiting is not None and parent:
                    self._pending[parent] = waiting
                    arrival.pendings.append(parent)
            codes.append(PENDING * len(arrival.pendings))
        return codes

    def _resent(self, family: int, member: Member) -> bool:
        """The same span again (an export retried): same id, same usage."""
        return self._compatible(family, member) and self._seen_ids.get(member.key) == (
            member.response_id
        )

    def _compatible(self, family: int, member: Member) -> bool:
        known = self._families.get(family)
        if known is None:
            return False
        a, b = known[1], member.usage
        if a is None or b is None:
            return True
        return a[0] == b[0] and a[3] == b[3]

    def _place(self, member: Member, arrival: _Arrival) -> str:
        """Put ``member`` in a family; the kinds of the entries this added to ``arrival``, in order."""
        family_of, key, usage = self._family_of, member.key, member.usage
        again = family_of.get(key)
        if again is not None and again in self._families and self._resent(again, member):
            member.family = again
            return ""
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
        response_id = member.response_id
        has_id = response_id is not None
        codes = MODEL
        held = None  # what the index holds for the fingerprint: looked up once (a tuple's hash is not kept)
        if family is None and fingerprint is not None:
            held = self._prints.queues.get(fingerprint)
            if held is not None:
                family = self._prints.match_held(fingerprint, held, member.dialect, has_id, member.end_ns,
                                                 self.end_tolerance_ns, self._families)
        if family is None:
            self._next += 1  # a new family
            family = self._next
            self._families[family] = (member.request_id, usage, False)
            if fingerprint is not None:
                entry = (member.dialect, member.end_ns, family, has_id, family)
                self._prints.add(fingerprint, entry, held)
                arrival.prints.append((fingerprint, entry))
                codes = PRINT + MODEL
        else:
            known = self._families[family]
            if known[1] is None:
                self._families[family] = (known[0], usage, known[2])
        member.family = family
        family_of[key] = family
        if response_id is not None:
            self._seen_ids[key] = response_id
        elif self._seen_ids:
            self._seen_ids.pop(key, None)
        arrival.models.append(key)
        arrival.placed.append(family)
        if last and last not in family_of and last not in pending:
            pending[last] = family  # an ancestor not seen yet joins when it comes
            arrival.pendings.append(last)
            return codes + PENDING
        return codes

    def _choose(self, members: Sequence[Member]) -> None:
        """Per family: keep the best member of this request unless the family was emitted."""
        first: dict[int, Member] = {}  # each family's first member, in the order families appear
        more: dict[int, list[Member]] = {}  # every member of the families with more than one
        for member in members:
            family_id = member.family
            if family_id not in first:
                first[family_id] = member
            elif family_id in more:
                more[family_id].append(member)
            else:
                more[family_id] = [first[family_id], member]
        families = self._families
        for family_id, member in first.items():
            request_id, usage, emitted = families[family_id]
            group = more.get(family_id)
            if group is None:  # the common case: what the rules below give for one member
                if emitted:
                    member.request_id = request_id
                else:
                    families[family_id] = (member.request_id, usage, True)
                continue
            if emitted:
                for member in group:  # counted as duplicates by the pipeline's dedupe
                    member.request_id = request_id
                continue
            best = max(group, key=lambda m: m.rank)  # max keeps the first of equals
            with_id = next((m for m in group if m.response_id is not None), None)
            source = best if best.response_id is not None or with_id is None else with_id
            families[family_id] = (source.request_id, usage, True)
            for member in group:
                member.keep = member is best
                member.request_id = source.request_id


__all__ = ["KINDS", "MAX_DEPTH", "MAX_ENTRIES", "Member", "SpanCorrelator"]
