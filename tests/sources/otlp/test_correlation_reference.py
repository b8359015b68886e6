"""The correlation memory, kept per request and forgotten in bulk, decides as the one-queue memory did.

Random streams of export requests over a few traces, span ids, dialects,
usages and response ids (so families form through parents, waiting
ancestors, fingerprints and retries; a request is sometimes re-sent as it
was), with the clock moving on by nothing, a second, a minute or past the
window, or back, windows of 120, 1 and 0 s, and caps small enough that the
cap forgets entries in the middle of a request. After every request both
correlators must agree on each member's family, request id and keep flag,
on how many entries they hold and the cap forgot early, and on every map
they hold; once the window has passed, both must have forgotten everything.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.sources.otlp.correlator import Member, SpanCorrelator
from tests.sources.otlp.reference_correlator import ReferenceCorrelator

TRACES = ["a" * 32, "b" * 32]
SPAN_IDS = [f"{i:016x}" for i in range(1, 7)]
USAGES = [None, (100, 0, 0, 7), (100, 0, 0, 8), (100, 20, 0, 7), (0, 0, 0, 0), (300, 0, 50, 9)]

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
# (clock step, spans, re-send the previous request as it was)
REQUEST = st.tuples(st.sampled_from([0.0, 0.0, 1.0, -1.0, 60.0, 130.0, -130.0]), st.lists(SPAN, max_size=8),
                    st.booleans())


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


def _state(correlator: SpanCorrelator | ReferenceCorrelator) -> tuple[Any, ...]:
    """Every map the memory holds (response ids: the ones that are not None)."""
    return (correlator._parent, correlator._pending, correlator._family_of, correlator._families,
            sorted(correlator._prints.prints()), correlator._prints.matched,
            {key: rid for key, rid in correlator._seen_ids.items() if rid is not None})


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(REQUEST, min_size=1, max_size=14), st.sampled_from([0, 1, 2, 3, 5, 8, 13, 1000]),
       st.sampled_from([120.0, 1.0, 0.0]))
def test_the_bulk_memory_decides_as_the_one_queue_memory(
    requests: list[tuple[float, list[Any], bool]], cap: int, window: float
) -> None:
    clock = Clock()
    fast = SpanCorrelator(clock=clock, max_entries=cap, window_seconds=window)
    slow = ReferenceCorrelator(clock=clock, max_entries=cap, window_seconds=window)
    previous: list[Any] = []
    for number, (step, drawn, resend) in enumerate(requests):
        spans = previous if resend and previous else drawn
        previous = spans
        clock.now += step
        links, mine = _request(spans, number)
        _, theirs = _request(spans, number)
        fast.resolve(links, mine)
        slow.resolve(links, theirs)
        assert [(m.family, m.request_id, m.keep) for m in mine] == [
            (m.family, m.request_id, m.keep) for m in theirs]
        assert (fast.held, fast.evicted_early) == (len(slow._order), slow.evicted_early)
        assert _state(fast) == _state(slow)
    clock.now += 10 * fast.window_seconds + 1000  # past every window: all forgotten, nothing left behind
    fast.resolve([], [])
    slow.resolve([], [])
    assert fast.held == 0 and not fast._arrivals
    assert _state(fast) == _state(slow) == ({}, {}, {}, {}, [], set(), {})
