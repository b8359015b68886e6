"""The memoised lookup (prices.memo) returns what the uncached computation returns, field by field.

One table is shared by every example, so its memo is warm with earlier requests (other
times, prompt sizes, service tiers) when a request is checked; the reference is the lookup
without any memo: ``_lookup`` (version and name) then ``priced_as`` (tiers, windows) on a
table of its own.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import example, given, settings
from hypothesis import strategies as st

from exporter.prices.memo import ZoneClock, whole_second, window_table
from exporter.prices.table import PricedModel, PriceTable, load_price_table, parse_price_table
from exporter.prices.tiers import Window, priced_as

TABLE = """\
schema: llm-savings-prices/v2
versions:
  - version: "a"
    effective_from: "2025-01-01T00:00:00Z"
    families: {f: {cache_write_5m_multiplier: 1.25}}
    models:
      "gem":
        family: f
        aliases: [gem-latest]
        input: 1.25
        output: 10.0
        cache_read: 0.125
        tiers:
          - {above: 200000, input: 2.5, output: 15.0}
          - {above: 1000000, input: 5.0}
        service_tiers:
          batch: {multiplier: 0.5}
          priority: {input: 2.5, output: 20.0, tiers: [{above: 128000, input: 4.0}]}
      "ds":  # two zones: the first window holding the time wins
        input: 0.27
        output: 1.1
        time_windows:
          - {name: night_cn, zone: "Asia/Shanghai", start: "00:30", end: "08:30", multiplier: 0.5}
          - {name: evening_ny, zone: "America/New_York", start: "18:00", end: "02:00", input: 0.1}
        service_tiers:
          flex: {multiplier: 0.5}
      "nyc":  # a zone with daylight saving time, a window wrapping midnight, tiers too
        input: 3.0
        output: 15.0
        tiers: [{above: 200000, input: 6.0}]
        time_windows:
          - {name: late, zone: "America/New_York", start: "22:15", end: "01:45", multiplier: 0.25}
          - {name: dawn, zone: "America/New_York", start: "05:00", end: "06:00", output: 7.0}
      "gpt":
        input: 1.25
        output: 10.0
        service_tiers:
          flex: {input: 0.625, output: 5.0}
          batch: {multiplier: 0.5}
      "acme/qual": {input: 2.0, output: 4.0}
      "plain": {input: 1.0, output: 2.0}
  - version: "b"
    effective_from: "2025-07-01T00:00:00Z"
    models:
      "gem":
        input: 1.5
        output: 12.0
        tiers: [{above: 200000, input: 3.0}]
      "nyc":
        input: 3.0
        output: 15.0
        time_windows: [{name: late, zone: "America/New_York", start: "22:15", end: "01:45", multiplier: 0.5}]
      "plain": {input: 1.0, output: 2.5}
"""
START = datetime(2025, 1, 1, tzinfo=UTC).timestamp()
SHARED = parse_price_table(TABLE, "memo.yaml")
REFERENCE = parse_price_table(TABLE, "memo.yaml")
NAMES = ["gem", "gem-latest", "ds", "nyc", "gpt", "qual", "acme/qual", "plain", "nope", ""]
SERVICE_TIERS = [None, "default", "batch", "priority", "flex", "scale"]
BOUNDARIES = [0, 1, 128_000, 128_001, 200_000, 200_001, 1_000_000, 1_000_001]
NUDGES = [0.0, -1e-6, -5e-7, -4e-7, 4e-7, 5e-7, 1e-6, -1.0, 59.0, 59.9999996, 60.0]


def _reference(table: PriceTable, model: str, ts: float, provider: str | None, service_tier: str | None,
               prompt_tokens: int) -> PricedModel | str:
    """The lookup as computed without the memo: version and name, then tiers, service tier and window."""
    base = table._lookup(model, ts, provider)
    if isinstance(base, str) or (service_tier is None and not any(v.tiers for v in table.versions)):
        return base
    return priced_as(table, base, ts, service_tier, prompt_tokens)


def _edges() -> list[float]:
    """UTC times of every window edge (each local day, both sides of DST changes) in the table's span."""
    out = [START, datetime(2025, 7, 1, tzinfo=UTC).timestamp()]
    for zone, clocks in (("Asia/Shanghai", ["00:30", "08:30"]),
                         ("America/New_York", ["18:00", "02:00", "22:15", "01:45", "05:00", "06:00"])):
        for day in (datetime(2024, 12, 31), datetime(2025, 3, 8), datetime(2025, 3, 9), datetime(2025, 3, 10),
                    datetime(2025, 6, 30), datetime(2025, 11, 1), datetime(2025, 11, 2), datetime(2025, 11, 3)):
            for clock in clocks:
                hour, minute = map(int, clock.split(":"))
                local = (day + timedelta(hours=hour, minutes=minute)).replace(tzinfo=ZoneInfo(zone))
                out.append(local.timestamp())
    return out


