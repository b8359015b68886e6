"""exporter.prices.table: every field a loaded version and model carries, written out.

The loader's other tests check the rates; these check the rest a lookup hands on (family
name, version label, source, the per-model provider/source/retrieved metadata `prices show`
prints), including their defaults when the table leaves them out.
"""

from __future__ import annotations

import pytest

from exporter.prices.table import Family, PricedModel, PriceTable, PriceTableError, parse_price_table

TABLE = """\
schema: llm-savings-prices/v1
versions:
  - version: "2026-11"
    effective_from: "2026-11-01T00:00:00Z"
    source: "the vendor's page"
    families:
      fam:
        cache_write_1h_multiplier: 2.0
        billed_token_factor: {"estimate:chars/4": 1.1, "tiktoken:o200k_base": 1.2}
      bare: {}
    models:
      m:
        family: fam
        aliases: [vendor/m, m-latest, vendor/mm]
        provider: vendor
        source: https://example.invalid/pricing
        retrieved: 2026-10-30
        input: 2.0
        output: 8.0
        cache_write_5m: 2.5
      n: {input: 1.0, output: 3.0}
  - version: "2026-12"
    effective_from: "2026-12-01T00:00:00Z"
    models:
      n: {family: "", input: 1.5, output: 3.0, cache_read: 0.15}
"""


FACTORS = '        billed_token_factor: {"estimate:chars/4": 1.1, "tiktoken:o200k_base": 1.2}\n'
FAMILIES = TABLE[TABLE.index("    families:"):TABLE.index("    models:")]
MODELS = TABLE[TABLE.index("    models:"):TABLE.index('  - version: "2026-12"')]


@pytest.fixture
def table() -> PriceTable:
    """Parsed afresh for each test: mutmut maps a function to the tests that call it, and a module-scoped
    fixture would credit the parse to the first test only (the others would never run against its mutants)."""
    return parse_price_table(TABLE, "fields.yaml")


def test_a_model_carries_its_family_factors_and_every_rate(table: PriceTable) -> None:
    november = table.versions[0]
    assert november.resolve("m") == PricedModel(
        version="2026-11", model="m", family="fam", input=2.0, output=8.0, cache_read=2.0, cache_write_5m=2.5,
        cache_write_1h=4.0, factors=(("estimate:chars/4", 1.1), ("tiktoken:o200k_base", 1.2)))
    assert november.resolve("n") == PricedModel("2026-11", "n", "", 1.0, 3.0, 1.0, 1.0, 1.0, ())
    assert november.families == {"fam": Family(None, 2.0, (("estimate:chars/4", 1.1), ("tiktoken:o200k_base", 1.2))),
                                 "bare": Family()}


def test_versions_carry_label_source_aliases_and_metadata(table: PriceTable) -> None:
    november, december = table.versions
    assert (november.version, november.source, november.effective_from_text) == (
        "2026-11", "the vendor's page", "2026-11-01T00:00:00Z")
    assert november.aliases == {"vendor/m": "m", "m-latest": "m", "vendor/mm": "m"}
    assert november.model_meta == {
        "m": {"provider": "vendor", "source": "https://example.invalid/pricing", "retrieved": "2026-10-30"},
        "n": {},
    }
    assert (december.source, december.families, december.aliases, december.model_meta) == ("", {}, {}, {"n": {}})
    assert december.resolve("n") == PricedModel("2026-12", "n", "", 1.5, 3.0, 0.15, 1.5, 1.5, ())
    assert december.resolve("m") is None and december.resolve("m-latest") is None


def test_resolve_by_alias_and_by_provider(table: PriceTable) -> None:
    november = table.versions[0]
    m = november.models["m"]
    assert november.resolve("m-latest") is m
    assert november.resolve("vendor/m") is m
    assert november.resolve("latest", "m") is None
    assert november.resolve("m", "vendor") is m
    assert november.resolve("mm", "vendor") is m  # only the qualified name is an alias
    assert november.resolve("mm") is None and november.resolve("mm", "other") is None
    assert november.resolve("unknown", "vendor") is None


def test_lookup_caches_results_and_reasons(table: PriceTable) -> None:
    at = 1_796_000_000.0  # 2026-11-30
    assert table.lookup("m", at) is table.lookup("m", at) is table.versions[0].models["m"]
    assert table.lookup("nope", at) == "unknown_model"
    assert table.lookup("m", 1_790_000_000.0) == "before_first_version"
    assert table.lookup("m", 1_796_000_000.0 + 86_400 * 2) == "unknown_model"  # not in December
    assert (table.path, len(table.sha256)) == ("fields.yaml", 64)


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        (FAMILIES, "    families: [fam]\n", "versions[0].families: expected a mapping"),
        ("      bare: {}", "      bare: [1]", "versions[0].families.bare"),
        (FACTORS, "        billed_token_factor: [1.1]\n", "versions[0].families.fam.billed_token_factor"),
        ("      n: {input: 1.0, output: 3.0}\n  - version", "      n: 5\n  - version", "versions[0].models.n"),
        ("        aliases: [vendor/m, m-latest, vendor/mm]", "        aliases: vendor/m",
         "versions[0].models.m.aliases"),
        (MODELS, "    models: [m]\n", "fields.yaml:11: versions[0].models: expected a mapping, got list"),
        ("        family: fam\n", "        family: famous\n",
         "fields.yaml:13: versions[0].models.m.family: family 'famous' is not defined"),
        ("      n: {input: 1.0, output: 3.0}\n  - version", "      n: {output: 3.0}\n  - version",
         "versions[0].models.n"),
        ("      n: {input: 1.0, output: 3.0}\n  - version", "      n: {input: 1.0}\n  - version",
         "versions[0].models.n"),
    ],
)
def test_refusals_point_at_the_key(old: str, new: str, where: str) -> None:
    assert old in TABLE
    with pytest.raises(PriceTableError) as error:
        parse_price_table(TABLE.replace(old, new, 1), "fields.yaml")
    assert "fields.yaml:" in str(error.value) and where in str(error.value), str(error.value)
