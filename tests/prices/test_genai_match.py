"""Model names resolve in an imported genai-prices table as genai-prices resolves them.

Hypothesis draws names from each model's own rule (its literals with dates, revisions,
prefixes and other case around them, or junk) and a provider (the model's, another, a
LiteLLM-style name, none); the table's ``resolve`` must name the model genai-prices'
``find_provider_model`` finds, or nothing when genai-prices finds nothing or a model the
table could not price. Clause semantics are checked against genai-prices' own clause
objects, and refused rules name file, line and what is wrong.
"""

from __future__ import annotations

import pytest
from genai_prices import data_snapshot
from genai_prices.types import (
    ClauseAnd,
    ClauseContains,
    ClauseEndsWith,
    ClauseEquals,
    ClauseOr,
    ClauseRegex,
    ClauseStartsWith,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.prices.importers.genai_prices import convert, genai_resolver
from exporter.prices.importers.genai_rules import clause_of
from exporter.prices.match import dashed_date, matches
from exporter.prices.table import PriceTable, PriceTableError, parse_price_table
from tests.support.genai_names import names_for

SNAPSHOT = data_snapshot.get_snapshot()
RESOLVE = genai_resolver(SNAPSHOT)
MODELS = [(provider, model) for provider in SNAPSHOT.providers for model in provider.models]
PROVIDER_NAMES = [p.id for p in SNAPSHOT.providers] + ["litellm", "bedrock", "vertex_ai", "azure_ai", "together_ai",
                                                      "OpenAI", " anthropic ", "no-such-provider"]


@pytest.fixture(scope="module")
def table() -> PriceTable:
    from datetime import date
    return parse_price_table(convert(SNAPSHOT.providers, RESOLVE, source="t", since=date(2026, 12, 1)).text,
                             "<all>")


@st.composite
def request_names(draw: st.DrawFn) -> tuple[str, str | None]:
    provider, model = draw(st.sampled_from(MODELS))
    name = draw(names_for(model.match, model.id))
    chosen = draw(st.sampled_from([None, provider.id, provider.id, *PROVIDER_NAMES]))
    return name, chosen


@settings(max_examples=4000, deadline=None)
@given(request_names())
def test_names_resolve_to_the_model_genai_prices_finds(table: PriceTable, request: tuple[str, str | None]) -> None:
    name, provider = request
    version = table.newest
    theirs = RESOLVE(name, provider)
    ours = version.resolve(name, provider)
    if theirs is None and ours is not None and ours.model in (name, f"{provider}/{name}"):
        return  # where no rule matches, a table's own name (or <provider>/<name>) is that model
    assert (ours.model if ours else None) == (theirs if theirs in version.models else None), (name, provider)


def test_dated_names_of_the_issue_resolve(table: PriceTable) -> None:
    version = table.newest
    for name, provider, model in (("claude-sonnet-4-5-20250929", None, "anthropic/claude-sonnet-4-5"),
                                  ("claude-sonnet-4-5-20250929", "anthropic", "anthropic/claude-sonnet-4-5"),
                                  ("gemini-2.0-flash-001", None, "google/gemini-2.0-flash"),
                                  ("gemini-2.0-flash-001", "vertex_ai", "google/gemini-2.0-flash"),
                                  ("GPT-4o-2024-11-20", "azure", "openai/gpt-4o")):
        found = version.resolve(name, provider)
        assert found is not None and found.model == model == RESOLVE(name, provider)
    assert version.resolve("no-such-model-xyz", None) is None


literals = st.text(alphabet="abcAB-.1", min_size=1, max_size=4)
leaves = st.one_of(literals.map(ClauseEquals), literals.map(ClauseStartsWith), literals.map(ClauseEndsWith),
                   literals.map(ClauseContains),
                   st.sampled_from(["^a", "b$", "[0-9]", "A", "a.?b", r"\.1"]).map(ClauseRegex))
rules = st.recursive(leaves, lambda sub: st.one_of(st.lists(sub, min_size=1, max_size=3).map(ClauseOr),
                                                   st.lists(sub, min_size=1, max_size=3).map(ClauseAnd)),
                     max_leaves=6)


@settings(max_examples=1500, deadline=None)
@given(rules, st.text(alphabet="abcAB-.1", max_size=8))
def test_clauses_mean_what_genai_prices_clauses_mean(rule, name: str) -> None:
    """Lower-cased name; literals compared lower-cased; a regex as written (so ``A`` never matches)."""
    assert matches(clause_of(rule), name) == rule.is_match(name.lower())


@given(st.text(alphabet="ab-0123456789", max_size=24))
def test_dashed_date_is_genai_prices_retry(name: str) -> None:
    from genai_prices.types import _normalize_compact_dated_ref
    assert dashed_date(name) == _normalize_compact_dated_ref(name)


HEAD = ('schema: llm-savings-prices/v2\n{providers}versions:\n  - version: "v"\n'
        '    effective_from: "2025-01-01T00:00:00Z"\n    models:\n'
        '      "p/m":\n        input: 1.0\n        output: 2.0\n        provider: p\n        match: {match}\n')


@pytest.mark.parametrize(("match", "providers", "where"), [
    ('{regex: "gpt-("}', "", ":10: versions[0].models.p/m.match.regex: bad regex 'gpt-(': missing )"),
    ("{prefix: gpt}", "", ":10: versions[0].models.p/m.match.prefix: unknown clause 'prefix'"),
    ("{or: []}", "", ":10: versions[0].models.p/m.match.or: expected a non-empty list of clauses"),
    ("{equals: a, contains: b}", "", ":10: versions[0].models.p/m.match: expected a clause: a mapping with one of"),
    ('{and: [{equals: ""}]}', "", ":10: versions[0].models.p/m.match.and[0].equals: expected a non-empty string"),
    ("{equals: m}", "providers: {q: {}}\n", ":10: versions[0].models.p/m.provider: a model with a match rule names "
                                            "a provider listed under providers, got 'p'"),
    ("{equals: m}", "providers: {p: {fallback: [z]}}\n", ":2: providers.p.fallback[0]: provider 'z' is not listed"),
    ("{equals: m}", "providers: {p: {model_match: {regex: '*'}}}\n", ":2: providers.p.model_match.regex: bad regex"),
])
def test_bad_rules_are_refused_naming_file_line_and_what(match: str, providers: str, where: str) -> None:
    with pytest.raises(PriceTableError) as caught:
        parse_price_table(HEAD.format(match=match, providers=providers), "t.yaml")
    assert str(caught.value).startswith("t.yaml" + where), str(caught.value)


def test_v1_refuses_match_and_providers() -> None:
    v1 = HEAD.format(match="{equals: m}", providers="").replace("/v2", "/v1")
    with pytest.raises(PriceTableError, match="unknown key 'match'"):
        parse_price_table(v1, "t.yaml")
    with pytest.raises(PriceTableError, match="providers is a 'llm-savings-prices/v2' key"):
        parse_price_table(v1.replace("versions:", "providers: {p: {}}\nversions:"), "t.yaml")


def test_rules_without_providers_try_the_record_provider_then_every_model() -> None:
    text = HEAD.format(match="{starts_with: Claude-}", providers="") + (
        '      "q/m":\n        input: 3.0\n        output: 4.0\n        provider: q\n        match: {contains: "-4"}\n')
    version = parse_price_table(text, "t.yaml").newest
    assert version.resolve("claude-opus-4-20250514", None).model == "p/m"  # first in table order
    assert version.resolve("claude-opus-4-20250514", "q").model == "q/m"  # the record's provider's models
    assert version.resolve("claude-opus-4-20250514", "r") is None
    assert version.resolve("m", "p").model == "p/m"  # <provider>/<name> exact, before rules


def test_rules_without_providers_reach_models_with_no_provider_key_and_ignore_case() -> None:
    """A hand-written rule on a model with no ``provider`` key serves records that name a provider."""
    text = HEAD.format(match="{starts_with: Claude-}", providers="") + (
        '      "gpt-4o":\n        input: 3.0\n        output: 4.0\n        match: {starts_with: gpt-4o}\n')
    version = parse_price_table(text, "t.yaml").newest
    for provider in (None, "openai", "OpenAI", "azure"):
        assert version.resolve("gpt-4o-2024-08-06", provider).model == "gpt-4o", provider
    assert version.resolve("Claude-opus-4", "P").model == "p/m"  # the provider key, any case
    assert version.resolve("claude-opus-4", "q") is None  # another provider's rule is not tried


def test_prices_show_says_a_rule_resolved_the_name(table: PriceTable) -> None:
    from exporter.prices.explain import explain
    ts = table.newest.effective_from
    shown = explain(table, "claude-sonnet-4-5-20250929", ts)
    assert shown["resolved_by"] == "match rule of 'anthropic/claude-sonnet-4-5'"
    assert explain(table, "anthropic/claude-sonnet-4-5", ts)["resolved_by"] == "model name"


def test_first_rule_in_file_order_wins_listed_names_or_open_rules() -> None:
    """Rules that only list names are looked up by name; an earlier open rule still comes first."""
    models = "".join(f'      "p/{name}":\n        input: {rate}\n        output: 1.0\n        provider: p\n'
                     f"        match: {rule}\n" for name, rate, rule in (
                         ("a", 1.0, "{or: [{equals: X-1}, {equals: x-2}]}"),
                         ("b", 2.0, "{starts_with: x-}"),
                         ("c", 3.0, "{or: [{equals: x-3}, {equals: x-1}]}"),
                         ("d", 4.0, "{equals: y-2025-01-31}")))
    version = parse_price_table(HEAD.split('      "p/m"')[0].format(providers="") + models, "t.yaml").newest
    assert [version.resolve(n, "p").model for n in ("x-1", "X-2", "x-3", "x-9", "y-20250131")] == \
        ["p/a", "p/a", "p/b", "p/b", "p/d"]
    assert version.resolve("y-20250132", "p") is None  # not a date: no dashed retry
