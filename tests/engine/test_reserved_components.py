"""A record's component named like one the engine writes (``unattributed``, ``tier_jump``) never merges into it."""

from __future__ import annotations

import json

from exporter.engine.cells import TIER_JUMP
from exporter.engine.labels import OTHER, RESERVED_COMPONENTS
from exporter.engine.pipeline import UNATTRIBUTED, Pipeline
from exporter.prices.table import load_price_table


def test_the_reserved_names_are_the_engines_own() -> None:
    assert {UNATTRIBUTED, TIER_JUMP} == RESERVED_COMPONENTS


def test_a_record_component_with_a_reserved_name_is_folded_to_other() -> None:
    pipeline = Pipeline(load_price_table())
    line = {"ts": "2026-11-10T12:00:00Z", "request_id": "r1", "model": "gpt-4o", "count_method": "provider",
            "tokens_before": 1000, "tokens_after": 400,
            "components": [{"name": "tier_jump", "tokens_saved": 100}, {"name": "unattributed", "tokens_saved": 200},
                           {"name": "trim_history", "tokens_saved": 50}]}
    pipeline.ingest_line(json.dumps(line).encode())
    assert not pipeline.last_rejection
    tokens = {key.component: value for key, value in pipeline.aggregates.components.items()}
    # the engine's own remainder is the 250 tokens no component names, not 250 + the record's "unattributed" 200
    assert tokens == {OTHER: 300, "trim_history": 50, UNATTRIBUTED: 250}
    assert pipeline.caps.component.overflow == 2
