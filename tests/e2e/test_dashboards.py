"""dashboards/: generated output matches the mixin, every query selects catalog
metrics with their real labels and parses, every panel has a unit and sits in a
row, the template variables are the ones the brief asks for, and Grafana's own
models (grafana-foundation-sdk) read every dashboard, panel and query."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.catalog import BY_NAME, CATALOG
from exporter.mixin.config import values
from exporter.mixin.dashboards.common import Panel, Target, catalog_unit
from exporter.mixin.render import render
from tests.support.prometheus import (
    DASHBOARDS_DIR,
    PROMETHEUS_SERIES,
    ROOT,
    TARGET_LABELS,
    analyse,
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


@pytest.fixture(scope="module")
def boards() -> dict[str, dict[str, Any]]:
    return load_dashboards()


def test_committed_dashboards_are_the_mixin_s_output() -> None:
    rendered = {path.split("/", 1)[1]: text for path, text in render().items() if path.startswith("dashboards/")}
    assert sorted(rendered) == sorted(EXPECTED)
    for name, content in rendered.items():
        committed = (DASHBOARDS_DIR / name).read_text(encoding="utf-8")
        assert committed == content, f"{name} drifted: run python scripts/gen_mixin.py"


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
    job_selector = values()["jobSelector"]
    for name, board in boards.items():
        variables = {v["name"]: v for v in board["templating"]["list"]}
        ds = variables["datasource"]
        assert (ds["type"], ds["query"]) == ("datasource", "prometheus")
        assert "current" not in ds or ds["current"] == {}
        # The scope: cluster and namespace (All = ".*": also targets without the label), then
        # the job, whose All is the jobs the mixin's job selector finds (no allValue).
        names = [v["name"] for v in board["templating"]["list"]]
        assert names[:4] == ["datasource", "cluster", "namespace", "job"]
        for scope in ("cluster", "namespace", "job"):
            assert variables[scope]["multi"] and variables[scope]["includeAll"]
            assert job_selector in variables[scope]["query"]["query"]
        assert variables["cluster"]["allValue"] == variables["namespace"]["allValue"] == ".*"
        assert variables["job"]["allValue"] is None
        assert variables["namespace"]["query"]["query"].endswith(", namespace)")
        if name == "llm-savings-health.json":
            assert variables["instance"]["multi"] and variables["instance"]["includeAll"]
            continue
        month = variables["month"]
        assert month["query"]["query"] == (
            'label_values(llm_savings_requests_total{cluster=~"$cluster", namespace=~"$namespace", '
            'job=~"$job"}, month)'
        )
        assert month["sort"] == 2  # alphabetical descending: YYYY-MM, latest first
        assert not month["multi"] and not month["includeAll"]
        for multi in ("tenant", "model"):
            assert variables[multi]["multi"] and variables[multi]["includeAll"]
            assert variables[multi]["allValue"] == ".*"


def test_every_query_is_scoped_by_cluster_namespace_and_job(boards: dict[str, dict[str, Any]]) -> None:
    """A selector that ignores the scope variables would mix clusters or other jobs' series."""
    for name, board in boards.items():
        for title, expr in dashboard_exprs(board):
            selectors = analyse(expr).selectors
            assert selectors, f"{name}: {title}: no selector"
            for selector in selectors:
                missing = {"cluster", "namespace", "job"} - set(selector.labels)
                assert not missing, f"{name}: {title}: {selector.metric} not scoped by {sorted(missing)}"
            for matcher in ('cluster=~"$cluster"', 'namespace=~"$namespace"', 'job=~"$job"'):
                assert expr.count(matcher) == len(selectors), f"{name}: {title}: {matcher}"


def test_panels_sit_in_rows(boards: dict[str, dict[str, Any]]) -> None:
    for name, board in boards.items():
        panels = board["panels"]
        assert panels[0]["type"] == "row", name
        rows = [p for p in panels if p["type"] == "row"]
        assert len(rows) >= 3, name
        assert len({r["title"] for r in rows}) == len(rows), name
        for row in rows:
            assert row["gridPos"] == {"h": 1, "w": 24, "x": 0, "y": row["gridPos"]["y"]}
            assert not row["collapsed"] and row["panels"] == []