times = st.one_of(
    st.floats(START - 86400 * 60, START + 86400 * 500, allow_nan=False),
    st.builds(lambda edge, nudge: edge + nudge, st.sampled_from(_edges()), st.sampled_from(NUDGES)),
)
prompts = st.one_of(st.sampled_from(BOUNDARIES), st.integers(0, 2_000_000))


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(NAMES), times, st.sampled_from([None, "acme"]), st.sampled_from(SERVICE_TIERS), prompts)
@example("gem", START - 1.0, None, None, 0)  # before the first version
@example("nope", START + 10, None, "batch", 300_000)  # unknown name
def test_memoised_lookup_equals_the_uncached_one(model, ts, provider, service_tier, prompt_tokens):
    found = SHARED.lookup(model, ts, provider, service_tier=service_tier, prompt_tokens=prompt_tokens)
    again = SHARED.lookup(model, ts, provider, service_tier=service_tier, prompt_tokens=prompt_tokens)
    expected = _reference(REFERENCE, model, ts, provider, service_tier, prompt_tokens)
    assert found == expected  # PricedModel: every field, provenance (tier, service_tier, window) included
    assert again is found
    if isinstance(found, PricedModel):  # the engine's rate ids: one object per distinct rate set, as before
        assert _reference(SHARED, model, ts, provider, service_tier, prompt_tokens) is found


def test_a_warm_memo_still_tells_windows_and_tiers_apart():
    """The same name and service tier at other times and prompt sizes get their own rates."""
    table = parse_price_table(TABLE, "memo.yaml")
    night = datetime(2025, 8, 1, 3, 0, tzinfo=ZoneInfo("America/New_York")).timestamp() - 2 * 3600  # 01:00
    day = night + 12 * 3600
    seen = [table.lookup("nyc", ts, prompt_tokens=p) for ts in (night, day) for p in (10, 300_000)]
    assert [(p.window, p.input) for p in seen if isinstance(p, PricedModel)] == [
        ("late", 1.5), ("late", 1.5), ("", 3.0), ("", 3.0)]  # version b: no prompt tier
    before = datetime(2025, 3, 1, 23, 0, tzinfo=ZoneInfo("America/New_York")).timestamp()
    tiered = [table.lookup("nyc", before, prompt_tokens=p) for p in (200_000, 200_001)]
    assert [(p.window, p.tier, p.input) for p in tiered if isinstance(p, PricedModel)] == [
        ("late", "", 0.75), ("late", "above_200000", 1.5)]


