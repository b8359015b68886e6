"""Price table v2: prompt-size tiers, service tiers, time windows, and the exact bill."""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.prices.table import PricedModel, PriceTableError, parse_price_table
from exporter.prices.tiers import UNKNOWN_SERVICE_TIER, UsageTiers, bill

V2 = """\
schema: llm-savings-prices/v2
versions:
  - version: "2025-06-17"
    effective_from: "2025-06-17T00:00:00Z"
    families: {google: {}, anthropic: {cache_write_5m_multiplier: 1.25, cache_write_1h_multiplier: 2.0},
               openai: {}, deepseek: {}}
    models:
      "gemini-2.5-pro":
        family: google
        input: 1.25
        output: 10.0
        cache_read: 0.125
        tiers:
          - above: 200000
            input: 2.5
            output: 15.0
            cache_read: 0.25
        service_tiers:
          batch: {multiplier: 0.5}
          priority: {input: 2.5, output: 20.0, cache_read: 0.25, tiers: [{above: 200000, input: 5.0}]}
      "claude-sonnet-4-5":
        family: anthropic
        input: 3.0
        output: 15.0
        cache_read: 0.3
        cache_write_5m: 3.75
        cache_write_1h: 6.0
        tiers:
          - {above: 200000, input: 6.0, output: 22.5, cache_read: 0.6, cache_write_5m: 7.5, cache_write_1h: 12.0}
        service_tiers:
          batch: {multiplier: 0.5}
      "gpt-5":
        family: openai
        input: 1.25
        output: 10.0
        cache_read: 0.125
        service_tiers:
          flex: {input: 0.625, output: 5.0, cache_read: 0.0625}
          priority: {input: 2.5, output: 20.0, cache_read: 0.25}
          batch: {multiplier: 0.5}
      "deepseek-chat":
        family: deepseek
        input: 0.27
        output: 1.1
        cache_read: 0.07
        time_windows:
          - name: off_peak
            zone: "UTC"
            start: "16:30"
            end: "00:30"
            input: 0.135
            output: 0.55
            cache_read: 0.035
      "deepseek-reasoner":
        family: deepseek
        input: 0.55
        output: 2.19
        cache_read: 0.14
        time_windows:
          - {name: off_peak, zone: "UTC", start: "16:30", end: "00:30", multiplier: 0.25}
      "plain":
        input: 1.0
        output: 2.0
"""

JUNE = datetime(2025, 7, 1, 12, 0, tzinfo=UTC).timestamp()


def _at(hour: int, minute: int) -> float:
    return datetime(2025, 7, 1, hour, minute, tzinfo=UTC).timestamp()


@pytest.fixture(scope="module")
def table():
    return parse_price_table(V2, "v2.yaml")


def _priced(table, model, **kw) -> PricedModel:
    found = table.lookup(model, kw.pop("ts", JUNE), **kw)
    assert isinstance(found, PricedModel), found
    return found


def test_gemini_prompt_tier_whole_request(table):
    below = _priced(table, "gemini-2.5-pro", prompt_tokens=200_000)
    above = _priced(table, "gemini-2.5-pro", prompt_tokens=200_001)
    assert (below.input, below.output, below.tier) == (1.25, 10.0, "")
    assert (above.input, above.output, above.cache_read, above.tier) == (2.5, 15.0, 0.25, "above_200000")
    usage = UsageTiers(250_000, 0, 0, 0, 1_000)
    assert bill(usage, above) == Fraction(250_000 * 25, 10 * 10**6) + Fraction(1_000 * 15, 10**6)