def test_import_header_for_grafana_com(boards: dict[str, dict[str, Any]]) -> None:
    for name, board in boards.items():
        (source,) = board["__inputs"]
        assert (source["type"], source["pluginId"]) == ("datasource", "prometheus")
        requires = {(r["type"], r["id"]) for r in board["__requires"]}
        assert {("grafana", "grafana"), ("datasource", "prometheus")} <= requires, name
        used = {p["type"] for p in dashboard_panels(board)}
        assert {kind for kind_type, kind in requires if kind_type == "panel"} == used, name


def test_token_stats_are_split_by_count_method(boards: dict[str, dict[str, Any]]) -> None:
    """Tokens counted by different estimators are not one quantity: a stat never adds them up."""
    for name, board in boards.items():
        for panel in dashboard_panels(board):
            if panel["type"] != "stat":
                continue
            for target in panel["targets"]:
                for metric in re.findall(r"llm_savings_[a-z0-9_]+", target["expr"]):
                    if BY_NAME[metric].unit == "tokens" and "method" in BY_NAME[metric].labels:
                        assert "by (method)" in target["expr"], f"{name}: {panel['title']} sums methods"
                        assert target["legendFormat"] == "{{method}}"


# The optimizer's counters carry the optimizer's model, not the request's: the model variable does
# not apply to them, nor to net savings (dollars saved on every model minus the optimizer's spend).
NOT_BY_MODEL = {"Net savings (saved - optimizer spend)"}
# The priced counters (priced_requests_total, priced_spend_usd_total) have no tenant label: their shares are of
# every tenant's requests and spend, so the totals they divide by must not be filtered by tenant either.
NOT_BY_TENANT = {"Share of requests priced at a prompt tier or service tier",
                 "Share of spend priced at a prompt tier or service tier"}


def test_savings_panels_are_filtered_by_the_variables(boards: dict[str, dict[str, Any]]) -> None:
    """A month-to-date query that ignores $month would sum every retained month."""
    for name in ("llm-savings-overview.json", "llm-savings-provenance.json"):
        for title, expr in dashboard_exprs(boards[name]):
            for metric in re.findall(r"llm_savings_[a-z0-9_]+", expr):
                labels = BY_NAME[metric].labels
                by_model = title not in NOT_BY_MODEL and not metric.startswith("llm_savings_optimizer_")
                if "model" in labels and not by_model:
                    assert 'model=~"$model"' not in expr, f"{title}: {metric} filtered by the request's model"
                elif "model" in labels:
                    assert 'model=~"$model"' in expr, f"{title}: {metric} not filtered by model"
                if "tenant" in labels and title in NOT_BY_TENANT:
                    assert 'tenant=~"$tenant"' not in expr, f"{title}: {metric} filtered by tenant"
                elif "tenant" in labels:
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
            labels = BY_NAME[metric].labels if metric in BY_NAME else PROMETHEUS_SERIES[metric]
            if label not in labels and label not in TARGET_LABELS:
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
        "cluster": ".*",
        "namespace": ".*",
        "job": "(llm-savings-exporter|rel-llm-savings-exporter)",
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
    with pytest.raises(KeyError):
        catalog_unit("llm_savings_not_a_metric_total")
    panel = Panel("stat", "t", "d", [Target("x")], unit_of="llm_savings_nope")
    with pytest.raises(KeyError):
        panel.resolved_unit()


def test_dashboards_are_valid_json_with_sorted_keys() -> None:
    for path in DASHBOARDS_DIR.glob("*.json"):
        text = path.read_text(encoding="utf-8")
        assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


# --- Grafana's own models -----------------------------------------------------------

sdk = pytest.importorskip("grafana_foundation_sdk", reason="pip install grafana-foundation-sdk")


