"""`prices import-genai-prices` through the real CLI entry point, on the installed genai-prices data."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from exporter.cli.main import main
from exporter.prices.table import PricedModel, load_price_table


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_import_writes_a_table_that_validates_with_history_tiers_and_windows(tmp_path, capsys):
    names = tmp_path / "names.txt"
    names.write_text("claude-sonnet-4-5-20250929\ndeepseek-chat-v3.2\n", encoding="utf-8")
    out = tmp_path / "gp.yaml"
    code = main(["prices", "import-genai-prices", "--provider", "openai", "--provider", "anthropic",
                 "--provider", "deepseek", "--names", str(names), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "converted" in err and "match rules" in err and "web_searches_kcount" in err
    assert "resolve otherwise" not in err  # the import's check of its rules against genai-prices' own
    table = load_price_table(out)
    # o3's dated price cut (genai-prices: 10/40 before 2025-06-10, 2/8 from then)
    before = table.lookup("openai/o3", _ts("2025-06-09T23:59:59"))
    after = table.lookup("o3", _ts("2025-06-10T00:00:00"))
    assert isinstance(before, PricedModel) and isinstance(after, PricedModel)
    assert (before.input, before.output, after.input, after.output) == (10.0, 40.0, 2.0, 8.0)
    # dated names resolve through genai-prices' prefix rule, listed in --names or not
    for dated in ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20991231"):
        sonnet = table.lookup(dated, _ts("2026-11-01T00:00:00"), prompt_tokens=200_001)
        assert isinstance(sonnet, PricedModel) and sonnet.model == "anthropic/claude-sonnet-4-5"
        assert sonnet.tier == "above_200000" and Decimal(repr(sonnet.input)) == Decimal("6")
    # DeepSeek's window: genai-prices lists the daytime (00:30-16:30 UTC) price as the window
    chat = table.newest.tiers["deepseek/deepseek-chat"]
    assert [w.name for w in chat.windows] == ["utc_0030_1630"]


def test_unknown_provider_is_refused_naming_the_known_ones(tmp_path, capsys):
    code = main(["prices", "import-genai-prices", "--provider", "nope", "--out", str(tmp_path / "x.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and "unknown genai-prices provider nope" in err and "openai" in err
    assert not (tmp_path / "x.yaml").exists()


def test_since_keeps_the_versions_from_that_day_and_a_bad_date_is_refused(tmp_path, capsys):
    out = tmp_path / "recent.yaml"
    assert main(["prices", "import-genai-prices", "--provider", "openai", "--since", "2025-06-10",
                 "--out", str(out)]) == 0
    table = load_price_table(out)
    assert table.versions[0].effective_from_text == "2025-06-10T00:00:00Z"
    assert table.lookup("openai/o3", _ts("2025-06-09T23:59:59")) == "before_first_version"
    o3 = table.lookup("openai/o3", _ts("2025-06-10T00:00:00"))
    assert isinstance(o3, PricedModel) and (o3.input, o3.output) == (2.0, 8.0)
    capsys.readouterr()
    assert main(["prices", "import-genai-prices", "--since", "June", "--out", str(tmp_path / "x.yaml")]) == 2
    assert "--since: expected a date YYYY-MM-DD, got 'June'" in capsys.readouterr().err
