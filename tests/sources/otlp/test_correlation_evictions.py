"""The correlation memory counts what its cap forgets early, and only that.

Above a few hundred model-call spans a second the entry cap, not the window,
decides how long the memory lasts; a span of a call arriving after its
partner was forgotten is then counted as a call of its own. The count of
entries the cap forgot inside their window is what makes that visible
(``llm_savings_otlp_correlation_evicted_total``); entries that aged out are
the window working as documented and are not counted.
"""

from __future__ import annotations

from exporter.sources.otlp.correlate import evicted_early
from exporter.sources.otlp.correlator import MAX_ENTRIES, Member, SpanCorrelator
from exporter.sources.otlp.mapping import map_spans
from exporter.sources.otlp.spans import MappingOptions, SpanView


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _member(trace: int, span: int = 1, parent: int = 0, request_id: str | None = None) -> Member:
    """A model call with usage (two entries: its own and its fingerprint's)."""
    key = f"{trace:032x}:{span:016x}"
    parent_key = f"{trace:032x}:{parent:016x}" if parent else ""
    return Member(key, parent_key, "openai", (100 + trace, 0, 0, 7), "gpt-4o", 10**18 + trace * 10**10,
                  None, request_id or f"own-{trace}-{span}", (1, 0, 0))


def _request(correlator: SpanCorrelator, *members: Member) -> None:
    correlator.resolve([(m.key, m.parent_key) for m in members], list(members))


def test_the_cap_forgetting_entries_inside_the_window_is_counted() -> None:
    clock = FakeClock()
    correlator = SpanCorrelator(clock=clock, max_entries=4)
    for trace in range(1, 4):  # 2 entries each; checked as a request arrives: 6 held after the third
        _request(correlator, _member(trace))
    assert (correlator.held, correlator.evicted_early) == (6, 0)
    clock.now = 1.0
    _request(correlator, _member(4))  # 6 > 4 on arrival: the oldest two go, well inside 120 s
    assert (correlator.held, correlator.evicted_early) == (6, 2)
    clock.now = 2.0
    _request(correlator, _member(5), _member(6))
    assert (correlator.held, correlator.evicted_early) == (8, 4)


def test_entries_that_aged_out_are_not_counted_even_beyond_the_cap() -> None:
    clock = FakeClock()
    correlator = SpanCorrelator(clock=clock, max_entries=4)
    for trace in range(1, 4):
        _request(correlator, _member(trace))
    clock.now = 121.0  # all six are older than the window (and beyond the cap): aged, not evicted early
    _request(correlator, _member(9))
    assert (correlator.held, correlator.evicted_early) == (2, 0)
    clock.now = 242.0
    _request(correlator, _member(10))
    assert (correlator.held, correlator.evicted_early) == (2, 0)


def test_a_child_arriving_after_the_cap_forgot_its_parent_is_a_call_of_its_own() -> None:
    """The harm the counter reports: with room the child joins its parent's call, without it counts again."""
    for room, evicted, joined in ((MAX_ENTRIES, 0, True), (2, 2, False)):
        clock = FakeClock()
        correlator = SpanCorrelator(clock=clock, max_entries=room)
        _request(correlator, _member(1, span=1, request_id="first"))
        _request(correlator, _member(2))  # unrelated traffic: 4 entries held
        clock.now = 5.0
        child = _member(1, span=2, parent=1, request_id="child")
        _request(correlator, child)
        assert correlator.evicted_early == evicted
        assert (child.request_id == "first") is joined


def _spans(request: int) -> list[SpanView]:
    spans = []
    for i in range(10):
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                 "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 100 + i,
                 "gen_ai.usage.output_tokens": 7}
        spans.append(SpanView(attrs, {}, "opentelemetry.instrumentation.openai_v2", f"{request:016x}{i:016x}",
                              f"{i + 1:016x}", 10**18, 10**18 + 10**9))
    return spans


def test_the_options_cap_reaches_the_correlator_and_its_count_is_read_back() -> None:
    options = MappingOptions(correlation_max_entries=25)
    assert evicted_early(options) == 0  # no memory yet
    for request in range(3):  # 20 entries a request (10 model calls and their fingerprints)
        assert len(map_spans(_spans(request), options).records) == 10
    correlator = options._memory["correlator"]
    assert isinstance(correlator, SpanCorrelator)
    assert correlator.max_entries == 25
    # on arrival of the second request 20 held (<= 25), of the third 40: the oldest 15 forgotten
    assert evicted_early(options) == correlator.evicted_early == 15
    assert MappingOptions().correlation_max_entries == MAX_ENTRIES == 65536


def test_a_span_placed_again_in_another_family_leaves_nothing_behind() -> None:
    """A span id sent twice with usages that cannot be one call (or retried with another usage) is
    placed in a second family. Each of its entries forgets the family it placed: the older one used
    to forget the newer family, and the older family was never forgotten, by the window or the cap."""
    clock = FakeClock()
    options = MappingOptions(correlation_max_entries=100)
    options._memory["correlator"] = correlator = SpanCorrelator(clock=clock, max_entries=100)

    def twice(span: int, tokens: int) -> SpanView:
        attrs = {"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o",
                 "gen_ai.usage.input_tokens": tokens, "gen_ai.usage.output_tokens": 7}
        return SpanView(attrs, {}, "opentelemetry.instrumentation.openai_v2", "ab" * 16, f"{span:016x}", 1, 2)

    for span in range(1, 501):
        clock.now += 0.01
        assert len(map_spans([twice(span, 100), twice(span, 200)], options).records) == 2
    assert len(correlator._families) <= 100  # the cap holds: at most one family per entry
    clock.now += 1000  # past the window
    map_spans([twice(10**6, 1)], options)
    assert len(correlator._families) == len(correlator._family_of) == 1 and correlator.held == 2
