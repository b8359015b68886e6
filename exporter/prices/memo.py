"""The memo behind ``PriceTable.lookup``: each request's rates without re-deriving them.

A lookup's result depends on the version (by ``ts``), the name, the provider and
the service tier, then, for a v2 model with prompt tiers or time windows, on two
small numbers only: which prompt tier the prompt falls in and which window holds
the local time. So the table keeps, per (version index, name, provider, service
tier), either the final result or a ``Plan`` that finds those two numbers (a bisect
over the tier thresholds; the local minute of the day from a cached UTC offset
and a 1440-entry table of the first window holding each minute) and returns the
result it memoised for them. A miss prices through ``priced_as``, the reference
path, so a memoised result is the object the uncached lookup returns.

The memo sits above ``PriceVersion.resolve``: it keeps whatever a name resolved
to, so it is bounded like the name cache (unknown names are unbounded).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from datetime import datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING

from exporter.prices.tiers import ModelTiers, Window, _zone, priced_as

if TYPE_CHECKING:
    from exporter.prices.table import PricedModel, PriceTable

MAX_ENTRIES = 100_000  # per table, like its name cache: unknown names and tiers are unbounded
MINUTES_PER_DAY = 1440
_BUCKET = 900  # seconds; a quarter hour whose two ends differ in offset holds a transition: not cached
_SECOND = timedelta(seconds=1)


# What a lookup's result depends on besides the prompt size and the time of day: the version's index
# (-1 before the first), the name, the provider, the service tier. A bare tuple: the per-request key.
Key = tuple[int, str, str | None, str | None]


def whole_second(ts: float) -> int:
    """The UTC second ``datetime.fromtimestamp(ts)`` shows: ``ts`` rounded half-even to microseconds first."""
    frac, whole = math.modf(ts)
    micro = round(frac * 1e6)
    if micro >= 1_000_000:
        return int(whole) + 1
    return int(whole) - 1 if micro < 0 else int(whole)


class ZoneClock:
    """The local minute of the day in one zone, from UTC offsets cached per quarter hour."""

    __slots__ = ("_offsets", "zone")

    def __init__(self, zone: str) -> None:
        self.zone = _zone(zone)
        self._offsets: dict[int, int] = {}

    def offset(self, second: int) -> int:
        """The zone's UTC offset in seconds at a UTC second."""
        found = datetime.fromtimestamp(second, self.zone).utcoffset()
        return 0 if found is None else found // _SECOND

    def minute(self, ts: float) -> int:
        """The local minute of the day ``datetime.fromtimestamp(ts, zone)`` shows (hour * 60 + minute)."""
        second = whole_second(ts)
        bucket = second // _BUCKET
        offset = self._offsets.get(bucket)
        if offset is None:
            start = bucket * _BUCKET
            offset = self.offset(start)
            if offset != self.offset(start + _BUCKET - 1):  # a transition inside: this second's own
                return (second + self.offset(second)) // 60 % MINUTES_PER_DAY
            if len(self._offsets) >= MAX_ENTRIES:
                self._offsets.clear()
            self._offsets[bucket] = offset
        return (second + offset) // 60 % MINUTES_PER_DAY


@lru_cache(maxsize=1024)  # one per distinct model's windows: the plans of its versions and tiers share it
def window_table(windows: tuple[Window, ...], zone: str) -> bytes:
    """Per local minute of the day in ``zone``: 1 + the index of the first window of it holding it, else 0."""
    table = bytearray(MINUTES_PER_DAY)
    for minute in range(MINUTES_PER_DAY):
        for index, window in enumerate(windows):
            if window.zone == zone and window.holds(minute):
                table[minute] = index + 1
                break
    return bytes(table)


class Plan:
    """One (version, name, provider, service tier) of a model whose prompt size or time of day changes its rates."""

    __slots__ = ("aboves", "base", "clock", "clocks", "minutes", "prompt_only", "service_tier", "slots", "table",
                 "width", "windows")

    def __init__(self, table: PriceTable, base: PricedModel, service_tier: str | None, tiers: ModelTiers) -> None:
        self.table, self.base, self.service_tier = table, base, service_tier
        self.aboves = [tier.above for tier in tiers.rate_set(service_tier)[0].tiers]
        zones = list(dict.fromkeys(window.zone for window in tiers.windows))
        # one zone (the usual case): its table names the window; several: the first window holding the time
        self.clocks = [_clock(zone) for zone in zones]
        self.windows = [window_table(tiers.windows, zone) for zone in zones]
        # the one zone's clock and table, read by ``at`` without going through ``window``; None: 0 or 2+ zones
        self.clock = self.clocks[0] if len(zones) == 1 else None
        self.minutes = self.windows[0] if len(zones) == 1 else b""
        self.width = len(tiers.windows) + 1
        # no time windows: the slot is the prompt tier's alone (width 1), which PriceTable.lookup reads inline
        self.prompt_only = not tiers.windows
        empty: list[PricedModel | None] = [None]
        self.slots = empty * (len(self.aboves) + 1) * self.width

    def window(self, ts: float) -> int:
        """1 + the index of the window holding ``ts`` (``ModelTiers.window_at``), 0 for none."""
        if len(self.clocks) == 1:
            return self.windows[0][self.clocks[0].minute(ts)]
        found = [table[clock.minute(ts)] for clock, table in zip(self.clocks, self.windows, strict=True)]
        return min((index for index in found if index), default=0)

    def at(self, ts: float, prompt_tokens: int) -> PricedModel:
        """The rates for this prompt size and time: memoised per (prompt tier, window)."""
        slot = bisect_left(self.aboves, prompt_tokens) * self.width
        clock = self.clock
        if clock is not None:
            slot += self.minutes[clock.minute(ts)]
        elif self.clocks:
            slot += self.window(ts)
        hit = self.slots[slot]
        if hit is None:
            hit = self.slots[slot] = priced_as(self.table, self.base, ts, self.service_tier, prompt_tokens)
        return hit


_CLOCKS: dict[str, ZoneClock] = {}


def _clock(zone: str) -> ZoneClock:
    """One clock per zone name, shared by every table and model (zones come from validated tables: few)."""
    found = _CLOCKS.get(zone)
    if found is None:
        found = _CLOCKS[zone] = ZoneClock(zone)
    return found


def plan(table: PriceTable, key: Key, memo: dict[Key, PricedModel | str | Plan]) -> PricedModel | str | Plan:
    """What ``key`` prices as: a final result, or a ``Plan`` when the prompt size or time of day still matter."""
    index, model, provider, service_tier = key
    base = table._lookup(model, table._starts[index] if index >= 0 else -math.inf, provider)
    found: PricedModel | str | Plan
    if isinstance(base, str):
        found = base
    else:
        tiers = table.versions[index].tiers.get(base.model)
        if tiers is not None and (tiers.rate_set(service_tier)[0].tiers or tiers.windows):
            found = Plan(table, base, service_tier, tiers)
        elif service_tier is None and tiers is None:
            found = base
        else:  # no tier or window can change it: any time and prompt size price alike
            found = priced_as(table, base, table._starts[index], service_tier, 0)
    if len(memo) >= MAX_ENTRIES:  # start again rather than stop caching (junk names must not slow every lookup)
        memo.clear()
    memo[key] = found
    return found


__all__ = ["Key", "Plan", "ZoneClock", "plan", "whole_second", "window_table"]
