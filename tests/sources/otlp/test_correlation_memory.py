"""The correlation memory holds nothing the garbage collector walks per entry.

At its 65,536 entries the memory's prints and families, as objects, were most
of what each full collection walked (72 ms a time, a quarter of the
receiver's CPU per span); as plain tuples of strings and numbers the collector
untracks them. A dataclass or NamedTuple put back in their place stays
tracked, and this fails.
"""

from __future__ import annotations

import gc

from exporter.sources.otlp.correlator import SpanCorrelator
from exporter.sources.otlp.mapping import map_spans
from exporter.sources.otlp.spans import MappingOptions, SpanView


def _spans(request: int) -> list[SpanView]:
    spans = []
    for i in range(40):
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                 "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 100 + i,
                 "gen_ai.usage.output_tokens": 7}
        trace = f"{request:016x}{i:016x}"
        spans.append(SpanView(attrs, {}, "opentelemetry.instrumentation.openai_v2", trace, f"{i + 1:016x}",
                              10**18, 10**18 + 10**9, "00000000000000ff"))
    return spans


def test_remembered_prints_families_and_entries_are_untracked() -> None:
    options = MappingOptions()
    for request in range(5):
        result = map_spans(_spans(request), options)
        assert len(result.records) == 40
    correlator = options._memory["correlator"]
    assert isinstance(correlator, SpanCorrelator)
    for _ in range(3):  # the collector untracks a tuple of atoms when it looks at it: at worst one
        gc.collect()    # nesting level a pass (an entry holds a pair of tuples)
    prints = correlator._prints.prints()
    families = list(correlator._families.values())
    entries = [entry for arrival in correlator._arrivals for entry in arrival.prints]
    assert len(prints) == len(families) == len(entries) == 200 and correlator.held >= 600
    tracked = [x for x in (*prints, *families, *entries) if gc.is_tracked(x)]
    assert tracked == []
