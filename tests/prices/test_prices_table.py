"""Price table v1: good and bad tables, version selection, aliases, families, the bundled table."""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.prices.table import (
    PricedModel,
    PriceTableError,
    load_price_table,
    parse_price_table,
)
from exporter.yamlpos import YamlError

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "prices"


def ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


GOOD = textwrap.dedent("""\
    schema: llm-savings-prices/v1
    versions:
      - version: "2026-01-01"
        effective_from: "2026-01-01T00:00:00Z"
        source: "test"
        families:
          anthropic:
            cache_write_5m_multiplier: 1.25
            cache_write_1h_multiplier: 2.0
            billed_token_factor:
              "tiktoken:o200k_base": 1.2
          openai: {}
        models:
          claude-x:
            family: anthropic
            aliases: [anthropic/claude-x, claude-x-20260101]
            input: 3.0
            output: 15.0
            cache_read: 0.3
          claude-explicit:
            family: anthropic
            input: 3.0
            output: 15.0
            cache_write_5m: 3.5
            cache_write_1h: 5.0
          gpt-y:
            family: openai
            input: 2.0
            output: 8.0
            cache_read: 0.5
          old-only:
            input: 1.0
            output: 1.0
      - version: "2026-06-01"
        effective_from: "2026-06-01T00:00:00+02:00"
        families:
          anthropic:
            cache_write_5m_multiplier: 1.25
          openai: {}
        models:
          claude-x:
            family: anthropic
            aliases: [claude-x-20260101]
            input: 2.0
            output: 10.0
          gpt-y:
            family: openai
            input: 1.0
            output: 4.0
    """)


@pytest.fixture(scope="module")
def table():
    return parse_price_table(GOOD, "good.yaml")


# ---------------------------------------------------------------------------
# version selection


def test_version_selection_by_effective_from(table):
    early = table.lookup("claude-x", ts("2026-03-01T00:00:00"))
    late = table.lookup("claude-x", ts("2026-07-01T00:00:00"))
    assert isinstance(early, PricedModel) and early.version == "2026-01-01" and early.input == 3.0
    assert isinstance(late, PricedModel) and late.version == "2026-06-01" and late.input == 2.0


def test_boundary_is_exactly_effective_from(table):
    # the second version starts at 2026-06-01T00:00+02:00 = 2026-05-31T22:00Z
    start = ts("2026-05-31T22:00:00")
    at = table.lookup("gpt-y", start)
    before = table.lookup("gpt-y", start - 0.001)
    assert isinstance(at, PricedModel) and at.version == "2026-06-01"
    assert isinstance(before, PricedModel) and before.version == "2026-01-01"
    first = table.lookup("gpt-y", ts("2026-01-01T00:00:00"))
    assert isinstance(first, PricedModel) and first.version == "2026-01-01"


def test_before_first_version_is_unpriced(table):
    assert table.lookup("gpt-y", ts("2025-12-31T23:59:59")) == "before_first_version"


def test_model_missing_from_a_version_is_unpriced_there(table):
    assert isinstance(table.lookup("old-only", ts("2026-02-01T00:00:00")), PricedModel)
    assert table.lookup("old-only", ts("2026-07-01T00:00:00")) == "unknown_model"
    assert table.lookup("no-such-model", ts("2026-02-01T00:00:00")) == "unknown_model"


def test_each_version_is_complete_on_its_own(table):
    # the newer version lists no cache_read for claude-x: the older 0.3 is not inherited
    late = table.lookup("claude-x", ts("2026-07-01T00:00:00"))
    assert isinstance(late, PricedModel)
    assert late.cache_read == late.input == 2.0
    # and its anthropic family has no 1h multiplier: no premium is carried over either
    assert late.cache_write_1h == 2.0
    assert late.cache_write_5m == 2.5
    assert late.factor("tiktoken:o200k_base") == (1.0, "default")


# ---------------------------------------------------------------------------
# aliases


def test_aliases_resolve_to_the_model(table):
    at = ts("2026-02-01T00:00:00")
    for name in ("claude-x", "anthropic/claude-x", "claude-x-20260101"):
        priced = table.lookup(name, at)
        assert isinstance(priced, PricedModel) and priced.model == "claude-x", name


