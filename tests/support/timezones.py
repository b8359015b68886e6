"""The process switched to another time zone for one test (naive timestamps must not follow it)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

# UTC+13:45 in November, +12:45 in July: an odd offset with DST, far from UTC
CHATHAM = "Pacific/Chatham"


@pytest.fixture
def chatham(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``TZ`` set to Pacific/Chatham for the test, the process's own zone back after."""
    monkeypatch.setenv("TZ", CHATHAM)
    time.tzset()
    assert time.localtime(0).tm_gmtoff == 12 * 3600 + 45 * 60  # the zone took effect
    yield
    monkeypatch.undo()
    time.tzset()
