"""The PromQL lexer the rule and dashboard checks rely on: it must find exactly
the metric names an expression selects, whatever strings, label names,
durations and keywords surround them (a checker that misses a name checks
nothing)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.catalog import CATALOG
from tests.support.prometheus import Analysis, PromQLLexError, analyse, substitute

METRICS = [spec.name for spec in CATALOG] + ["up", "month:llm_savings_usd_saved:sum"]
LABELS = [
    "month",
    "model",
    "tenant",
    "by",
    "sum",
    "rate",
    "on",
    "offset",
    "llm_savings_requests_total",
]


def test_examples() -> None:
    a = analyse(
        'sum by (model) (rate(llm_savings_usd_saved_total{month="$month", model=~"a|b"}'
        "[$__rate_interval])) / ignoring (tier) group_left"
        " sum without (instance) (llm_savings_spend_usd_total offset 5m)"
        ' > bool 0.5e3 and on (model) absent(up{job=~".*"}) or vector(0)'
    )
    assert a.metrics == ["llm_savings_usd_saved_total", "llm_savings_spend_usd_total", "up"]
    assert a.selectors[0].labels == ["month", "model"]
    assert a.grouping_labels == ["model", "tier", "instance", "model"]


def test_name_matcher_and_comments() -> None:
    a = analyse(
        '{__name__="llm_savings_duplicates_total", month="x"} # llm_savings_fake_total\n + 1'
    )
    assert a.metrics == ["llm_savings_duplicates_total"]
    assert a.selectors[0].labels == ["month"]


def test_strings_with_metric_like_text_are_not_metrics() -> None:
    a = analyse('label_replace(up, "dst", "llm_savings_x_total{", "src", "(.*)")')
    assert a.metrics == ["up"]


@pytest.mark.parametrize("bad", ['up{job="x}', "up{job}", "rate(up[5m)"])
def test_malformed_input_is_refused(bad: str) -> None:
    with pytest.raises(PromQLLexError):
        analyse(bad)


def test_substitute_refuses_leftover_variables() -> None:
    assert (
        substitute('x{m="$month"}[$__rate_interval]', {"month": "2026-11"}) == 'x{m="2026-11"}[1m]'
    )
    with pytest.raises(AssertionError):
        substitute('x{m="$month", t=~"$tenant"}', {"month": "2026-11"})


# --- property: generated expressions ----------------------------------------------

label_values = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=12)


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


@st.composite
def selector(draw: st.DrawFn) -> tuple[str, list[str]]:
    metric = draw(st.sampled_from(METRICS))
    matchers = draw(
        st.lists(
            st.tuples(
                st.sampled_from(LABELS), st.sampled_from(["=", "!=", "=~", "!~"]), label_values
            ),
            max_size=3,
        )
    )
    text = metric
    braces: bool = draw(st.booleans())
    if matchers or braces:
        text += "{" + ", ".join(f"{n}{op}{_quote(v)}" for n, op, v in matchers) + "}"
    if draw(st.booleans()):
        text = f"rate({text}[{draw(st.sampled_from(['5m', '1h30m', '$__rate_interval', '90s']))}])"
    if draw(st.booleans()):
        text += " offset 1d"
    return text, [metric]


@st.composite
def expression(draw: st.DrawFn, depth: int = 0) -> tuple[str, list[str]]:
    choice = draw(st.integers(0, 4 if depth < 3 else 0))
    if choice == 0:
        return draw(selector())
    if choice == 1:
        inner, names = draw(expression(depth + 1))
        agg = draw(st.sampled_from(["sum", "max", "count", "avg"]))
        grouping = draw(st.sampled_from(["", " by (model, tenant)", " without (instance, pod)"]))
        if draw(st.booleans()):
            return f"{agg}{grouping} ({inner})", names
        return f"{agg} ({inner}){grouping}", names
    if choice == 2:
        left, ln = draw(expression(depth + 1))
        right, rn = draw(expression(depth + 1))
        op = draw(
            st.sampled_from(
                [" / ", " - ", " and on (model) ", " or ", " > bool ", " / ignoring (tier) "]
            )
        )
        return f"({left}){op}({right})", ln + rn
    if choice == 3:
        inner, names = draw(expression(depth + 1))
        return f"{draw(st.sampled_from(['3600', '1e3', '0.5', '0x1F']))} * {inner}", names
    inner, names = draw(expression(depth + 1))
    return f"abs({inner} - 1) > 0.25", names


@settings(max_examples=300, deadline=None)
@given(expression())
def test_finds_exactly_the_selected_metrics(case: tuple[str, list[str]]) -> None:
    expr, names = case
    result: Analysis = analyse(expr)
    assert result.metrics == names
