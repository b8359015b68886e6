"""Model names as gateways send them, built from genai-prices' own match rules.

A rule's literals are the names a provider lists; a request names them with a
date (``claude-sonnet-4-5-20250929``), a revision (``gemini-2.0-flash-001``),
another case, or text around a prefix/substring rule. Both the hypothesis
strategies and the seeded equality test draw from these.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

_DASHED = re.compile(r"-(20\d\d)-(\d\d)-(\d\d)(?=-|:|$)")

SUFFIXES = ("", "-2025-09-29", "-20250929", "-20241120", "-001", "-002", "-latest", "-preview", ":free", "-v1:0",
            "-exp-0827", "-20251399")  # the last: not a date (genai-prices leaves it alone)
PREFIXES = ("", "us.", "eu.", "global.", "models/", "openai/", "x-")


def rule_parts(rule: Any) -> Iterator[tuple[str, str]]:
    """(kind, literal) of every literal clause in a genai-prices rule (regexes are matched, not built)."""
    for kind in ("equals", "starts_with", "ends_with", "contains"):
        if isinstance(getattr(rule, kind, None), str):
            yield kind, getattr(rule, kind)
    for sub in (*(getattr(rule, "or_", None) or ()), *(getattr(rule, "and_", None) or ())):
        yield from rule_parts(sub)


def variants(kind: str, literal: str, prefix: str, suffix: str, upper: bool) -> str:
    """One name a clause of ``kind`` could meet: the literal with text around it where the kind allows
    (anything around an ``equals`` literal is junk, which ``names_for`` draws apart)."""
    name = literal
    if kind in ("starts_with", "contains"):
        name = name + suffix
    if kind in ("ends_with", "contains"):
        name = prefix + name
    if kind == "equals" and suffix == "-20250929":  # a listed dated name, sent in LiteLLM's compact form
        name = _DASHED.sub(r"-\1\2\3", name)
    return name.upper() if upper else name


def seeded_names(rng: random.Random, rule: Any, model_id: str, n: int) -> list[str]:
    """``n`` names around a rule's literals and its model's id (seeded, for the equality test)."""
    parts = [*rule_parts(rule), ("equals", model_id)]
    out = []
    for _ in range(n):
        kind, literal = rng.choice(parts)
        out.append(variants(kind, literal, rng.choice(PREFIXES), rng.choice(SUFFIXES), rng.random() < 0.1))
    return out


@st.composite
def names_for(draw: st.DrawFn, rule: Any, model_id: str) -> str:
    """A hypothesis name built from one of the rule's literals, or junk."""
    parts = [*rule_parts(rule), ("equals", model_id)]
    if draw(st.integers(0, 9)) == 0:
        return draw(st.text(alphabet=st.characters(codec="ascii", categories=("L", "N", "P")), max_size=40))
    kind, literal = draw(st.sampled_from(parts))
    prefix = draw(st.sampled_from(PREFIXES) | st.text(alphabet="abc-/.", max_size=4))
    suffix = draw(st.sampled_from(SUFFIXES) | st.text(alphabet="0123456789-.:abz", max_size=10))
    return variants(kind, literal, prefix, suffix, draw(st.integers(0, 9)) == 0)