def _flatten(node: Any, prefix: str = "") -> set[str]:
    """Every key path of a JSON object (lists by position)."""
    if isinstance(node, dict):
        return {p for k, v in node.items() for p in {f"{prefix}.{k}"} | _flatten(v, f"{prefix}.{k}")}
    if isinstance(node, list):
        return {p for i, v in enumerate(node) for p in _flatten(v, f"{prefix}[{i}]")}
    return set()


def test_grafana_models_read_every_dashboard_panel_and_query(boards: dict[str, dict[str, Any]]) -> None:
    """Each dashboard decodes into grafana-foundation-sdk's Dashboard; every panel's options into its
    panel plugin's Options, every query into a Prometheus Dataquery with our expr; and nothing we
    wrote in options, field config, targets or variables is a key the models do not know."""
    from grafana_foundation_sdk.cog.plugins import register_default_plugins
    from grafana_foundation_sdk.models import bargauge, prometheus, stat, timeseries
    from grafana_foundation_sdk.models.dashboard import Dashboard, Panel, RowPanel, VariableModel

    register_default_plugins()
    options_class = {"stat": stat.Options, "timeseries": timeseries.Options, "bargauge": bargauge.Options}
    for name, board in boards.items():
        model = Dashboard.from_json(board)
        assert model.uid == board["uid"] and model.title == board["title"]
        assert model.schema_version == board["schemaVersion"]
        assert model.panels is not None and len(model.panels) == len(board["panels"])
        for raw, panel in zip(board["panels"], model.panels, strict=True):
            if raw["type"] == "row":
                assert isinstance(panel, RowPanel) and panel.title == raw["title"]
                continue
            assert isinstance(panel, Panel), f"{name}: {raw['title']}"
            assert isinstance(panel.options, options_class[raw["type"]]), f"{name}: {raw['title']}"
            assert panel.targets is not None and len(panel.targets) == len(raw["targets"])
            for raw_target, target in zip(raw["targets"], panel.targets, strict=True):
                assert isinstance(target, prometheus.Dataquery), f"{name}: {raw['title']}"
                assert target.expr == raw_target["expr"]
                assert target.legend_format == raw_target["legendFormat"]
            again = panel.to_json()
            for part in ("options", "fieldConfig"):
                lost = _flatten(raw[part]) - _flatten(json.loads(json.dumps(again[part], default=_encode)))
                assert not lost, f"{name}: {raw['title']}: the models do not know {sorted(lost)}"
        variables = model.templating.list_val or []
        assert all(isinstance(v, VariableModel) for v in variables)
        assert [v.name for v in variables] == [v["name"] for v in board["templating"]["list"]]


