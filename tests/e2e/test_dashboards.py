"""dashboards/: generated output matches the generator, every query selects
catalog metrics with their real labels and parses, every panel has a unit, the
template variables are the ones the brief asks for."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from exporter.catalog import BY_NAME, CATALOG
from tests.support.prometheus import (
    DASHBOARDS_DIR,
    ROOT,
    TARGET_LABELS,
    check_expr_against_catalog,
    dashboard_exprs,
    dashboard_panels,
    load_dashboards,
    recording_rule_names,
    substitute,
    variable_queries,
)

EXPECTED = {
    "llm-savings-overview.json": "llm-savings-overview",
    "llm-savings-provenance.json": "llm-savings-provenance",
    "llm-savings-health.json": "llm-savings-health",
}
# Grafana unit ids the generator may use.
KNOWN_UNITS = {"currencyUSD", "short", "percentunit", "s", "bytes", "Bps", "dateTimeAsIso", "none"}


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_dashboards", ROOT / "scripts" / "gen_dashboards.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def boards() -> dict[str, dict[str, Any]]:
    return load_dashboards()


def test_committed_dashboards_are_the_generator_s_output() -> None:
    rendered = load_generator().render()
    assert sorted(rendered) == sorted(EXPECTED)
    for name, content in rendered.items():
        committed = (DASHBOARDS_DIR / name).read_text(encoding="utf-8")
        assert committed == content, f"{name} drifted: run python scripts/gen_dashboards.py"


def test_check_mode_reports_drift(tmp_path: Path) -> None:
    script = str(ROOT / "scripts" / "gen_dashboards.py")
    subprocess.run([sys.executable, script, "--out", str(tmp_path)], check=True)
    ok = subprocess.run([sys.executable, script, "--check", "--out", str(tmp_path)], check=False)
    assert ok.returncode == 0
    path = tmp_path / "llm-savings-health.json"
    path.write_text(
        path.read_text(encoding="utf-8").replace("Targets up", "Targets UP"), encoding="utf-8"
    )
    drifted = subprocess.run(
        [sys.executable, script, "--check", "--out", str(tmp_path)],
        check=False,
        capture_output=True,
        text=True,
    )
    assert drifted.returncode == 1
    assert "llm-savings-health.json" in drifted.stderr


def test_stable_uids_and_current_schema(boards: dict[str, dict[str, Any]]) -> None:
    for name, board in boards.items():
        assert board["uid"] == EXPECTED[name]
        assert len(board["uid"]) <= 40
        assert board["schemaVersion"] >= 39
        assert "id" not in board or board["id"] is None


def test_no_hard_coded_datasource(boards: dict[str, dict[str, Any]]) -> None:
    def uids(node: Any) -> list[str]:
        if isinstance(node, dict):
            found = [node["uid"]] if "uid" in node and isinstance(node["uid"], str) else []
            return found + [u for key, v in node.items() if key != "uid" for u in uids(v)]
        if isinstance(node, list):
            return [u for v in node for u in uids(v)]
        return []

    for name, board in boards.items():
        inner = dict(board)
        inner.pop("uid")
        assert set(uids(inner)) <= {"${datasource}", "-- Grafana --"}, name
        for panel in dashboard_panels(board):
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
            for target in panel["targets"]:
                assert target["datasource"]["uid"] == "${datasource}"


def test_every_panel_has_a_unit_and_a_query(boards: dict[str, dict[str, Any]]) -> None:
    for name, board in boards.items():
        for panel in dashboard_panels(board):
            unit = panel["fieldConfig"]["defaults"].get("unit")
            assert unit in KNOWN_UNITS, f"{name}: {panel['title']!r} unit {unit!r}"
            assert panel["targets"], f"{name}: {panel['title']!r} has no query"
            assert panel.get("description"), f"{name}: {panel['title']!r} has no description"


def test_units_follow_the_catalog(boards: dict[str, dict[str, Any]]) -> None:
    """A panel showing one dollar metric untransformed is in dollars, a bytes gauge in bytes."""
    for board in boards.values():
        for panel in dashboard_panels(board):
            unit = panel["fieldConfig"]["defaults"]["unit"]
            for target in panel["targets"]:
                m = re.fullmatch(
                    r"sum(?: by \([a-z_, ]+\))? \((llm_savings_[a-z_0-9]+)\{[^}]*\}\)",
                    target["expr"],
                )
                if m:
                    expected = {"usd": "currencyUSD", "bytes": "bytes", "seconds": "s"}.get(
                        BY_NAME[m.group(1)].unit, "short"
                    )
                    assert unit == expected, f"{panel['title']}: {unit} for {m.group(1)}"


def test_panel_titles_are_unique(boards: dict[str, dict[str, Any]]) -> None:
    """Titles identify panels (in links, alerts and the end-to-end test)."""
    for name, board in boards.items():
        titles = [p["title"] for p in dashboard_panels(board)]
        assert len(titles) == len(set(titles)), name


def test_grid_is_consistent(boards: dict[str, dict[str, Any]]) -> None:
    for name, board in boards.items():
        panels = dashboard_panels(board)
        ids = [p["id"] for p in panels]
        assert len(ids) == len(set(ids)), name
        cells: set[tuple[int, int]] = set()
        for p in panels:
            g = p["gridPos"]
            assert g["x"] >= 0 and g["x"] + g["w"] <= 24, p["title"]
            area = {
                (x, y)
                for x in range(g["x"], g["x"] + g["w"])
                for y in range(g["y"], g["y"] + g["h"])
            }
            assert not area & cells, f"{name}: {p['title']!r} overlaps another panel"
            cells |= area


def test_template_variables(boards: dict[str, dict[str, Any]]) -> None:
    for name, board in boards.items():
        variables = {v["name"]: v for v in board["templating"]["list"]}
        ds = variables["datasource"]
        assert (ds["type"], ds["query"]) == ("datasource", "prometheus")
        assert "current" not in ds or ds["current"] == {}
        if name == "llm-savings-health.json":
            assert variables["instance"]["multi"] and variables["instance"]["includeAll"]
            continue
        month = variables["month"]
        assert month["query"]["query"] == "label_values(llm_savings_requests_total, month)"
        assert month["sort"] == 2  # alphabetical descending: YYYY-MM, latest first
        assert not month["multi"] and not month["includeAll"]
        for multi in ("tenant", "model"):
            assert variables[multi]["multi"] and variables[multi]["includeAll"]
            assert variables[multi]["allValue"] == ".*"


def test_savings_panels_are_filtered_by_the_variables(boards: dict[str, dict[str, Any]]) -> None:
    """A month-to-date query that ignores $month would sum every retained month."""
    for name in ("llm-savings-overview.json", "llm-savings-provenance.json"):
        for title, expr in dashboard_exprs(boards[name]):
            for metric in re.findall(r"llm_savings_[a-z0-9_]+", expr):
                labels = BY_NAME[metric].labels
                if "model" in labels:
                    assert 'model=~"$model"' in expr, f"{title}: {metric} not filtered by model"
                if "tenant" in labels:
                    assert 'tenant=~"$tenant"' in expr, f"{title}: {metric} not filtered by tenant"
                if "month" in labels and "rate(" not in expr:
                    assert '"$month' in expr, (
                        f"{title}: month-to-date {metric} not filtered by month"
                    )


def test_every_metric_is_in_the_catalog_with_its_labels(boards: dict[str, dict[str, Any]]) -> None:
    records = recording_rule_names()
    problems = [
        f"{name}: {title}: {problem}"
        for name, board in boards.items()
        for title, expr in dashboard_exprs(board)
        for problem in check_expr_against_catalog(expr, records)
    ]
    for name, board in boards.items():
        for var, expr, label in variable_queries(board):
            assert expr is not None, f"{name}: ${var} queries label values of every series"
            problems += [f"{name}: ${var}: {p}" for p in check_expr_against_catalog(expr, records)]
            metric = expr.split("{")[0].strip()
            if label not in BY_NAME[metric].labels and label not in TARGET_LABELS:
                problems.append(f"{name}: ${var}: {metric} has no label {label}")
    assert problems == []


def test_every_catalog_metric_is_on_a_dashboard(boards: dict[str, dict[str, Any]]) -> None:
    shown = " ".join(expr for board in boards.values() for _, expr in dashboard_exprs(board))
    missing = [spec.name for spec in CATALOG if not re.search(re.escape(spec.name) + r"\b", shown)]
    assert missing == []


def test_health_metrics_are_on_the_health_dashboard(boards: dict[str, dict[str, Any]]) -> None:
    shown = " ".join(expr for _, expr in dashboard_exprs(boards["llm-savings-health.json"]))
    missing = [
        s.name
        for s in CATALOG
        if s.group == "health" and not re.search(re.escape(s.name) + r"\b", shown)
    ]
    assert missing == []


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_every_query_parses(boards: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """promtool parses each query, variables substituted as Grafana would."""
    values = {
        "month": "2026-11",
        "tenant": ".*",
        "model": "(gpt-4o|claude-sonnet-4-5)",
        "instance": ".*",
    }
    rules = [
        {"record": f"dashboard_check:query_{i}:parse", "expr": substitute(expr, values)}
        for i, (_title, expr) in enumerate(
            e for board in boards.values() for e in dashboard_exprs(board)
        )
    ]
    path = tmp_path / "queries.yaml"
    path.write_text(
        yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}), encoding="utf-8"
    )
    result = subprocess.run(
        ["promtool", "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_generator_refuses_a_metric_outside_the_catalog() -> None:
    gen = load_generator()
    with pytest.raises(KeyError):
        gen.catalog_unit("llm_savings_not_a_metric_total")
    panel = gen.Panel("stat", "t", "d", [gen.Target("x")], unit_of="llm_savings_nope")
    with pytest.raises(KeyError):
        panel.resolved_unit()


def test_dashboards_are_valid_json_with_sorted_keys() -> None:
    for path in DASHBOARDS_DIR.glob("*.json"):
        text = path.read_text(encoding="utf-8")
        assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"