def test_one_zone_plans_read_their_zone_table_as_window_does():
    """``Plan.at`` reads a one-zone model's table directly; every 7th minute of two days (a DST change too,
    all in version a: a plan is one version's) it names the window ``Plan.window`` names and prices as the
    uncached lookup; a plan of two zones keeps going through ``window``."""
    from exporter.prices.memo import Plan, plan

    table = parse_price_table(TABLE, "memo.yaml")
    one = plan(table, (0, "nyc", None, None), table._memo)
    two = plan(table, (0, "ds", None, None), table._memo)
    assert isinstance(one, Plan) and isinstance(two, Plan)
    assert one.clock is one.clocks[0] and one.minutes == one.windows[0]
    assert two.clock is None and len(two.clocks) == 2
    named = set()
    for day in (datetime(2025, 1, 15, tzinfo=UTC), datetime(2025, 3, 9, tzinfo=UTC), datetime(2025, 6, 28, tzinfo=UTC)):
        for minute in range(0, 2 * 1440, 7):
            ts = day.timestamp() + minute * 60 + 0.5
            assert one.clock.minute(ts) == (datetime.fromtimestamp(ts, ZoneInfo("America/New_York")).hour * 60
                                            + datetime.fromtimestamp(ts, ZoneInfo("America/New_York")).minute)
            named.add(one.minutes[one.clock.minute(ts)])
            assert one.minutes[one.clock.minute(ts)] == one.window(ts)
            assert one.at(ts, 10) == _reference(REFERENCE, "nyc", ts, None, None, 10)
    assert named == {0, 1, 2}  # no window, late, dawn: each was met


def test_a_full_memo_starts_again_and_keeps_caching(monkeypatch):
    """Junk model names fill the memo; it is emptied, not frozen, so the names in use stay one dict hit."""
    from exporter.prices import memo

    monkeypatch.setattr(memo, "MAX_ENTRIES", 16)
    table = load_price_table(None)
    ts = table.newest.effective_from + 60
    for i in range(40):
        assert table.lookup(f"junk-{i}", ts) == "unknown_model"
    name = next(iter(table.newest.models))
    found = table.lookup(name, ts)
    assert found is table.newest.models[name]
    assert len(table._memo) <= 16
    assert any(key[1] == name for key in table._memo), "the name in use is cached again"


def test_v1_table_lookup_is_the_resolved_model():
    table = load_price_table(None)
    newest = table.newest
    for name in list(newest.models)[:50]:
        found = table.lookup(name, newest.effective_from + 3600)
        assert found is newest.models[name]
        assert table.lookup(name, newest.effective_from + 7200, service_tier="batch") == _reference(
            table, name, newest.effective_from + 7200, None, "batch", 0)
    assert table.lookup("no-such-model", newest.effective_from) == "unknown_model"
    assert table.lookup(next(iter(newest.models)), table.versions[0].effective_from - 1) == "before_first_version"


@settings(max_examples=800, deadline=None)
@given(st.one_of(st.floats(-4e9, 4e9, allow_nan=False),
                 st.builds(lambda n, nudge: n + nudge, st.integers(-10**6, 10**6).map(lambda k: k * 60.0 + 1.7e9),
                           st.sampled_from(NUDGES))),
       st.sampled_from(["UTC", "America/New_York", "Asia/Shanghai", "Australia/Lord_Howe", "Asia/Kathmandu",
                        "Europe/Dublin"]))
