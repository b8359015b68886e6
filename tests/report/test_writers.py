"""The writers: JSON keeps replay's exact values; text, markdown and HTML round; HTML is self-contained."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.engine.aggregate import CELL_WIDTH, REQUESTS, SAVED, Aggregates, CellKey
from exporter.engine.pipeline import Pipeline
from exporter.prices.table import PricedModel, parse_price_table
from exporter.report.html import render_html
from exporter.report.json_report import render_json
from exporter.report.markdown import render_markdown
from exporter.report.summary import SCHEMA, Report, build_report
from exporter.report.text import WIDTH, render_text, width
from tests.report.conftest import PRICES, line

TABLE = parse_price_table(PRICES, "test-prices.yaml")

HOSTILE = '<script>alert("x")</script> | a\\b'
NOV = "2026-11-05T10:00:00Z"
LINES = [
    line(ts=NOV, request_id=f"r{i}", model=("gpt-4o", "claude-x", "nope")[i % 3], tenant=f"t{i % 13}",
         tokens_before=1000 + 7 * i, tokens_after=600, count_method=("provider", "tiktoken:o200k_base")[i % 2],
         usage={"prompt_tokens": 700, "completion_tokens": 21, "prompt_tokens_details": {"cached_tokens": 300}})
    for i in range(40)
] + [line(ts="2026-10-02T00:00:00Z", request_id="old", model="gpt-4o", tenant=HOSTILE, tokens_before=3,
          tokens_after=1, count_method="provider"), b"{broken"]
EXTERNAL = re.compile(r"""(?:src|href|xlink:href|action)\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:|//)|url\(|@import|"""
                      r"""<script|<link|<iframe|<img|<object|<embed""", re.IGNORECASE)
FLOAT_NOISE = re.compile(r"\d\.\d{5,}|\bnan\b|\binf\b|\de[+-]?\d", re.IGNORECASE)


def _report(counted: Callable[[list[bytes]], Pipeline], month: str | None = None) -> Report:
    agg = counted(LINES).aggregates
    return build_report(agg, agg.month_totals(), source="replay of 1 file", generated_at="2026-11-20T00:00:00Z",
                        timezone="UTC", month=month, price_versions=["v1"])


def test_json_keeps_replays_exact_values(counted: Callable[[list[bytes]], Pipeline]) -> None:
    parsed = json.loads(render_json(_report(counted)))
    assert parsed["schema"] == SCHEMA == "llm-savings-report/v1"
    totals = counted(LINES).aggregates.month_totals()
    assert {m: parsed["months"][m]["totals"] for m in parsed["months"]} == totals  # float for float
    nov = parsed["months"]["2026-11"]
    assert sum(row["usd_saved"] for row in nov["by_model"]) == sum(
        row["usd_saved"] for row in nov["by_model"])  # plain numbers, no strings
    assert {row["model"] for row in nov["by_model"]} == {"gpt-4o", "claude-x", "nope"}
    assert len(nov["by_tenant"]) == 13  # every tenant, not only the top ten the human formats show
    assert nov["saved_pct"] == totals["2026-11"].get("saved_pct")  # the engine's, when it counts baselines
    assert nov["provenance"]["unpriced_requests"] == {"unknown_model": 13}


def test_text_is_a_box_of_rounded_figures(counted: Callable[[list[bytes]], Pipeline]) -> None:
    text = render_text(_report(counted))
    lines = text.splitlines()
    assert all(width(row) == WIDTH for row in lines), [row for row in lines if width(row) != WIDTH]
    assert lines[0].startswith("┌─ llm-savings 2026-11") and lines[-1].startswith("└")
    assert all(row[0] in "│├┌└" and row[-1] in "│┤┐┘" for row in lines)
    assert not FLOAT_NOISE.search(text)
    assert "3 more" in text  # 13 tenants: ten shown, three summed
    totals = counted(LINES).aggregates.month_totals()["2026-11"]
    assert f"${totals['spend_usd']:,.2f}" in text or f"${totals['spend_usd']:,.4f}" in text


def test_text_box_holds_wide_and_long_names(counted: Callable[[list[bytes]], Pipeline]) -> None:
    names = ["東京チーム", "e\u0301quipe", "x" * 120]  # wide characters, a combining accent, a long name
    agg = counted([line(ts=NOV, request_id=name, model="gpt-4o", tenant=name, tokens_before=9, tokens_after=1,
                        count_method="provider") for name in names]).aggregates
    text = render_text(build_report(agg, agg.month_totals(), source="test", generated_at="2026-11-20T00:00:00Z",
                                    timezone="UTC", month=None, price_versions=["v1"]))
    lines = text.splitlines()
    assert all(width(row) == WIDTH for row in lines), [row for row in lines if width(row) != WIDTH]
    assert "東京チーム" in text and "xxx…" in text
    assert width("東京") == 4 and width("e\u0301") == 1