def _encode(value: Any) -> Any:
    """JSON for the models' nested objects (their to_json) and enums."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if hasattr(value, "value"):
        return value.value
    raise TypeError(type(value))


# --- issue 16's figures, computed by a real Prometheus engine ---------------------------------

# Expected results of the Overview's saved %/ratio/net panels for the series of the compression
# case in rules/tests/llm-savings.rules.test.yaml (worked out by hand in its comments).
COMPRESSION_PANELS: dict[str, list[tuple[dict[str, str], float]]] = {
    "Saved % of input tokens": [({"method": "tiktoken:o200k_base"}, 0.4)],
    "Compression ratio (baseline / sent)": [
        ({"method": "tiktoken:o200k_base"}, 2500 / 1500),
        ({"method": "estimate:chars/4"}, 100 / 120),
    ],
    "Net savings (saved - optimizer spend)": [({}, 2 - 0.75)],
    "Optimizer spend": [({}, 0.75)],
    "Saved % by population": [
        ({"method": "tiktoken:o200k_base", "population": "compacted"}, 0.5),
        ({"method": "tiktoken:o200k_base", "population": "untouched"}, 0.0),
        ({"method": "estimate:chars/4", "population": "untouched"}, -0.2),
    ],
    "Compression ratio by population": [
        ({"method": "tiktoken:o200k_base", "population": "compacted"}, 2.0),
        ({"method": "tiktoken:o200k_base", "population": "untouched"}, 1.0),
        ({"method": "estimate:chars/4", "population": "untouched"}, 100 / 120),
    ],
    "Dollars saved by component": [({"component": "dedupe"}, 1.75), ({"component": "summarise"}, 0.25)],
    "Optimizer spend by optimizer model": [({"model": "gpt-4o-mini"}, 0.75)],
    "Optimizer tokens by tier": [({"tier": "fresh"}, 150.0)],
}


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_saved_percent_ratio_component_and_net_panels_compute_the_figures(
    boards: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    """The panels' own queries, variables substituted as Grafana does, evaluated by promtool's
    Prometheus engine over known series: saved %, ratios per population, dollars by component,
    net savings (another job's series, in the input too, never counted)."""
    source = yaml.safe_load((ROOT / "rules" / "tests" / "llm-savings.rules.test.yaml").read_text())
    (case,) = [c for c in source["tests"] if any("baseline_input" in s["series"] for s in c["input_series"])]
    values = {"month": "2026-11", "tenant": ".*", "model": ".*", "cluster": ".*", "namespace": ".*",
              "job": "llm-savings-exporter"}
    exprs = dict(dashboard_exprs(boards["llm-savings-overview.json"]))
    checks = []
    for title, expected in COMPRESSION_PANELS.items():
        labels = [", ".join(f'{k}="{v}"' for k, v in sorted(want.items())) for want, _ in expected]
        checks.append({
            "expr": substitute(exprs[title], values),
            "eval_time": "10m",
            "exp_samples": [{"labels": "{" + text + "}", "value": value}
                            for text, (_, value) in zip(labels, expected, strict=True)],
        })
    path = tmp_path / "panels.test.yaml"
    path.write_text(yaml.safe_dump({
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": case["input_series"], "promql_expr_test": checks}],
    }))
    result = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


# The Provenance dashboard's tier shares over the series of the first case of
# rules/tests/llm-savings.provenance.test.yaml: the values its recording rules give (worked out there).
TIER_SHARE_PANELS: dict[str, list[list[tuple[dict[str, str], float]]]] = {
    "Share of requests priced at a prompt tier or service tier": [
        [({"month": "2026-11", "tier": "above_200000"}, 0.21)],
        [({"month": "2026-11", "service_tier": "batch"}, 0.2), ({"month": "2026-11", "service_tier": "unknown"}, 0.04)],
    ],
    "Share of spend priced at a prompt tier or service tier": [
        [({"month": "2026-11", "tier": "above_200000"}, 0.32)],
        [({"month": "2026-11", "service_tier": "batch"}, 0.1), ({"month": "2026-11", "service_tier": "unknown"}, 0.02)],
    ],
}


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_tier_share_panels_compute_what_the_rules_record(boards: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """The panels read the counters (no rules needed) and give the recording rules' shares, by promtool's engine."""
    source = yaml.safe_load((ROOT / "rules" / "tests" / "llm-savings.provenance.test.yaml").read_text())
    case = source["tests"][0]
    values = {"month": "2026-11", "tenant": ".*", "model": ".*", "cluster": ".*", "namespace": ".*",
              "job": "llm-savings-exporter"}
    exprs: dict[str, list[str]] = {}
    for title, expr in dashboard_exprs(boards["llm-savings-provenance.json"]):
        exprs.setdefault(title, []).append(expr)
    checks = []
    for title, per_target in TIER_SHARE_PANELS.items():
        assert len(exprs[title]) == len(per_target)
        for expr, expected in zip(exprs[title], per_target, strict=True):
            checks.append({"expr": substitute(expr, values), "eval_time": "5m", "exp_samples": [
                {"labels": "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(want.items())) + "}", "value": value}
                for want, value in expected]})
    path = tmp_path / "tiers.test.yaml"
    path.write_text(yaml.safe_dump({
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": case["input_series"], "promql_expr_test": checks}],
    }))
    result = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
