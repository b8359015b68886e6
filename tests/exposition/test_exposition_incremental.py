"""Scrape after scrape, the incremental render equals a render from scratch of the same aggregates.

The exposition finds changed cells by comparing each cell with its copy from the
last render and re-sums only their series; a missed change would leave a stale
series, so every step is compared with a fresh ``Exposition``.
"""

from __future__ import annotations

import functools
import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.engine.pipeline import Pipeline
from exporter.exposition.render import Exposition
from exporter.prices.table import PriceTable, load_price_table
from tests.support import oracle

PRICES = Path(__file__).resolve().parents[1] / "fixtures" / "engine" / "prices_two_versions.yaml"


@functools.cache
def prices() -> PriceTable:
    return load_price_table(PRICES)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), steps=st.lists(st.integers(0, 60), min_size=1, max_size=6),
       openmetrics=st.booleans())
def test_every_scrape_equals_a_fresh_render(seed: int, steps: list[int], openmetrics: bool) -> None:
    lines = oracle.generate_log(random.Random(seed), sum(steps))
    pipeline = Pipeline(prices())
    incremental = Exposition(pipeline.month_of.start)
    fed = 0
    for size in steps:
        pipeline.ingest_lines([line.rstrip(b"\n") for line in lines[fed:fed + size]])
        fed += size
        got = incremental.render(pipeline.aggregates, (), openmetrics)
        fresh = Exposition(pipeline.month_of.start).render(pipeline.aggregates, (), openmetrics)
        assert got == fresh
