"""`prices validate|show|import-litellm` through the real CLI entry point, and the converter."""

from __future__ import annotations

import gzip
import json
import re
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.cli.main import main
from exporter.prices.importers.litellm import (
    LiteLLMImportError,
    convert,
    family_of,
    format_rate,
    per_million,
)
from exporter.prices.table import PricedModel, load_price_table, parse_price_table

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "prices"
SAMPLE = FIXTURES / "litellm_sample.json"
REAL = FIXTURES / "litellm-1.110.2-model_prices.json.gz"


def ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


# ---------------------------------------------------------------------------
# validate


def test_validate_bundled_ok(capsys):
    assert main(["prices", "validate", "exporter/data/prices.yaml"]) == 0
    out = capsys.readouterr().out
    table = load_price_table()
    assert out.startswith("exporter/data/prices.yaml: ok (given)\n")
    assert f"  sha256     {table.sha256}\n" in out
    assert f"  versions   {len(table.versions)}\n" in out
    for version in table.versions:
        assert f"{version.version:<12} from {version.effective_from_text}, {len(version.models)} models" in out
    assert f"  models     {len(table.newest.models)} in the newest version, {len(table.newest.aliases)} aliases" in out
    keyed = sum(1 for m in table.newest.models if table.newest.tokenizer(m))
    assert f"  tokenizer  {keyed} of {len(table.newest.models)} models have a tokenizer key" in out
    assert "warning" not in out