def test_alias_only_in_the_version_that_lists_it(table):
    assert isinstance(table.lookup("anthropic/claude-x", ts("2026-02-01T00:00:00")), PricedModel)
    assert table.lookup("anthropic/claude-x", ts("2026-07-01T00:00:00")) == "unknown_model"


def test_provider_qualified_lookup(table):
    priced = table.lookup("claude-x", ts("2026-02-01T00:00:00"), provider="anthropic")
    assert isinstance(priced, PricedModel) and priced.model == "claude-x"
    text = GOOD.replace(
        "      old-only:",
        "      bedrock/zz:\n        input: 4.0\n        output: 4.0\n      old-only:",
    )
    assert "bedrock/zz" in text
    qualified = parse_price_table(text, "q.yaml")
    priced = qualified.lookup("zz", ts("2026-02-01T00:00:00"), provider="bedrock")
    assert isinstance(priced, PricedModel) and priced.model == "bedrock/zz"
    assert qualified.lookup("zz", ts("2026-02-01T00:00:00")) == "unknown_model"


# ---------------------------------------------------------------------------
# families: multipliers versus explicit rates, and nothing invented


def test_family_multipliers_derive_cache_writes(table):
    priced = table.lookup("claude-x", ts("2026-02-01T00:00:00"))
    assert isinstance(priced, PricedModel)
    assert priced.cache_write_5m == pytest.approx(3.75)
    assert priced.cache_write_1h == pytest.approx(6.0)
    assert priced.cache_read == 0.3


def test_explicit_rates_beat_family_multipliers(table):
    priced = table.lookup("claude-explicit", ts("2026-02-01T00:00:00"))
    assert isinstance(priced, PricedModel)
    assert (priced.cache_write_5m, priced.cache_write_1h) == (3.5, 5.0)


def test_no_invented_premium_or_discount(table):
    # openai family: no multiplier, so writes cost the input rate;
    # old-only: no family and no cache_read, so reads cost the input rate too
    gpt = table.lookup("gpt-y", ts("2026-02-01T00:00:00"))
    plain = table.lookup("old-only", ts("2026-02-01T00:00:00"))
    assert isinstance(gpt, PricedModel) and isinstance(plain, PricedModel)
    assert gpt.cache_write_5m == gpt.cache_write_1h == gpt.input == 2.0
    assert gpt.cache_read == 0.5
    assert plain.cache_read == plain.cache_write_5m == plain.cache_write_1h == plain.input


def test_billed_token_factors(table):
    claude = table.lookup("claude-x", ts("2026-02-01T00:00:00"))
    gpt = table.lookup("gpt-y", ts("2026-02-01T00:00:00"))
    assert isinstance(claude, PricedModel) and isinstance(gpt, PricedModel)
    assert claude.factor("tiktoken:o200k_base") == (1.2, "table")
    assert claude.factor("provider") == (1.0, "provider")
    assert claude.factor("estimate:chars/4") == (1.0, "default")
    assert gpt.factor("tiktoken:o200k_base") == (1.0, "default")


# ---------------------------------------------------------------------------
# bad tables: every mistake refused with file:line: key: message

BASE = textwrap.dedent("""\
    schema: llm-savings-prices/v1
    versions:
      - version: "v1"
        effective_from: "2026-01-01T00:00:00Z"
        families:
          anthropic:
            cache_write_5m_multiplier: 1.25
        models:
          m:
            family: anthropic
            aliases: [m-alias]
            input: 3.0
            output: 15.0
    """)


