"""The month of a timestamp in the configured time zone: the ``month`` label of every series."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo


class MonthOf:
    """``ts`` -> "YYYY-MM" in a time zone, cached per 15 minutes.

    Every real zone's offset is a multiple of 15 minutes, so a month boundary
    never falls inside one of these buckets.
    """

    def __init__(self, timezone: str = "UTC") -> None:
        self.zone = ZoneInfo(timezone)
        self._cache: dict[int, str] = {}

    def __call__(self, ts: float) -> str:
        bucket = int(ts // 900)
        month = self._cache.get(bucket)
        if month is None:
            if len(self._cache) > 200_000:
                self._cache.clear()
            month = datetime.fromtimestamp(bucket * 900, self.zone).strftime("%Y-%m")
            self._cache[bucket] = month
        return month

    def start(self, month: str) -> float:
        """Epoch seconds of the month's first instant in this zone (the series' ``_created``)."""
        year, mon = int(month[:4]), int(month[5:7])
        return datetime(year, mon, 1, tzinfo=self.zone).timestamp()
