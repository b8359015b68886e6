"""Golden /metrics files: Prometheus text and OpenMetrics, byte for byte, linted, cross-checked.

Cases live in ``tests/fixtures/golden/<case>/`` (input.jsonl, optional prices.yaml
and case.yaml, expected.prom, expected.om): basic savings, cache tiers of every
provider usage shape, unpriced + rejects + duplicates, two price versions (in
Europe/Berlin), label overflow. The expected files are rendered by
``Exposition.render`` with fixed health samples (price table info, label
overflow) so they are stable, and hold the families that have samples (a new,
empty health metric in the catalog changes no case). To regenerate them after
an intended change:

    python scripts/regen_golden.py            # all cases
    python scripts/regen_golden.py cache_tiers

and review the diff. Besides the byte comparison, each text file must pass
``promtool check metrics`` (promtool 2.42 lints only the classic text format),
each OpenMetrics file must parse with prometheus_client's OpenMetrics parser
with ``_created`` = the month's start in the case's zone, and the values a
scraper reads must equal ``replay --json`` over the same input.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from exporter import catalog
from exporter.exposition.render import OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE, Exposition
from exporter.sidecar.config import config_from_dict
from exporter.sidecar.sidecar import Sidecar
from tests.support.processes import OPENMETRICS_ACCEPT, ROOT, Samples, replay_json, samples
from tests.support.sidecar import WALL, drain

GOLDEN = ROOT / "tests" / "fixtures" / "golden"
REGEN = "python scripts/regen_golden.py"


def _load_regen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("regen_golden", ROOT / "scripts" / "regen_golden.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


regen = _load_regen()
CASES = [p.name for p in regen.cases()]


def test_every_case_is_present() -> None:
    assert set(CASES) >= {"basic_savings", "cache_tiers", "unpriced_rejects_duplicates",
                          "two_price_versions", "label_overflow"}
    for case in CASES:
        assert (GOLDEN / case / "expected.prom").exists() and (GOLDEN / case / "expected.om").exists()


@pytest.mark.parametrize("case", CASES)
def test_rendering_equals_golden_bytes(case: str) -> None:
    text, om = regen.render_case(GOLDEN / case)
    assert text == (GOLDEN / case / "expected.prom").read_bytes(), f"text exposition changed; {REGEN} {case}"
    assert om == (GOLDEN / case / "expected.om").read_bytes(), f"OpenMetrics changed; {REGEN} {case}"


@pytest.mark.parametrize("case", CASES)
def test_rendering_is_stable_across_scrapes(case: str) -> None:
    """A second scrape of unchanged aggregates (the incremental path) is the same text."""
    pipeline = regen.case_pipeline(GOLDEN / case)
    exposition = Exposition(pipeline.month_of.start)
    health = regen.fixed_health(pipeline)
    first = exposition.render(pipeline.aggregates, health)
    assert exposition.render(pipeline.aggregates, health) == first
    assert regen.with_samples(exposition.render(pipeline.aggregates, health, openmetrics=True)) == \
        (GOLDEN / case / "expected.om").read_bytes()


@pytest.mark.parametrize("case", CASES)
def test_golden_text_passes_promtool(case: str) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (Debian package prometheus)")
    body = (GOLDEN / case / "expected.prom").read_bytes()
    lint = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, timeout=60,
                          check=False)
    assert lint.returncode == 0, lint.stdout.decode() + lint.stderr.decode()


def _zone(case: str) -> ZoneInfo:
    return ZoneInfo(regen.case_settings(GOLDEN / case).get("timezone", "UTC"))


@pytest.mark.parametrize("case", CASES)
def test_golden_openmetrics_parses_with_month_start_created(case: str) -> None:
    text = (GOLDEN / case / "expected.om").read_text(encoding="utf-8")
    assert text.endswith("# EOF\n")
    parsed = samples(text, openmetrics=True)
    zone = _zone(case)
    created_seen = 0
    for spec in catalog.CATALOG:
        if spec.type != "counter" or not spec.labels or spec.labels[0] != catalog.MONTH:
            continue
        totals = parsed.get(spec.name, {})
        created = parsed.get(spec.family_name + "_created", {})
        for labels in totals:
            month = dict(labels)["month"]
            if month == "unknown":
                assert labels not in created  # no month, no start
                continue
            year, mon = int(month[:4]), int(month[5:])
            assert created[labels] == datetime(year, mon, 1, tzinfo=zone).timestamp(), (spec.name, labels)
            created_seen += 1
        assert set(created) <= set(totals)
    assert created_seen > 0


@pytest.mark.parametrize("case", CASES)
def test_text_and_openmetrics_carry_the_same_values(case: str) -> None:
    text = samples((GOLDEN / case / "expected.prom").read_text(encoding="utf-8"))
    om = samples((GOLDEN / case / "expected.om").read_text(encoding="utf-8"), openmetrics=True)
    om_values = {k: v for k, v in om.items() if not k.endswith("_created")}
    # counters keep their _total sample name in both formats; only _created is extra
    assert om_values == text


def _sum(parsed: dict[str, Samples], name: str, month: str) -> float:
    return sum(v for k, v in parsed.get(name, {}).items() if dict(k).get("month") == month)


def _scraped_month_totals(parsed: dict[str, Samples]) -> dict[str, dict[str, float]]:
    """The replay --json view, computed from nothing but what a scraper reads."""
    p = catalog.PREFIX
    months = {dict(k)["month"] for name, table in parsed.items() if name.startswith(p) for k in table
              if "month" in dict(k)}
    out: dict[str, dict[str, float]] = {}
    for month in sorted(months):
        def tier(name: str, month: str = month) -> float:
            return sum(v for k, v in parsed.get(p + "prompt_tokens_total", {}).items()
                       if dict(k)["month"] == month and dict(k)["tier"] == name)

        fresh, read = tier("fresh"), tier("cache_read")
        write = tier("cache_write_5m") + tier("cache_write_1h")
        prompt = fresh + read + write
        out[month] = {
            "requests": _sum(parsed, p + "requests_total", month),
            "duplicates": _sum(parsed, p + "duplicates_total", month),
            "rejected": _sum(parsed, p + "records_rejected_total", month),
            "unpriced": _sum(parsed, p + "unpriced_requests_total", month),
            "tokens_saved": _sum(parsed, p + "tokens_saved_total", month),
            "usd_saved": _sum(parsed, p + "usd_saved_total", month),
            "would_have_saved_tokens": _sum(parsed, p + "would_have_saved_tokens_total", month),
            "would_have_saved_usd": _sum(parsed, p + "would_have_saved_usd_total", month),
            "fresh_input_tokens": fresh,
            "cache_read_tokens": read,
            "cache_write_tokens": write,
            "output_tokens": _sum(parsed, p + "output_tokens_total", month),
            "spend_usd": _sum(parsed, p + "spend_usd_total", month),
            "cache_savings_usd": _sum(parsed, p + "cache_read_savings_usd_total", month)
            - _sum(parsed, p + "cache_write_premium_usd_total", month),
            "cache_hit_rate": read / prompt if prompt else 0.0,
            **_scraped_ratios(parsed, month),
        }
    return out


def _scraped_ratios(parsed: dict[str, Samples], month: str) -> dict[str, Any]:
    """The keys of saved %, the compression ratio, dollars by component and net savings, from the scrape."""
    p = catalog.PREFIX

    def where(name: str, label: str, value: str) -> float:
        return sum(v for k, v in parsed.get(p + name, {}).items()
                   if dict(k)["month"] == month and dict(k)[label] == value)

    def ratio(a: float, b: float) -> float | None:
        return a / b if b else None

    populations: dict[str, dict[str, Any]] = {}
    for name in ("compacted", "untouched"):
        base = where("baseline_input_tokens_total", "population", name)
        sent = where("sent_input_tokens_total", "population", name)
        saved = base - sent if name == "compacted" else 0
        populations[name] = {"baseline_input_tokens": base, "sent_input_tokens": sent,
                             "compression_ratio": ratio(base, sent), "saved_pct": ratio(saved, base)
                             if name == "compacted" else (0.0 if base else None)}
    baseline = _sum(parsed, p + "baseline_input_tokens_total", month)
    sent = _sum(parsed, p + "sent_input_tokens_total", month)
    spend = _sum(parsed, p + "optimizer_spend_usd_total", month)
    by_tokens: dict[str, float] = {}
    by_usd: dict[str, float] = {}
    for key, value in parsed.get(p + "tokens_saved_total", {}).items():
        if dict(key)["month"] == month:
            by_tokens[dict(key)["component"]] = by_tokens.get(dict(key)["component"], 0) + value
            by_usd.setdefault(dict(key)["component"], 0.0)
    for key, value in parsed.get(p + "component_usd_saved_total", {}).items():
        if dict(key)["month"] == month:
            by_usd[dict(key)["component"]] += value
    return {
        "baseline_input_tokens": baseline, "sent_input_tokens": sent,
        "saved_pct": ratio(_sum(parsed, p + "tokens_saved_total", month), baseline),
        "compression_ratio": ratio(baseline, sent), "populations": populations,
        "optimizer_unpriced": _sum(parsed, p + "optimizer_unpriced_requests_total", month),
        "optimizer_spend_usd": spend,
        "net_usd_saved": _sum(parsed, p + "usd_saved_total", month) - spend,
        "tokens_saved_by_component": by_tokens, "usd_saved_by_component": by_usd,
        **_scraped_gateway(parsed, month),
    }


def _scraped_gateway(parsed: dict[str, Samples], month: str) -> dict[str, Any]:
    """The response-cache hit and routing keys, from the scrape."""
    p = catalog.PREFIX
    saved = _sum(parsed, p + "routing_savings_usd_total", month)
    extra = _sum(parsed, p + "routing_extra_cost_usd_total", month)
    return {
        "response_cache_hits": _sum(parsed, p + "response_cache_hits_total", month),
        "response_cache_unpriced_hits": _sum(parsed, p + "response_cache_unpriced_hits_total", month),
        "response_cache_avoided_usd": _sum(parsed, p + "response_cache_avoided_usd_total", month),
        "routed_requests": _sum(parsed, p + "routed_requests_total", month),
        "routing_unpriced_requests": _sum(parsed, p + "routing_unpriced_requests_total", month),
        "routing_savings_usd": saved, "routing_extra_cost_usd": extra, "routing_net_usd": saved - extra,
    }


def _assert_same(scraped: Any, replayed: Any, where: tuple[str, ...]) -> None:
    if isinstance(replayed, dict):
        assert set(scraped) == set(replayed), where
        for key, value in replayed.items():
            _assert_same(scraped[key], value, (*where, key))
    elif isinstance(replayed, float):
        assert scraped == pytest.approx(replayed, rel=1e-12, abs=1e-15), where
    else:
        assert scraped == replayed, where


def _replay(case: str) -> dict[str, Any]:
    settings = regen.case_settings(GOLDEN / case)
    args = ["--prices", str(regen.case_prices(GOLDEN / case)), "--timezone", settings.get("timezone", "UTC")]
    if "dedupe_window_days" in settings:
        args += ["--dedupe-window-days", str(settings["dedupe_window_days"])]
    return replay_json([GOLDEN / case / "input.jsonl"], *args)


@pytest.mark.parametrize("case", CASES)
def test_scraped_values_equal_replay_json(case: str) -> None:
    """prometheus_client's reading of our text gives replay --json's month totals."""
    parsed = samples((GOLDEN / case / "expected.prom").read_text(encoding="utf-8"))
    scraped = _scraped_month_totals(parsed)
    replayed = _replay(case)["months"]
    assert set(scraped) == set(replayed)
    capped = "labels" in regen.case_settings(GOLDEN / case)  # replay caps no labels: compare component totals
    for month, totals in replayed.items():
        # optimizer_requests has no series of its own (the tokens counter counts tokens, not calls)
        mine = {**scraped[month], "optimizer_requests": totals["optimizer_requests"]}
        if capped:
            for key in ("tokens_saved_by_component", "usd_saved_by_component"):
                mine[key], totals[key] = sum(mine[key].values()), sum(totals[key].values())
        _assert_same(mine, totals, (month,))


def test_cache_tiers_case_by_hand() -> None:
    """Independent of the renderer: the figures of the cache case worked out by hand."""
    parsed = samples((GOLDEN / "cache_tiers" / "expected.prom").read_text(encoding="utf-8"))

    def tiers(model: str) -> dict[str, float]:
        return {dict(k)["tier"]: v for k, v in parsed["llm_savings_prompt_tokens_total"].items()
                if dict(k)["model"] == model}

    # OpenAI chat 5000/3072 + responses 7000/6144 + compatible 4000 (1000 cached, 2000 written)
    assert tiers("gpt-4o") == {"fresh": 3784, "cache_read": 10216, "cache_write_5m": 2000, "cache_write_1h": 0}
    # Anthropic: creation without split = 5m; with the split 1000/4000
    assert tiers("claude-sonnet-4-5") == {"fresh": 200, "cache_read": 20000, "cache_write_5m": 4000,
                                          "cache_write_1h": 4000}
    assert tiers("gemini-2.5-pro") == {"fresh": 1000, "cache_read": 8000, "cache_write_5m": 0,
                                       "cache_write_1h": 0}
    assert tiers("amazon.nova-pro-v1:0") == {"fresh": 400, "cache_read": 2000, "cache_write_5m": 700,
                                             "cache_write_1h": 0}
    assert tiers("deepseek-chat") == {"fresh": 1000, "cache_read": 5000, "cache_write_5m": 0,
                                      "cache_write_1h": 0}
    outputs = {dict(k)["model"]: v for k, v in parsed["llm_savings_output_tokens_total"].items()}
    assert outputs["gemini-2.5-pro"] == 600 + 1400  # thoughts are output
    premium = {dict(k)["model"]: v for k, v in parsed["llm_savings_cache_write_premium_usd_total"].items()}
    # only the premium family pays for writes: 4000 x (3.75 - 3) + 4000 x (6 - 3) per million
    assert premium == {"claude-sonnet-4-5": pytest.approx(0.015), "gpt-4o": 0.0, "gemini-2.5-pro": 0.0,
                       "amazon.nova-pro-v1:0": 0.0, "deepseek-chat": 0.0}


@pytest.mark.parametrize("case", CASES)
def test_sidecar_metrics_serve_the_golden_series(case: str, tmp_path: Path) -> None:
    """The real Sidecar over the same input serves the golden savings/provenance series."""
    settings = regen.case_settings(GOLDEN / case)
    (tmp_path / "logs").mkdir()
    shutil.copy(GOLDEN / case / "input.jsonl", tmp_path / "logs" / "input.jsonl")
    config = config_from_dict({
        "listen": "127.0.0.1:0",
        "state_dir": str(tmp_path / "state"),
        "prices": str(regen.case_prices(GOLDEN / case)),
        "timezone": settings.get("timezone", "UTC"),
        "month_retention": 24,  # the inputs reach back to 2025-12
        "labels": settings.get("labels", {}),
        "sources": [{"name": "gw", "paths": [str(tmp_path / "logs" / "*.jsonl")], "watch": False}],
    }, origin="golden")
    sidecar = Sidecar(config, wall_clock=lambda: WALL)
    try:
        drain(sidecar)
        text, text_type = sidecar.metrics(None)
        om, om_type = sidecar.metrics(OPENMETRICS_ACCEPT)
    finally:
        for runner in sidecar.sources:
            runner.tailer.close()
        sidecar.server.stop()
    assert (text_type, om_type) == (TEXT_CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE)
    for served, golden, is_om in ((text, "expected.prom", False), (om, "expected.om", True)):
        got = samples(served.decode(), openmetrics=is_om)
        want = samples((GOLDEN / case / golden).read_text(encoding="utf-8"), openmetrics=is_om)
        for spec in catalog.CATALOG:
            if spec.group == "health" or spec.name.startswith(catalog.PREFIX + "price_table"):
                continue
            for name in catalog.exposed_series_names(spec):
                assert got.get(name, {}) == want.get(name, {}), name
    overflow = samples(text.decode())["llm_savings_label_overflow_total"]
    assert overflow == samples((GOLDEN / case / "expected.prom").read_text())["llm_savings_label_overflow_total"]


@pytest.mark.parametrize("seed", ["1", "2"])
def test_series_order_does_not_depend_on_the_hash_seed(seed: str) -> None:
    """Series order must not follow set order (str hashes change per process)."""
    code = ("import sys, runpy; m = runpy.run_path('scripts/regen_golden.py'); "
            "sys.stdout.buffer.write(b''.join(b''.join(m['render_case'](c)) for c in m['cases']()))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=120,
                            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)},
                            check=False)
    assert result.returncode == 0, result.stderr.decode()
    expected = b"".join((GOLDEN / c / "expected.prom").read_bytes() + (GOLDEN / c / "expected.om").read_bytes()
                        for c in CASES)
    assert result.stdout == expected


def test_net_savings_case_by_hand() -> None:
    """The optimizer case, worked out by hand from tests/fixtures/golden/prices.yaml (gpt-4o 2.5 in, 1.25
    cache read, 10.0 out; claude-sonnet-4-5 3.0 in): spend, unpriced reasons, populations, components."""
    parsed = samples((GOLDEN / "net_savings" / "expected.prom").read_text(encoding="utf-8"))
    p = catalog.PREFIX
    # n-1 (fresh 10000, cache read 2000, out 900) and n-2 (fresh 6000, out 10); the duplicate n-1 pays nothing
    assert _sum(parsed, p + "optimizer_spend_usd_total", "2026-11") == (16000 * 2.5 + 2000 * 1.25 + 910 * 10.0) / 1e6
    unpriced = {dict(k)["reason"]: v for k, v in parsed[p + "optimizer_unpriced_requests_total"].items()}
    assert unpriced == {"unknown_model": 1, "unknown_usage_shape": 1}
    baseline = {dict(k)["population"]: v for k, v in parsed[p + "baseline_input_tokens_total"].items()
                if dict(k)["model"] == "gpt-4o"}
    assert baseline == {"compacted": 9000, "untouched": 800}
    by_component = {dict(k)["component"]: v for k, v in parsed[p + "component_usd_saved_total"].items()
                    if dict(k)["model"] == "gpt-4o"}
    assert by_component == {"history_summary": 4000 * 2.5 / 1e6, "tool_output_dedupe": 1500 * 2.5 / 1e6,
                            "unattributed": 500 * 2.5 / 1e6}
    assert _sum(parsed, p + "records_rejected_total", "2026-11") == 1  # n-5: an optimizer block without usage
