"""Pytest fixtures over the committed dialect fixtures, for the OTLP mapping tests.

    from tests.live.pytest_fixtures import captured_case  # noqa: F401  (makes the fixture visible)

    def test_mapping(captured_case):
        case = captured_case("anthropic_native", "create_cache_read")
        case.spans    # decoded spans (tests.live.spans.Span)
        case.calls    # the fake provider's ground truth
        case.doc["requests"]  # the raw OTLP/HTTP bodies, base64
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.live.spans import FIXTURES, Case, cases, load_case


@pytest.fixture
def captured_case() -> Callable[[str, str], Case]:
    return load_case


def all_cases() -> list[tuple[str, str]]:
    """Every committed (dialect, case) with spans, for ``pytest.mark.parametrize``."""
    dialects = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) if FIXTURES.exists() else []
    return [(d, c) for d in dialects for c in cases(d)]