def test_markdown_tables_stay_tables(counted: Callable[[list[bytes]], Pipeline]) -> None:
    report = _report(counted, "2026-10")
    text = render_markdown(report)
    assert text.startswith("## LLM savings, 2026-10")
    assert not FLOAT_NOISE.search(text)
    for block in re.findall(r"(?:^\|.*\|$\n?)+", text, re.MULTILINE):
        widths = {len(re.findall(r"(?<!\\)\|", row)) for row in block.splitlines()}
        assert len(widths) == 1, block  # the hostile tenant's pipe is escaped
    assert "\\|" in text


class _Data(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[str, str] = {}
        self.rows: list[dict[str, str]] = []
        self.text: list[str] = []
        self.in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.in_style = tag == "style"
        found = {k: v or "" for k, v in attrs}
        if "data-figure" in found:
            self.figures[found["data-figure"]] = found["data-value"]
        if "data-breakdown" in found or ("data-month" in found and tag == "tr"):
            self.rows.append(found)

    def handle_endtag(self, tag: str) -> None:
        self.in_style = False

    def handle_data(self, data: str) -> None:
        if not self.in_style:
            self.text.append(data)  # what people read


def test_html_is_self_contained_and_carries_exact_values(counted: Callable[[list[bytes]], Pipeline]) -> None:
    page = render_html(_report(counted), links=True)
    assert not EXTERNAL.search(page), EXTERNAL.search(page)
    assert "http://" not in page and "https://" not in page
    assert HOSTILE not in page and "&lt;script&gt;" not in page  # October's tenant is not in November's page
    parser = _Data()
    parser.feed(page)
    totals = counted(LINES).aggregates.month_totals()
    for key in ("usd_saved", "tokens_saved", "spend_usd", "cache_savings_usd", "would_have_saved_usd"):
        assert float(parser.figures[key]) == totals["2026-11"][key]  # exact, not rounded
    saved_pct = totals["2026-11"].get("saved_pct")
    assert parser.figures["saved_pct"] == ("" if saved_pct is None else repr(saved_pct))  # not counted: never 0
    months = {row["data-month"]: row for row in parser.rows if "data-month" in row}
    assert set(months) == {"2026-10", "2026-11", "unknown"}
    assert float(months["2026-11"]["data-usd-saved"]) == totals["2026-11"]["usd_saved"]
    assert int(months["unknown"]["data-rejected"]) == 1
    assert not FLOAT_NOISE.search(" ".join(parser.text))
    assert 'href="metrics"' in page
    nope_row = re.search(r'<tr data-breakdown="model" data-name="nope".*?</tr>', page)
    assert nope_row and "unpriced" in nope_row.group(0) and "$" not in nope_row.group(0)  # no dollars invented


def test_html_escapes_label_values(counted: Callable[[list[bytes]], Pipeline]) -> None:
    page = render_html(_report(counted, "2026-10"))
    assert HOSTILE not in page and "<script" not in page
    assert "&lt;script&gt;" in page
    assert "href=" not in page  # a report file links nowhere


def test_empty_report_renders_everywhere(counted: Callable[[list[bytes]], Pipeline]) -> None:
    agg = counted([]).aggregates
    report = build_report(agg, agg.month_totals(), source="sidecar", generated_at="2026-11-20T00:00:00Z",
                          timezone="UTC", month="2026-11", price_versions=[])
    assert "no records counted" in render_text(report)
    assert "No records counted" in render_markdown(report)
    assert "No records counted yet" in render_html(report)
    assert json.loads(render_json(report))["months"] == {}


label_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(label_text, label_text), min_size=1, max_size=8))
def test_any_label_value_is_escaped_and_read_back(pairs: list[tuple[str, str]]) -> None:
    """Whatever a gateway names its models and tenants, the page stays one page and says them exactly."""
    agg = Aggregates()
    rates = TABLE.lookup("gpt-4o", 1_793_491_200.0)
    assert isinstance(rates, PricedModel)
    for index, (model, tenant) in enumerate(pairs):
        cell = [0] * CELL_WIDTH
        cell[REQUESTS], cell[SAVED] = 1, 100 + index
        agg.cells[CellKey("2026-11", model, tenant, "provider", agg.rate_id(rates))] = cell
    report = build_report(agg, agg.month_totals(), source="test", generated_at="2026-11-20T00:00:00Z",
                          timezone="UTC", month="2026-11", price_versions=["v1"])
    page = render_html(report, links=True)
    assert not EXTERNAL.search(page)
    parser = _Data()
    parser.feed(page)
    models = {row["data-name"] for row in parser.rows if row.get("data-breakdown") == "model"}
    top_models = {row.name for row in report.months[0].by_model[:10]}
    assert models == top_models
    markdown = render_markdown(report)
    for block in re.findall(r"(?:^\|.*\|$\n?)+", markdown, re.MULTILINE):
        assert len({len(re.findall(r"(?<!\\)\|", row)) for row in block.strip().split("\n")}) == 1, block
    assert all(width(row) == WIDTH for row in render_text(report).strip().split("\n"))