def test_service_tiers_pick_the_rate_set_then_the_prompt_tier(table):
    batch = _priced(table, "gemini-2.5-pro", service_tier="batch", prompt_tokens=300_000)
    assert (batch.input, batch.output, batch.cache_read, batch.service_tier, batch.tier) == (
        1.25, 7.5, 0.125, "batch", "above_200000")
    priority = _priced(table, "gemini-2.5-pro", service_tier="priority", prompt_tokens=300_000)
    assert (priority.input, priority.output) == (5.0, 20.0)  # the tier's omitted output keeps priority's
    flex = _priced(table, "gpt-5", service_tier="flex")
    assert (flex.input, flex.output, flex.cache_read, flex.service_tier) == (0.625, 5.0, 0.0625, "flex")
    assert _priced(table, "gpt-5", service_tier="default") == _priced(table, "gpt-5")
    batch = _priced(table, "gpt-5", service_tier="batch")
    assert (batch.input, batch.output, batch.cache_read) == (0.625, 5.0, 0.0625)
    priority = _priced(table, "gpt-5", service_tier="priority")
    assert (priority.input, priority.output, priority.cache_read) == (2.5, 20.0, 0.25)


def test_claude_1m_context_above_200k(table):
    priced = _priced(table, "claude-sonnet-4-5", prompt_tokens=500_000)
    assert (priced.input, priced.cache_write_5m, priced.cache_write_1h) == (6.0, 7.5, 12.0)
    batch = _priced(table, "claude-sonnet-4-5", prompt_tokens=500_000, service_tier="batch")
    assert (batch.input, batch.output, batch.cache_read) == (3.0, 11.25, 0.3)


def test_unknown_service_tier_is_base_rates_with_provenance(table):
    odd = _priced(table, "gpt-5", service_tier="scale")
    base = _priced(table, "gpt-5")
    assert (odd.input, odd.output, odd.service_tier) == (base.input, base.output, UNKNOWN_SERVICE_TIER)
    assert _priced(table, "plain", service_tier="flex").service_tier == UNKNOWN_SERVICE_TIER
    assert _priced(table, "plain") == _priced(table, "plain", service_tier="default")


@pytest.mark.parametrize(("hour", "minute", "window"), [
    (16, 29, ""), (16, 30, "off_peak"), (23, 59, "off_peak"), (0, 0, "off_peak"), (0, 29, "off_peak"),
    (0, 30, ""), (12, 0, "")])
def test_deepseek_off_peak_wraps_midnight(table, hour, minute, window):
    priced = _priced(table, "deepseek-chat", ts=_at(hour, minute))
    assert priced.window == window
    assert priced.input == (0.135 if window else 0.27)


def test_deepseek_reasoner_off_peak_is_75_percent_off(table):
    priced = _priced(table, "deepseek-reasoner", ts=_at(17, 0))
    assert (priced.input, priced.output, priced.cache_read, priced.window) == (0.1375, 0.5475, 0.035, "off_peak")
    assert bill(UsageTiers(1_000_000, 0, 0, 0, 1_000_000), priced) == Fraction(685, 1000)


def test_v1_lookup_unchanged(table):
    plain = _priced(table, "plain")
    assert (plain.tier, plain.service_tier, plain.window) == ("", "", "")
    assert plain is table.lookup("plain", JUNE)


def test_bill_is_exact_in_written_decimals():
    rates = PricedModel("v", "m", "", 0.1, 0.3, 0.01, 0.125, 0.2)
    assert bill(UsageTiers(3, 7, 1, 1, 10), rates) == (Fraction(3, 10) + Fraction(7, 100) + Fraction(1, 8)
                                                      + Fraction(1, 5) + 3) / 10**6


def _bad(old: str, new: str) -> str:
    assert old in V2
    return V2.replace(old, new, 1)


