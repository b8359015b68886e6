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

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.sources.otlp.correlator import NATIVE, Member, SpanCorrelator
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
    # past 2**63 too: the C loop's exact arithmetic where a 64-bit difference would overflow
    "end": st.sampled_from([10**18, 10**18 + 5 * 10**8, 10**18 + 10**9, 10**18 + 3 * 10**9, 2**64 - 1,
                            2**64 - 10**8, 0]),
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
            correlator._prints.queues, sorted(correlator._prints.prints()), correlator._prints.matched,
            {key: rid for key, rid in correlator._seen_ids.items() if rid is not None})


# The product's memory with its inner loop in C (when built) and in Python: each against the reference.
WAYS = [pytest.param(True, id="c-loop", marks=pytest.mark.skipif(not NATIVE, reason="_correlator.c not built")),
        pytest.param(False, id="python-loop")]


def test_the_c_loop_is_built_here() -> None:
    """The install this suite runs in has a C compiler: the C loop must be there, or its test above proves nothing."""
    assert NATIVE


@pytest.mark.parametrize("native", WAYS)
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(REQUEST, min_size=1, max_size=14), st.sampled_from([0, 1, 2, 3, 5, 8, 13, 1000]),
       st.sampled_from([120.0, 1.0, 0.0]))
def test_the_bulk_memory_decides_as_the_one_queue_memory(
    native: bool, requests: list[tuple[float, list[Any], bool]], cap: int, window: float
) -> None:
    clock = Clock()
    fast = SpanCorrelator(clock=clock, max_entries=cap, window_seconds=window, native=native)
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
    assert _state(fast) == _state(slow) == ({}, {}, {}, {}, {}, [], set(), {})


@pytest.mark.parametrize("native", WAYS)
@pytest.mark.parametrize(("first_id", "second_id", "merged"), [
    (None, None, True), ("resp-1", None, True), (None, "resp-2", True), ("resp-1", "resp-2", False)])
@pytest.mark.parametrize("gap_ns", [0, 10**9, 10**9 + 1])
def test_a_fingerprint_joins_two_dialects_unless_both_spans_carry_response_ids(
    native: bool, first_id: str | None, second_id: str | None, merged: bool, gap_ns: int
) -> None:
    """Rule (c) directly: one model and usage, two dialects, two traces; never two response ids, and
    only within the end tolerance (1 s, inclusive). The first print is alone, then one of a queue."""
    for crowd in (0, 3):  # prints of the same fingerprint and dialect before it: the queues' path
        correlator = SpanCorrelator(clock=Clock(), native=native)
        usage = (100, 0, 0, 7)
        for n in range(crowd):
            correlator.resolve([], [Member(f"{'c' * 32}:{n:016x}", "", "gen_ai", usage, "m", 5 * 10**18 + n,
                                           None, f"crowd-{n}", (0, 0, 0))])
        first = Member("a" * 32 + ":" + "1" * 16, "", "gen_ai", usage, "gpt-4o", 10**18, first_id, "one", (0, 0, 0))
        second = Member("b" * 32 + ":" + "2" * 16, "", "openinference", usage, "GPT-4o", 10**18 + gap_ns, second_id,
                        "two", (0, 0, 0))
        correlator.resolve([], [first])
        correlator.resolve([], [second])
        joined = merged and gap_ns <= 10**9
        assert (second.family == first.family) is joined
        assert second.request_id == ("one" if joined else "two")
