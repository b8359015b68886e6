"""The correlation memory, kept per request and forgotten in bulk, decides as the one-queue memory did.

Random streams of export requests over a few traces, span ids, dialects,
usages and response ids (so families form through parents, waiting
ancestors, fingerprints and retries), with the clock moving on by nothing,
a second or past the window, and caps small enough that the cap forgets
entries in the middle of a request. After every request both correlators
must agree on each member's family, request id and keep flag, on how many
entries they hold and on how many the cap forgot early.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.sources.otlp.correlate import Member, SpanCorrelator
from tests.sources.otlp.reference_correlator import ReferenceCorrelator

TRACES = ["a" * 32, "b" * 32]
SPAN_IDS = [f"{i:016x}" for i in range(1, 7)]
USAGES = [None, (100, 0, 0, 7), (100, 20, 0, 7), (0, 0, 0, 0), (300, 0, 50, 9)]

SPAN = st.fixed_dictionaries({
    "trace": st.sampled_from(TRACES),
    "span": st.sampled_from(SPAN_IDS),
    "parent": st.sampled_from(["", *SPAN_IDS]),
    "model_call": st.booleans(),
    "dialect": st.sampled_from(["gen_ai", "openinference", "litellm"]),
    "usage": st.sampled_from(USAGES),
    "model": st.sampled_from(["", "gpt-4o", "GPT-4o", "claude"]),
    "end": st.sampled_from([10**18, 10**18 + 5 * 10**8, 10**18 + 3 * 10**9]),
    "response_id": st.sampled_from([None, None, "resp-1", "resp-2"]),
    "rank": st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 1)),
})
REQUEST = st.tuples(st.sampled_from([0.0, 0.0, 1.0, 130.0]), st.lists(SPAN, max_size=8))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _request(spans: list[dict[str, Any]], number: int) -> tuple[list[tuple[str, str]], list[Member]]:
    """One request's links and a fresh ``Member`` per model-call span (each correlator writes its own)."""
    links, members = [], []
    for index, span in enumerate(spans):
        key = f"{span['trace']}:{span['span']}"
        parent = f"{span['trace']}:{span['parent']}" if span["parent"] else ""
        links.append((key, parent))
        if span["model_call"]:
            members.append(Member(key, parent, span["dialect"], span["usage"], span["model"], span["end"],
                                  span["response_id"], f"own-{number}-{index}", span["rank"]))
    return links, members


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(REQUEST, min_size=1, max_size=12), st.sampled_from([1, 2, 3, 5, 8, 13, 1000]))
def test_the_bulk_memory_decides_as_the_one_queue_memory(requests: list[tuple[float, list[Any]]],
                                                         cap: int) -> None:
    clock = Clock()
    fast = SpanCorrelator(clock=clock, max_entries=cap)
    slow = ReferenceCorrelator(clock=clock, max_entries=cap)
    for number, (step, spans) in enumerate(requests):
        clock.now += step
        links, mine = _request(spans, number)
        _, theirs = _request(spans, number)
        fast.resolve(links, mine)
        slow.resolve(links, theirs)
        assert [(m.family, m.request_id, m.keep) for m in mine] == [
            (m.family, m.request_id, m.keep) for m in theirs]
        assert (fast.held, fast.evicted_early) == (len(slow._order), slow.evicted_early)
        assert (fast._parent, fast._pending, fast._family_of, fast._families) == (
            slow._parent, slow._pending, slow._family_of, slow._families)
        assert {key: rid for key, rid in slow._seen_ids.items() if rid is not None} == fast._seen_ids
        assert sorted(fast._prints.prints()) == sorted(slow._prints.prints())