BAD = [
    ("tier above not a number", _bad("above: 200000", "above: lots"), "gemini-2.5-pro.tiers[0].above",
     "positive whole number"),
    ("tiers not ascending", _bad("tiers: [{above: 200000", "tiers: [{above: 300000, input: 6}, {above: 200000"),
     "tiers[1].above", "must ascend"),
    ("tier without rates", _bad("    input: 2.5\n            output: 15.0\n            cache_read: 0.25\n", "\n"),
     "tiers[0]", "at least one rate"),
    ("tier unknown key", _bad("- above: 200000", "- above: 200000\n            rate: 3"), "tiers[0].rate",
     "unknown key"),
    ("service tier reserved", _bad("batch: {multiplier: 0.5}", "unknown: {multiplier: 0.5}"),
     "service_tiers.unknown", "reserved"),
    ("service tier bad name", _bad("batch: {multiplier: 0.5}", "Batch Tier: {multiplier: 0.5}"),
     "service_tiers.Batch Tier", "service tier name"),
    ("service tier both", _bad("batch: {multiplier: 0.5}", "batch: {multiplier: 0.5, input: 1}"),
     "service_tiers.batch", "not both"),
    ("service tier zero multiplier", _bad("batch: {multiplier: 0.5}", "batch: {multiplier: 0}"),
     "service_tiers.batch.multiplier", "positive"),
    ("window bad zone", _bad('zone: "UTC"', 'zone: "Mars/Olympus"'), "time_windows[0].zone", "IANA"),
    ("window bad time", _bad('start: "16:30"', 'start: "25:00"'), "time_windows[0].start", "HH:MM"),
    ("window no rates", _bad("            input: 0.135\n            output: 0.55\n            cache_read: 0.035\n",
                             ""), "time_windows[0]", "multiplier or at least one rate"),
    ("window bad name", _bad("name: off_peak", "name: Off Peak"), "time_windows[0].name", "window name"),
    ("window missing zone", _bad('            zone: "UTC"\n', ""), "time_windows[0]", "missing key 'zone'"),
]


@pytest.mark.parametrize(("name", "text", "key", "message"), BAD, ids=[b[0] for b in BAD])
def test_v2_errors_name_file_line_key(name, text, key, message):
    with pytest.raises(PriceTableError) as info:
        parse_price_table(text, "bad.yaml")
    error = str(info.value)
    assert error.startswith("bad.yaml:"), error
    assert key in error and message in error, error


def test_v2_keys_refused_in_a_v1_file():
    with pytest.raises(PriceTableError, match="unknown key 'tiers'"):
        parse_price_table(V2.replace("prices/v2", "prices/v1"), "v1.yaml")


usages = st.builds(UsageTiers, *(st.integers(0, 10**7) for _ in range(5)))


@given(usages, st.sampled_from(["fresh", "cache_read", "cache_write_5m", "cache_write_1h", "output"]),
       st.integers(0, 10**6), st.sampled_from([None, "batch", "priority", "scale"]))
def test_bill_is_monotone_in_tokens_within_a_tier(usage, kind, more, service_tier):
    table = parse_price_table(V2, "v2.yaml")
    rates = table.lookup("gemini-2.5-pro", JUNE, service_tier=service_tier, prompt_tokens=usage.prompt)
    bigger = usage._replace(**{kind: getattr(usage, kind) + more})
    assert isinstance(rates, PricedModel)
    assert bill(bigger, rates) >= bill(usage, rates) >= 0


def test_prices_show_prints_tiers_service_tiers_and_windows(tmp_path, capsys):
    from exporter.cli.main import main

    path = tmp_path / "v2.yaml"
    path.write_text(V2, encoding="utf-8")
    assert main(["prices", "show", "gemini-2.5-pro", "--prices", str(path), "--at", "2025-07-01T00:00:00Z"]) == 0
    out = capsys.readouterr().out
    assert "prompt > 200000 tokens (whole request): input=2.5 output=15 cache_read=0.25" in out
    assert "service tier batch: input=0.625 output=5 cache_read=0.0625" in out
    assert "service tier priority: input=2.5 output=20" in out and "prompt > 200000 tokens: input=5 output=20" in out
    assert main(["prices", "show", "deepseek-chat", "--prices", str(path), "--at", "2025-07-01T00:00:00Z"]) == 0
    assert "window off_peak: 16:30-00:30 UTC: input=0.135 output=0.55 cache_read=0.035" in capsys.readouterr().out


def test_prices_validate_names_file_line_key_of_a_v2_error(tmp_path, capsys):
    from exporter.cli.main import main

    path = tmp_path / "bad.yaml"
    path.write_text(_bad('start: "16:30"', 'start: "16:75"'), encoding="utf-8")
    assert main(["prices", "validate", str(path)]) == 1
    err = capsys.readouterr().err
    line = V2.splitlines().index('            start: "16:30"') + 1
    assert f"{path}:{line}" in err and "deepseek-chat.time_windows[0].start" in err and "'16:75'" in err