def test_validate_without_a_file_checks_the_bundled_table(capsys):
    assert main(["prices", "validate", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    table = load_price_table()
    assert doc["chosen"] == "the bundled table"
    assert (doc["path"], doc["sha256"]) == (table.path, table.sha256)
    assert [v["version"] for v in doc["versions"]] == [v.version for v in table.versions]
    assert doc["models"] == len(table.newest.models)
    assert "mistral-large-2411" in doc["without_tokenizer"] and "gpt-4o" not in doc["without_tokenizer"]


def _config(tmp_path, prices=None):
    config = tmp_path / "sidecar.yaml"
    lines = ["schema: llm-savings-config/v1", f"state_dir: {tmp_path / 'state'}"]
    if prices is not None:
        lines.append(f"prices: {prices}")
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


def test_validate_checks_the_table_the_config_names(tmp_path, capsys):
    table = tmp_path / "house.yaml"
    table.write_text(_TOKENIZED, encoding="utf-8")
    config = _config(tmp_path, table)
    assert main(["prices", "validate", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{table}: ok (named by {config})\n")
    assert "  tokenizer  1 of 2 models have a tokenizer key; without: plain" in out
    # a config without `prices` means the bundled table
    (tmp_path / "bare").mkdir()
    bare = _config(tmp_path / "bare")
    assert main(["prices", "validate", "--config", str(bare)]) == 0
    assert "ok (the bundled table (named by" in capsys.readouterr().out


def test_validate_config_errors(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema: llm-savings-config/v1\nlisten: nowhere\n", encoding="utf-8")
    assert main(["prices", "validate", "--config", str(bad)]) == 2
    assert "prices validate: --config: " in capsys.readouterr().err
    assert main(["prices", "validate", "x.yaml", "--config", str(bad)]) == 2
    assert "not both" in capsys.readouterr().err
    config = _config(tmp_path, tmp_path / "missing.yaml")
    assert main(["prices", "validate", "--config", str(config)]) == 1
    assert "cannot read price table" in capsys.readouterr().err


_TOKENIZED = """\
schema: llm-savings-prices/v1
versions:
  - version: "v1"
    effective_from: "2025-01-01T00:00:00Z"
    families:
      acme:
        billed_token_factor: {"tiktoken:o200k_base": 1.2}
    models:
      fancy: {family: acme, tokenizer: acme-bpe, input: 1.0, output: 2.0, aliases: [fancy-1, acme/fancy]}
      plain: {family: acme, input: 0.5, output: 1.0}
"""


def test_validate_warns_when_one_factor_covers_several_tokenizers(tmp_path, capsys):
    table = tmp_path / "house.yaml"
    table.write_text(_TOKENIZED, encoding="utf-8")
    assert main(["prices", "validate", str(table)]) == 0
    out = capsys.readouterr().out
    assert ("warning    version v1: family 'acme' has a billed_token_factor but its models have 2 tokenizer "
            "keys (acme-bpe, model:plain)") in out


# ---------------------------------------------------------------------------
# list


def test_list_bundled_every_model_with_its_rates(capsys):
    assert main(["prices", "list", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    table = load_price_table()
    names = {name for version in table.versions for name in version.models}
    assert {row["model"] for row in doc["models"]} == names and len(doc["models"]) == len(names)
    assert doc["sha256"] == table.sha256
    for row in doc["models"]:
        listing = [v for v in table.versions if row["model"] in v.models]
        newest = listing[-1]
        priced = newest.models[row["model"]]
        assert row["versions"] == [v.version for v in listing] and row["version"] == newest.version
        assert row["rates"] == {k: getattr(priced, k) for k in ("input", "output", "cache_read", "cache_write_5m",
                                                                 "cache_write_1h")}
        assert row["aliases"] == sum(1 for t in newest.aliases.values() if t == row["model"])
        assert row["tokenizer"] == newest.tokenizer(row["model"])
    by_name = {row["model"]: row for row in doc["models"]}
    assert by_name["deepseek-chat"]["rate_changes"] == 2  # promotion -> V3 -> V3.2
    assert by_name["claude-haiku-4-5"]["family"] == "anthropic"
    assert by_name["claude-haiku-4-5"]["provider"] == "anthropic"


def test_list_text_and_at(tmp_path, capsys):
    table = tmp_path / "house.yaml"
    table.write_text(_TOKENIZED, encoding="utf-8")
    assert main(["prices", "list", "--prices", str(table)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{table} sha256 ") and "2 models (every version)" in out[0]
    assert out[1].split()[:3] == ["model", "provider/family", "versions"]
    assert out[2].split() == ["fancy", "-/acme", "v1", "1", "2", "1", "1", "1", "2", "acme-bpe"]
    assert out[3].split() == ["plain", "-/acme", "v1", "0.5", "1", "0.5", "0.5", "0.5", "0", "-"]
    assert main(["prices", "list", "--prices", str(table), "--at", "2024-06-01T00:00:00Z", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["models"] == []  # before the first version
    assert main(["prices", "list", "--at", "yesterday"]) == 2
    assert "--at: expected" in capsys.readouterr().err


def test_list_at_shows_the_version_in_force(capsys):
    assert main(["prices", "list", "--json", "--at", "2025-01-01T00:00:00Z"]) == 0
    rows = {row["model"]: row for row in json.loads(capsys.readouterr().out)["models"]}
    assert rows["deepseek-chat"]["version"] == "2024-10-01"
    assert rows["deepseek-chat"]["rates"]["input"] == 0.14
    assert "gpt-4o-2024-08-06" not in rows  # only the 2024-01-01 version lists it apart


def test_validate_bad_names_file_line_key_value(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "schema: llm-savings-prices/v1\nversions:\n  - version: v1\n"
        '    effective_from: "2026-01-01T00:00:00Z"\n    models:\n'
        "      m: {input: cheap, output: 1.0}\n",
        encoding="utf-8",
    )
    assert main(["prices", "validate", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:6: versions[0].models.m.input: expected a number, got 'cheap'" in err


def test_validate_missing_file(tmp_path, capsys):
    assert main(["prices", "validate", str(tmp_path / "nope.yaml")]) == 1
    assert "cannot read price table" in capsys.readouterr().err


def test_prices_without_subcommand_prints_usage(capsys):
    assert main(["prices"]) == 2
    assert "validate" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# show


def test_show_alias_with_derived_cache_writes(capsys):
    code = main(
        ["prices", "show", "anthropic/claude-sonnet-4-5-20250929", "--at", "2026-11-15T00:00:00Z"]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "-> claude-sonnet-4-5 (alias 'anthropic/claude-sonnet-4-5-20250929')" in out
    at = datetime(2026, 11, 15, tzinfo=UTC).timestamp()
    version = load_price_table().version_at(at)
    assert version is not None and f"version   {version.version}" in out
    assert "family 'anthropic' multiplier 1.25 x input" in out
    assert "family 'anthropic' multiplier 2 x input" in out
    assert "https://docs.anthropic.com" in out


def test_show_json_origins(capsys):
    assert main(["prices", "show", "gpt-4o", "--at", "2024-06-01T00:00:00Z", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["model"] == "gpt-4o" and info["version"] == "2024-01-01"
    assert info["resolved_by"] == "model name"
    rates = info["rates"]
    assert rates["input"] == {"usd_per_million": 5.0, "origin": "table"}
    assert rates["cache_read"]["usd_per_million"] == 5.0
    assert "no invented discount" in rates["cache_read"]["origin"]
    assert "no premium listed" in rates["cache_write_5m"]["origin"]
    assert info["billed_token_factors"] == {}
    assert info["meta"]["source"] == "https://openai.com/api/pricing/"


def test_show_epoch_and_custom_table_with_factors(tmp_path, capsys):
    table = tmp_path / "p.yaml"
    table.write_text(
        "schema: llm-savings-prices/v1\nversions:\n  - version: v1\n"
        '    effective_from: "2026-01-01T00:00:00Z"\n'
        "    families:\n      anthropic:\n        cache_write_5m_multiplier: 1.25\n"
        '        billed_token_factor: {"tiktoken:o200k_base": 1.15}\n'
        "    models:\n"
        "      c: {family: anthropic, input: 4.0, output: 20.0, cache_write_1h: 9.0}\n",
        encoding="utf-8",
    )
    epoch = str(ts("2026-02-01T00:00:00"))
    args = ["prices", "show", "c", "--at", epoch, "--prices", str(table), "--json"]
    assert main(args) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["rates"]["cache_write_5m"]["usd_per_million"] == 5.0
    assert info["rates"]["cache_write_1h"] == {"usd_per_million": 9.0, "origin": "table"}
    assert info["billed_token_factors"] == {"tiktoken:o200k_base": 1.15}
    assert main(["prices", "show", "c", "--at", epoch, "--prices", str(table)]) == 0
    assert "tiktoken:o200k_base" in capsys.readouterr().out


def test_show_provider_qualified(tmp_path, capsys):
    table = tmp_path / "p.yaml"
    table.write_text(
        "schema: llm-savings-prices/v1\nversions:\n  - version: v1\n"
        '    effective_from: "2026-01-01T00:00:00Z"\n'
        "    models:\n      bedrock/zz: {input: 1.0, output: 2.0}\n",
        encoding="utf-8",
    )
    args = ["prices", "show", "zz", "--provider", "bedrock", "--prices", str(table), "--json"]
    assert main(args) == 0
    assert (
        json.loads(capsys.readouterr().out)["resolved_by"] == "provider-qualified name bedrock/zz"
    )


def test_show_unknown_model_suggests(capsys):
    assert main(["prices", "show", "gpt-4o-mni"]) == 1
    out = capsys.readouterr().out
    assert "unpriced" in out and "unknown_model" in out
    assert "did you mean: gpt-4o-mini" in out


def test_show_before_first_version(capsys):
    assert main(["prices", "show", "gpt-4o", "--at", "2023-06-01T00:00:00Z"]) == 1
    out = capsys.readouterr().out
    assert "before_first_version" in out and "2024-01-01" in out


def test_show_bad_at(capsys):
    assert main(["prices", "show", "gpt-4o", "--at", "yesterday"]) == 2
    assert "--at" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# the converter


def test_per_million_is_exact():
    assert per_million(2.5e-06) == Decimal("2.5")
    assert per_million(3e-07) == Decimal("0.3")
    assert per_million(1.25e-07) == Decimal("0.125")
    assert per_million(3.3000000000000004e-06) == Decimal("3.3")  # float noise in the source
    assert per_million(1e-09) == Decimal("0.001")
    assert per_million(0) == Decimal(0)
    for bad in (-1e-6, "2.5e-06", None, True, float("nan"), float("inf")):
        assert per_million(bad) is None
    assert format_rate(Decimal("1E-7")) == "0.0000001"
    assert format_rate(Decimal("15")) == "15.0"


@given(st.integers(0, 10**9), st.integers(0, 9))
def test_per_million_round_trips_decimal_prices(units, scale):
    # any price written with up to 9 decimals per million survives the per-token float round trip
    price = Decimal(units).scaleb(-scale)
    per_token = float(price.scaleb(-6))
    assert per_million(per_token) == price.normalize() or (
        price == 0 and per_million(per_token) == 0
    )


def test_family_of():
    assert family_of("claude-sonnet-4-5", "anthropic") == "anthropic"
    assert family_of("anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock_converse") == "anthropic"
    assert family_of("vertex_ai/claude-sonnet-4-5", "vertex_ai-anthropic_models") == "anthropic"
    assert family_of("amazon.nova-pro-v1:0", "bedrock_converse") == "amazon"
    assert family_of("gemini/gemini-2.5-pro", "gemini") == "google"
    assert family_of("gpt-4o", "openai") == "openai"
    assert family_of("x", "Some Provider!") == "some_provider"


def sample() -> dict:
    return json.loads(SAMPLE.read_text(encoding="utf-8"))


def test_convert_sample():
    result = convert(
        sample(), version="lt-1", effective_from="2026-01-01T00:00:00Z", retrieved="2026-11-30"
    )
    table = parse_price_table(result.text, "converted.yaml")
    version = table.newest
    assert result.models == len(version.models)
    # skipped entries are counted by reason
    assert result.skipped["mode embedding (not chat/completion/responses)"] == 1
    assert result.skipped["mode audio_transcription (not chat/completion/responses)"] == 1
    assert result.skipped["mode audio_speech (not chat/completion/responses)"] == 1
    assert result.skipped["mode moderation (not chat/completion/responses)"] == 1
    assert result.skipped["no mode"] == 1
    assert result.skipped["no input_cost_per_token"] == 1
    assert result.skipped["no output_cost_per_token"] == 1
    assert result.skipped["input/output cost is not a non-negative number"] == 2
    assert result.skipped["not an object"] == 1
    assert "synthetic/no-output" in result.examples["no output_cost_per_token"]
    assert result.notes["cache_write_5m of 0 ignored (read as not listed)"] >= 1
    assert "sample_spec" not in version.models
    summary = result.summary()
    assert summary.startswith(f"converted {result.models} models, skipped 10")

    def rates(name: str) -> tuple[float, ...]:
        m = version.resolve(name)
        assert isinstance(m, PricedModel), name
        return (m.input, m.output, m.cache_read, m.cache_write_5m, m.cache_write_1h)

    assert rates("gpt-4o") == (2.5, 10.0, 1.25, 2.5, 2.5)
    assert rates("openai/gpt-4o") == rates("gpt-4o")  # provider-prefixed alias
    assert rates("claude-sonnet-4-5") == (3.0, 15.0, 0.3, 3.75, 6.0)
    assert rates("us.anthropic.claude-sonnet-4-5-20250929-v1:0") == (3.3, 16.5, 0.33, 4.125, 6.6)
    # a Bedrock 3.5 Haiku entry lists a 5m write but no 1h: the anthropic family's 2x fills it
    assert rates("anthropic.claude-3-5-haiku-20241022-v1:0") == (0.8, 4.0, 0.08, 1.0, 1.6)
    # DeepSeek's cache write of 0 is not read as a free write
    assert rates("deepseek/deepseek-chat") == (0.28, 0.42, 0.028, 0.28, 0.28)
    assert rates("gpt-5-pro") == (
        15.0,
        120.0,
        15.0,
        15.0,
        15.0,
    )  # responses mode, no cache read listed
    assert rates("gpt-3.5-turbo-instruct")[0:2] == (1.5, 2.0)  # completion mode
    assert version.models["databricks/databricks-claude-fable-5"].input == 9.99999
    assert version.model_meta["gpt-4o"] == {
        "provider": "openai",
        "source": "LiteLLM model_prices_and_context_window.json",
        "retrieved": "2026-11-30",
    }
    # every rate is fixed-point text (never a YAML 1.1 exponent string), at most 9 decimals
    values = re.findall(r"^ +(?:input|output|cache_\w+): (\S+)$", result.text, re.MULTILINE)
    assert len(values) >= 2 * result.models
    assert all(re.fullmatch(r"[0-9]+\.[0-9]{1,9}", v) for v in values), values


def test_convert_refuses_non_object():
    with pytest.raises(LiteLLMImportError):
        convert([1, 2], version="v", effective_from="2026-01-01T00:00:00Z")


def test_convert_empty_is_a_valid_empty_table():
    result = convert({}, version="v", effective_from="2026-01-01T00:00:00Z")
    assert parse_price_table(result.text, "empty.yaml").newest.models == {}


def test_convert_quotes_awkward_names():
    data = {
        'we"ird: name # x': {
            "litellm_provider": "openai",
            "mode": "chat",
            "input_cost_per_token": 1e-06,
            "output_cost_per_token": 2e-06,
        },
        "yes": {
            "litellm_provider": "true",
            "mode": "chat",
            "input_cost_per_token": 1e-06,
            "output_cost_per_token": 2e-06,
        },
    }
    table = parse_price_table(
        convert(data, version="2026-01-01", effective_from="2026-01-01").text, "q"
    )
    assert set(table.newest.models) == {'we"ird: name # x', "yes"}
    assert table.newest.models["yes"].family == "true"


# ---------------------------------------------------------------------------
# import-litellm through the CLI


def test_import_litellm_cli_sample(tmp_path, capsys):
    out = tmp_path / "imported.yaml"
    args = [
        "prices",
        "import-litellm",
        str(SAMPLE),
        "--version",
        "litellm-test",
        "--effective-from",
        "2025-01-01T00:00:00Z",
        "-o",
        str(out),
    ]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "skipped" in err and "no input_cost_per_token" in err
    assert main(["prices", "validate", str(out)]) == 0
    table = load_price_table(out)
    assert table.newest.version == "litellm-test"
    assert table.lookup("gpt-4o", ts("2024-12-31T23:59:59")) == "before_first_version"
    assert isinstance(table.lookup("gpt-4o", ts("2025-01-01T00:00:00")), PricedModel)


def test_import_litellm_cli_stdout_and_defaults(capsys):
    assert main(["prices", "import-litellm", str(SAMPLE)]) == 0
    captured = capsys.readouterr()
    table = parse_price_table(captured.out, "stdout.yaml")
    assert table.newest.version.startswith("litellm-")
    assert table.newest.effective_from_text == "2024-01-01T00:00:00Z"
    assert "wrote <stdout>" in captured.err


def test_import_litellm_cli_errors(tmp_path, capsys):
    not_json = tmp_path / "x.json"
    not_json.write_text("{nope", encoding="utf-8")
    assert main(["prices", "import-litellm", str(not_json)]) == 1
    assert "not JSON" in capsys.readouterr().err
    a_list = tmp_path / "l.json"
    a_list.write_text("[]", encoding="utf-8")
    assert main(["prices", "import-litellm", str(a_list)]) == 1
    assert "expected a JSON object" in capsys.readouterr().err
    assert main(["prices", "import-litellm", str(SAMPLE), "--effective-from", "soon"]) == 1
    assert "does not validate" in capsys.readouterr().err
    assert main(["prices", "import-litellm", str(tmp_path / "missing.json")]) == 1


def test_import_the_real_litellm_file(tmp_path, capsys):
    """The whole community file of litellm 1.110.2 (vendored, gzipped) converts and validates."""
    raw = tmp_path / "model_prices_and_context_window.json"
    raw.write_bytes(gzip.decompress(REAL.read_bytes()))
    out = tmp_path / "all.yaml"
    assert (
        main(["prices", "import-litellm", str(raw), "-o", str(out), "--version", "litellm-1.110.2"])
        == 0
    )
    err = capsys.readouterr().err
    assert "converted 3536 models, skipped 1341" in err
    table = load_price_table(out)
    at = ts("2026-11-15T00:00:00")
    for name, expected in {
        "gpt-4o": (2.5, 10.0, 1.25),
        "claude-opus-4-5": (5.0, 25.0, 0.5),
        "gemini/gemini-2.5-pro": (1.25, 10.0, 0.125),
        "deepseek/deepseek-chat": (0.28, 0.42, 0.028),
        "amazon.nova-pro-v1:0": (0.8, 3.2, 0.2),
    }.items():
        priced = table.lookup(name, at)
        assert isinstance(priced, PricedModel), name
        assert (priced.input, priced.output, priced.cache_read) == expected
    claude = table.lookup("claude-opus-4-5", at)
    assert isinstance(claude, PricedModel) and claude.family == "anthropic"
    assert claude.cache_write_5m == 6.25 and claude.cache_write_1h == 10.0


def test_show_finds_explicit_rates_when_versions_are_listed_out_of_order(tmp_path, capsys):
    table = tmp_path / "p.yaml"
    table.write_text(
        "schema: llm-savings-prices/v1\nversions:\n"
        '  - version: new\n    effective_from: "2026-06-01T00:00:00Z"\n'
        "    families: {anthropic: {cache_write_5m_multiplier: 1.25}}\n"
        "    models:\n      c: {family: anthropic, input: 4.0, output: 20.0}\n"
        '  - version: old\n    effective_from: "2026-01-01T00:00:00Z"\n'
        "    families: {anthropic: {cache_write_5m_multiplier: 1.25}}\n"
        "    models:\n"
        "      c: {family: anthropic, input: 4.0, output: 20.0, cache_write_5m: 4.5}\n",
        encoding="utf-8",
    )
    args = ["prices", "show", "c", "--at", "2026-02-01T00:00:00Z", "--prices", str(table), "--json"]
    assert main(args) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["version"] == "old"
    assert info["rates"]["cache_write_5m"] == {"usd_per_million": 4.5, "origin": "table"}
    args[4] = "2026-07-01T00:00:00Z"
    assert main(args) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["rates"]["cache_write_5m"]["origin"] == "family 'anthropic' multiplier 1.25 x input"
