"""The fingerprint index matches exactly as one list scanned in arrival order did."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.sources.otlp.fingerprints import Print, PrintIndex

FP = ("m", 10, 0, 0, 2)
DIALECTS = ["a", "b", "c"]


class ListIndex:
    """The reference: every print of a fingerprint in one list, scanned from the first."""

    def __init__(self) -> None:
        self.entries: list[Print] = []
        self.matched: set[int] = set()

    def add(self, entry: Print) -> None:
        self.entries.append(entry)

    def match(self, dialect: str, has_id: bool, end_ns: int, tolerance: int, families: set[int]) -> int | None:
        for entry in self.entries:
            dialect_of, end_of, family, with_id, seq = entry
            if seq in self.matched or dialect_of == dialect:
                continue
            if with_id and has_id:
                continue
            if abs(end_of - end_ns) > tolerance or family not in families:
                continue
            self.matched.add(seq)
            return family
        return None

    def drop(self, entry: Print) -> None:
        if entry in self.entries:
            self.entries.remove(entry)


OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), st.sampled_from(DIALECTS), st.booleans(), st.integers(0, 5)),
    st.tuples(st.just("match"), st.sampled_from(DIALECTS), st.booleans(), st.integers(0, 5)),
    st.tuples(st.just("evict"), st.integers(0, 30), st.booleans(), st.integers(0, 0)),
    st.tuples(st.just("forget_family"), st.integers(0, 30), st.booleans(), st.integers(0, 0)),
), max_size=60)


@settings(max_examples=400, deadline=None)
@given(OPS)
def test_index_matches_like_one_list(ops: list[tuple[Any, ...]]) -> None:
    fast, slow = PrintIndex(), ListIndex()
    families: set[int] = set()
    added: list[tuple[Print, Print]] = []
    for op, a, b, c in ops:
        if op == "add":
            seq = len(added) + 1
            pair: tuple[Print, Print] = ((a, c, seq, b, seq), (a, c, seq, b, seq))
            fast.add(FP, pair[0])
            slow.add(pair[1])
            families.add(seq)
            added.append(pair)
        elif op == "match":
            assert fast.match(FP, a, b, c, 1, families) == slow.match(a, b, c, 1, families)
        elif op == "evict" and added:  # as SpanCorrelator._evict
            mine, theirs = added[a % len(added)]
            fast.forget(FP, mine)
            slow.drop(theirs)
        elif op == "forget_family":
            families.discard(a)


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_forgetting_every_print_leaves_the_index_empty(ops: list[tuple[Any, ...]]) -> None:
    """The memory's eviction forgets each print once: nothing stays behind, matched or not."""
    index = PrintIndex()
    added: list[Print] = []
    for op, a, b, c in ops:
        if op == "add":
            added.append((a, c, len(added) + 1, b, len(added) + 1))
            index.add(FP, added[-1])
        elif op == "match":
            index.match(FP, a, b, c, 1, {entry[2] for entry in added})
    for entry in added:
        index.forget(FP, entry)
    assert not index.queues and not index.matched
