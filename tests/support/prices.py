"""Small price tables for tests: one openai family, gpt-4o at the given input rate."""

from __future__ import annotations

VERSION = """\
  - version: "{version}"
    effective_from: "{start}T00:00:00Z"
    families:
      openai: {{}}
    models:
      gpt-4o:
        family: openai
        input: {rate}
        output: 10.0
"""
HEAD = "schema: llm-savings-prices/v1\nversions:\n"


def price_table(*versions: tuple[str, str], rate: float = 2.0) -> str:
    """A table with one entry per (version, effective date) pair, in the order given."""
    return HEAD + "".join(VERSION.format(version=name, start=start, rate=rate) for name, start in versions)


def one_version(version: str, rate: float = 2.0) -> str:
    """A table with the single version ``version``, effective from 2026-01-01."""
    return price_table((version, "2026-01-01"), rate=rate)
