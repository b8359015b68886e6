"""A small price table and a pipeline fed with canonical lines, for the report's tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from exporter.engine.pipeline import Pipeline
from exporter.prices.table import PriceTable, parse_price_table

PRICES = """\
schema: llm-savings-prices/v1
versions:
  - version: "v1"
    effective_from: "2026-01-01T00:00:00Z"
    families:
      openai: {}
    models:
      gpt-4o:
        family: openai
        input: 2.0
        output: 10.0
        cache_read: 1.0
      claude-x:
        family: openai
        input: 3.0
        output: 15.0
        cache_read: 0.3
"""


@pytest.fixture
def prices() -> PriceTable:
    return parse_price_table(PRICES, "test-prices.yaml")


@pytest.fixture
def prices_file(tmp_path: Path) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(PRICES)
    return path


def line(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


@pytest.fixture
def counted(prices: PriceTable) -> Callable[[list[bytes]], Pipeline]:
    def count(lines: list[bytes]) -> Pipeline:
        pipeline = Pipeline(prices)
        pipeline.ingest_lines(lines)
        return pipeline

    return count