def test_zone_clock_shows_the_minute_datetime_shows(ts, zone):
    local = datetime.fromtimestamp(ts, ZoneInfo(zone))
    assert ZoneClock(zone).minute(ts) == local.hour * 60 + local.minute
    shown = datetime.fromtimestamp(ts, UTC)
    assert whole_second(ts) == int((shown.replace(microsecond=0) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds())


def test_zone_clock_across_a_dst_change_minute_by_minute():
    clock, zone = ZoneClock("America/New_York"), ZoneInfo("America/New_York")
    change = datetime(2025, 11, 2, 6, 0, tzinfo=UTC).timestamp()  # 02:00 EDT -> 01:00 EST
    for step in range(-200, 200):
        ts = change + step * 37.5
        local = datetime.fromtimestamp(ts, zone)
        assert clock.minute(ts) == local.hour * 60 + local.minute, ts


def test_window_table_names_the_first_window_holding_each_minute():
    windows = (Window("a", "UTC", 60, 120, 0.5, ()), Window("b", "UTC", 90, 30, None, (("input", 1.0),)),
               Window("c", "Asia/Tokyo", 0, 1439, 0.1, ()))
    table = window_table(windows, "UTC")
    shown = [table[minute] for minute in (59, 60, 119, 120, 1439, 0, 30, 29)]
    assert shown == [0, 1, 1, 2, 2, 2, 0, 2]
    assert set(window_table(windows, "Asia/Tokyo")) == {0, 3}


def test_zone_clock_across_a_change_off_the_quarter_hour():
    """Monrovia left its -0:44:30 offset at 00:44:30 UTC: the quarter hour holding it is not cached."""
    clock, zone = ZoneClock("Africa/Monrovia"), ZoneInfo("Africa/Monrovia")
    change = datetime(1972, 1, 7, 0, 44, 30, tzinfo=UTC).timestamp()
    for step in range(-100, 100):
        ts = change + step * 7.5
        local = datetime.fromtimestamp(ts, zone)
        assert clock.minute(ts) == local.hour * 60 + local.minute, ts


_BOUNDS = [datetime(2025, 1, 1, tzinfo=UTC).timestamp(), datetime(2025, 7, 1, tzinfo=UTC).timestamp()]
version_edges = st.builds(lambda edge, step: math.nextafter(edge, math.inf) if step == 1 else (
    math.nextafter(edge, -math.inf) if step == -1 else edge + step), st.sampled_from(_BOUNDS),
    st.sampled_from([-1, 0, 1, -86400.0, 3600.0]))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(NAMES), st.one_of(times, version_edges), st.sampled_from(SERVICE_TIERS),
                          prompts), min_size=1, max_size=30))
def test_the_last_version_window_prices_a_sequence_as_the_bisect_does(requests):
    """``lookup`` tests the window of its last version before bisecting: in any order (runs in one version,
    jumps back and forth, the first instant of a version and the float just before it) each
    request gets the version the bisect gives and the rates the uncached lookup gives."""
    table = parse_price_table(TABLE, "memo.yaml")
    for model, ts, service_tier, prompt_tokens in requests:
        found = table.lookup(model, ts, service_tier=service_tier, prompt_tokens=prompt_tokens)
        assert found == _reference(REFERENCE, model, ts, None, service_tier, prompt_tokens)
        start, end, index = table._window
        assert index == bisect_right(table._starts, ts) - 1
        assert start <= ts < end


def test_a_time_in_no_window_is_looked_up_as_the_bisect_places_it():
    """NaN and +inf are in no version's window: the bisect places them (the last version), every time, and the
    next time still finds its own version (a model without time windows: those need a finite time)."""
    table = parse_price_table(TABLE, "memo.yaml")
    for odd in (math.nan, math.inf, math.nan):
        assert table.lookup("plain", odd) is table.versions[-1].models["plain"]
        assert table.lookup("plain", _BOUNDS[0] + 60) is table.versions[0].models["plain"]
    assert table.lookup("plain", -math.inf) == "before_first_version"


def test_a_plan_of_prompt_tiers_only_is_read_inline_as_plan_at_reads_it():
    """``gem`` has prompt tiers and no windows (read inline by ``lookup``), ``nyc`` windows too (``Plan.at``);
    at every threshold and either side of it, both give the uncached lookup's rates, memoised or not."""
    from exporter.prices.memo import Plan, plan

    table = parse_price_table(TABLE, "memo.yaml")
    gem, nyc = plan(table, (0, "gem", None, "priority"), table._memo), plan(table, (0, "nyc", None, None), table._memo)
    assert isinstance(gem, Plan) and isinstance(nyc, Plan)
    assert gem.prompt_only and gem.width == 1 and not nyc.prompt_only
    ts = _BOUNDS[0] + 86400 * 3 + 0.25
    for _ in range(2):  # cold slots (through Plan.at), then warm (read inline)
        for model, service_tier in (("gem", None), ("gem", "priority"), ("gem", "batch"), ("nyc", None)):
            for prompt_tokens in BOUNDARIES:
                found = table.lookup(model, ts, service_tier=service_tier, prompt_tokens=prompt_tokens)
                assert found == _reference(REFERENCE, model, ts, None, service_tier, prompt_tokens)
    assert [slot is not None for slot in gem.slots] == [True, True]