def _with(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


SECOND = (
    '  - version: "v2"\n    effective_from: "2026-02-01T00:00:00Z"\n'
    "    models:\n      n: {input: 1.0, output: 1.0}\n"
)

BAD = [
    (
        "wrong schema",
        _with("prices/v1", "prices/v3"),
        1,
        "schema",
        "expected 'llm-savings-prices/v1'",
    ),
    (
        "no versions",
        "schema: llm-savings-prices/v1\nversions: []\n",
        2,
        "versions",
        "non-empty list",
    ),
    ("unknown top key", BASE + "extra: 1\n", 14, "extra", "unknown key 'extra'"),
    (
        "unknown version key",
        _with("    families:", "    famlies: {}\n    families:"),
        5,
        "versions[0].famlies",
        "unknown key 'famlies'",
    ),
    (
        "missing models",
        'schema: llm-savings-prices/v1\nversions:\n  - version: "v1"\n'
        '    effective_from: "2026-01-01T00:00:00Z"\n',
        3,
        "versions[0]",
        "missing key 'models'",
    ),
    (
        "missing input",
        _with("        input: 3.0\n", ""),
        9,
        "versions[0].models.m",
        "missing key 'input'",
    ),
    (
        "missing output",
        _with("        output: 15.0\n", ""),
        9,
        "versions[0].models.m",
        "missing key 'output'",
    ),
    (
        "typo in a rate key",
        _with("input: 3.0", "inptu: 3.0"),
        12,
        "versions[0].models.m.inptu",
        "unknown key 'inptu'",
    ),
    (
        "negative rate",
        _with("output: 15.0", "output: -15.0"),
        13,
        "versions[0].models.m.output",
        "non-negative finite number",
    ),
    (
        "string rate",
        _with("input: 3.0", "input: three"),
        12,
        "versions[0].models.m.input",
        "expected a number, got 'three'",
    ),
    (
        "exponent without dot",
        _with("input: 3.0", "input: 3e-6"),
        12,
        "versions[0].models.m.input",
        "write 1.0e-6",
    ),
    (
        "boolean rate",
        _with("input: 3.0", "input: true"),
        12,
        "versions[0].models.m.input",
        "expected a number, got True",
    ),
    (
        "infinite rate",
        _with("input: 3.0", "input: .inf"),
        12,
        "versions[0].models.m.input",
        "finite",
    ),
    (
        "huge integer rate",
        _with("input: 3.0", "input: 1" + "0" * 400),
        12,
        "versions[0].models.m.input",
        "finite",
    ),
    (
        "zero multiplier",
        _with("multiplier: 1.25", "multiplier: 0"),
        7,
        "versions[0].families.anthropic.cache_write_5m_multiplier",
        "positive",
    ),
    (
        "unknown family key",
        _with("cache_write_5m_multiplier: 1.25", "cache_write_5m_mult: 1.25"),
        7,
        "versions[0].families.anthropic.cache_write_5m_mult",
        "unknown key",
    ),
    (
        "provider factor",
        _with("cache_write_5m_multiplier: 1.25", "billed_token_factor: {provider: 1.1}"),
        7,
        "versions[0].families.anthropic.billed_token_factor.provider",
        "exact by definition",
    ),
    (
        "zero factor",
        _with("cache_write_5m_multiplier: 1.25", 'billed_token_factor: {"tiktoken:o200k_base": 0}'),
        7,
        "versions[0].families.anthropic.billed_token_factor.tiktoken:o200k_base",
        "positive",
    ),
    (
        "bad timestamp",
        _with('"2026-01-01T00:00:00Z"', '"next tuesday"'),
        4,
        "versions[0].effective_from",
        "RFC 3339",
    ),
    (
        "impossible date",
        _with('"2026-01-01T00:00:00Z"', "2026-02-30"),
        4,
        "versions[0].effective_from",
        "RFC 3339",
    ),
    (
        "duplicate version",
        BASE + SECOND.replace('"v2"', '"v1"'),
        14,
        "versions[1].version",
        "not unique",
    ),
    (
        "same effective_from",
        BASE + SECOND.replace("2026-02-01", "2026-01-01"),
        15,
        "versions[1].effective_from",
        "same effective_from as versions[0]",
    ),
    (
        "alias names two models",
        BASE + "      n:\n        aliases: [m-alias]\n        input: 1.0\n        output: 1.0\n",
        15,
        "versions[0].models.n.aliases[0]",
        "already names 'm'",
    ),
    (
        "alias is a model",
        BASE + "      m-alias:\n        input: 1.0\n        output: 1.0\n",
        14,
        "versions[0].models.m-alias",
        "both a model and an alias",
    ),
    (
        "aliases not a list",
        _with("aliases: [m-alias]", "aliases: m-alias"),
        11,
        "versions[0].models.m.aliases",
        "list of strings",
    ),
    (
        "empty alias",
        _with("aliases: [m-alias]", 'aliases: [""]'),
        11,
        "versions[0].models.m.aliases[0]",
        "non-empty string",
    ),
    (
        "family not a string",
        _with("family: anthropic", "family: [anthropic]"),
        10,
        "versions[0].models.m.family",
        "expected a string",
    ),
    (
        "model not a mapping",
        _with("      m:\n", "      m: 3\n      x:\n"),
        9,
        "versions[0].models.m",
        "expected a mapping",
    ),
    (
        "source not a string",
        _with("    families:", "    source: [a]\n    families:"),
        5,
        "versions[0].source",
        "expected a string",
    ),
    (
        "duplicate key",
        _with("input: 3.0", "input: 3.0\n        input: 4.0"),
        13,
        "versions[0].models.m.input",
        "duplicate key",
    ),
    ("invalid YAML", _with("input: 3.0", "input: [3.0"), None, None, "invalid YAML"),
    ("tokenizer not a string", _with("input: 3.0", "tokenizer: [a]\n        input: 3.0"), 12,
     "versions[0].models.m.tokenizer", "expected a tokenizer name"),
    ("tokenizer with a space", _with("input: 3.0", "tokenizer: claude three\n        input: 3.0"), 12,
     "versions[0].models.m.tokenizer", "got 'claude three'"),
    ("not a mapping", "- just\n- a list\n", 1, "(top level)", "expected a mapping"),
    ("empty file", "", 1, "(top level)", "expected a mapping"),
]


@pytest.mark.parametrize(("name", "text", "line", "key", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_tables_are_refused_with_file_line_key(name, text, line, key, message):
    with pytest.raises(PriceTableError) as info:
        parse_price_table(text, "bad.yaml")
    error = str(info.value)
    assert error.startswith("bad.yaml:"), error
    if line is not None:
        assert error.startswith(f"bad.yaml:{line}: "), error
    if key is not None:
        assert f": {key}: " in error, error
    if message is not None:
        assert message in error, error


def test_bad_table_file_on_disk_names_the_path(tmp_path):
    path = tmp_path / "prices.yaml"
    path.write_text(_with("output: 15.0", "output: -1"), encoding="utf-8")
    with pytest.raises(PriceTableError, match=re.escape(f"{path}:13: versions[0].models.m.output")):
        load_price_table(path)
    with pytest.raises(PriceTableError, match="cannot read"):
        load_price_table(tmp_path / "missing.yaml")
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(PriceTableError, match="not UTF-8"):
        load_price_table(path)


def test_yaml_anchors_are_expanded_but_merge_keys_are_not(tmp_path):
    # anchors and aliases work (each version still complete); `<<` merge keys are refused by name
    anchored = BASE + (
        '  - version: "v2"\n'
        '    effective_from: "2026-02-01T00:00:00Z"\n'
        "    models:\n"
        "      m: &m {input: 2.0, output: 9.0}\n"
        "      m2: *m\n"
    )
    table = parse_price_table(anchored, "anchors.yaml")
    assert table.newest.models["m2"].output == 9.0
    merged = anchored.replace("m2: *m", "m2: {<<: *m, output: 1.0}")
    with pytest.raises(PriceTableError, match=r"models\.m2\.<<: unknown key '<<'"):
        parse_price_table(merged, "merge.yaml")


# ---------------------------------------------------------------------------
# the loader never raises anything but PriceTableError / YamlError


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-10, 10**30),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.sampled_from(["2026-01-01", "1e-6", "anthropic", "v1"]),
)
_keys = st.sampled_from(
    [
        "schema",
        "versions",
        "version",
        "effective_from",
        "families",
        "models",
        "input",
        "output",
        "cache_read",
        "cache_write_5m",
        "aliases",
        "family",
        "billed_token_factor",
        "cache_write_5m_multiplier",
        "m",
        "x",
    ]
)
_trees = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(_keys, children, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_trees)
def test_loader_fuzz_structured(tree):
    text = yaml.safe_dump(
        {"schema": "llm-savings-prices/v1", "versions": tree}
        if not isinstance(tree, dict)
        else tree
    )
    with contextlib.suppress(PriceTableError, YamlError):
        parse_price_table(text, "fuzz.yaml")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab:-[]{}&*!|>'\"#\n 0123.e,?%@")), max_size=80))
def test_loader_fuzz_raw_text(text):
    with contextlib.suppress(PriceTableError, YamlError):
        parse_price_table(text, "fuzz.yaml")


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 12), st.text(max_size=20))
def test_loader_fuzz_mutated_good_table(position, junk):
    lines = GOOD.splitlines()
    index = position * 3 % len(lines)
    lines[index] = lines[index][: len(lines[index]) // 2] + junk
    with contextlib.suppress(PriceTableError, YamlError):
        parse_price_table("\n".join(lines), "fuzz.yaml")


# ---------------------------------------------------------------------------
# the bundled table


@pytest.fixture(scope="module")
def bundled():
    return load_price_table()


def test_bundled_table_loads_and_is_generated(bundled):
    assert len(bundled.versions) >= 2
    assert bundled.versions[0].effective_from == ts("2024-01-01T00:00:00")
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_prices.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_bundled_models_carry_provider_source_retrieved(bundled):
    for version in bundled.versions:
        for name in version.models:
            meta = version.model_meta[name]
            assert {"provider", "source", "retrieved"} <= set(meta) <= {"provider", "source", "retrieved",
                                                                       "tokenizer"}, (version.version, name)
            assert meta["source"].startswith("https://")


@pytest.mark.parametrize(
    ("model", "when", "expected"),
    [
        ("gpt-4o", "2026-11-15T12:00:00", (2.5, 10.0, 1.25, 2.5, 2.5)),
        ("gpt-4o", "2024-06-01T00:00:00", (5.0, 15.0, 5.0, 5.0, 5.0)),  # before prompt caching
        ("gpt-4o-2024-08-06", "2024-11-01T00:00:00", (2.5, 10.0, 1.25, 2.5, 2.5)),
        ("o3", "2025-05-01T00:00:00", (10.0, 40.0, 2.5, 10.0, 10.0)),
        ("o3", "2025-06-10T00:00:00", (2.0, 8.0, 0.5, 2.0, 2.0)),
        ("gpt-5-mini", "2026-11-15T12:00:00", (0.25, 2.0, 0.025, 0.25, 0.25)),
        ("claude-sonnet-4-5-20250929", "2026-11-15T12:00:00", (3.0, 15.0, 0.3, 3.75, 6.0)),
        ("anthropic/claude-haiku-4-5", "2026-11-15T12:00:00", (1.0, 5.0, 0.1, 1.25, 2.0)),
        ("claude-3-haiku-20240307", "2024-05-01T00:00:00", (0.25, 1.25, 0.03, 0.3, 0.5)),
        ("claude-opus-4-1", "2026-11-15T12:00:00", (15.0, 75.0, 1.5, 18.75, 30.0)),
        ("gemini-2.5-pro", "2026-11-15T12:00:00", (1.25, 10.0, 0.125, 1.25, 1.25)),
        ("gemini/gemini-2.5-flash", "2026-11-15T12:00:00", (0.3, 2.5, 0.03, 0.3, 0.3)),
        (
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
            "2026-11-15T12:00:00",
            (3.0, 15.0, 0.3, 3.75, 6.0),
        ),
        (
            "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "2026-11-15T12:00:00",
            (3.0, 15.0, 0.3, 3.75, 6.0),
        ),
        (
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "2026-11-15T12:00:00",
            (3.3, 16.5, 0.33, 4.125, 6.6),
        ),
        (
            "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
            "2026-11-15T12:00:00",
            (3.0, 15.0, 0.3, 3.75, 6.0),
        ),
        ("us.amazon.nova-pro-v1:0", "2026-11-15T12:00:00", (0.8, 3.2, 0.2, 0.8, 0.8)),
        ("deepseek-chat", "2025-01-15T00:00:00", (0.14, 0.28, 0.014, 0.14, 0.14)),
        ("deepseek-chat", "2025-03-01T00:00:00", (0.27, 1.1, 0.07, 0.27, 0.27)),
        ("deepseek/deepseek-chat", "2026-11-15T12:00:00", (0.28, 0.42, 0.028, 0.28, 0.28)),
        ("mistral/mistral-medium-2505", "2026-11-15T12:00:00", (0.4, 2.0, 0.4, 0.4, 0.4)),
    ],
)
def test_bundled_rates(bundled, model, when, expected):
    priced = bundled.lookup(model, ts(when))
    assert isinstance(priced, PricedModel), priced
    got = (
        priced.input,
        priced.output,
        priced.cache_read,
        priced.cache_write_5m,
        priced.cache_write_1h,
    )
    assert got == pytest.approx(expected)


def test_bundled_premiums_only_for_anthropic(bundled):
    for version in bundled.versions:
        for model in version.models.values():
            if model.family != "anthropic":
                assert model.cache_write_5m == model.cache_write_1h == model.input, model
            assert model.cache_read <= model.input, model
            assert model.factors == (), "no billed_token_factor is shipped"


def test_bundled_agrees_with_litellm_where_both_list_a_model(bundled):
    """Cross-check against LiteLLM's community file (the real one, vendored gzipped)."""
    with gzip.open(FIXTURES / "litellm-1.110.2-model_prices.json.gz") as handle:
        litellm = json.load(handle)
    newest = bundled.newest
    compared = 0
    mismatches = []
    for name, model in newest.models.items():
        names = [name, *[a for a, target in newest.aliases.items() if target == name]]
        entry = next((litellm[n] for n in names if isinstance(litellm.get(n), dict)), None)
        if entry is None:
            continue
        compared += 1
        theirs = {
            "input": entry.get("input_cost_per_token"),
            "output": entry.get("output_cost_per_token"),
            "cache_read": entry.get("cache_read_input_token_cost"),
        }
        for key, value in theirs.items():
            if value is not None and abs(getattr(model, key) - value * 1e6) > 1e-9:
                mismatches.append((name, key, getattr(model, key), value * 1e6))
    assert compared >= 50
    # Deliberate differences, each checked: LiteLLM lists a 10% cache read for Mistral, which
    # Mistral's pricing page does not show; we price those reads at the input rate.
    unexplained = [
        m
        for m in mismatches
        if not (m[0].startswith(("mistral", "codestral", "ministral")) and m[1] == "cache_read")
    ]
    assert unexplained == []


# ---------------------------------------------------------------------------
# the model-level tokenizer key (what calibrate groups by)


def test_tokenizer_key_is_read_per_model_and_optional():
    table = parse_price_table(_with("input: 3.0", "tokenizer: acme-bpe/v2\n        input: 3.0") + SECOND, "t.yaml")
    first, second = table.versions
    assert first.tokenizer("m") == "acme-bpe/v2" and first.model_meta["m"]["tokenizer"] == "acme-bpe/v2"
    assert second.tokenizer("n") is None  # a v1 table without the key keeps loading
    assert first.tokenizer("not-a-model") is None


def test_bundled_tokenizer_keys_keep_haiku_apart_from_sonnet(bundled):
    newest = bundled.newest
    key = newest.tokenizer
    assert {key(m) for m in newest.models if newest.models[m].family == "openai"} == {"o200k_base"}
    assert key("claude-haiku-4-5") != key("claude-sonnet-4-5") == key("claude-opus-4-5")
    assert key("claude-3-haiku") != key("claude-3-5-sonnet")
    assert key("anthropic.claude-haiku-4-5-20251001-v1:0") == key("claude-haiku-4-5")  # Bedrock: same model
    assert key("us.anthropic.claude-sonnet-4-5-20250929-v1:0") == key("claude-sonnet-4-5")
    assert key("gemini-2.5-pro") == key("gemini-2.0-flash") != key("gemini-3-pro-preview")
    assert key("deepseek-chat") == key("deepseek-reasoner")
    assert key("mistral-large-2411") is None  # unknown: no key, calibrated on its own
    anthropic = [m for m, priced in newest.models.items() if priced.family == "anthropic"]
    assert all(key(m) for m in anthropic)  # every Anthropic model has a rule
