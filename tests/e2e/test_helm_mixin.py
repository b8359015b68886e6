"""The chart's PrometheusRule and dashboard ConfigMaps take the mixin's parameters from `mixin:`.

Rendered by Helm's own engine (helm-python-sdk): with any values the chart gives exactly
what scripts/gen_mixin.py writes for the same parameters, the rules pass promtool, the
values' defaults are the mixin's, and the schema refuses what the files cannot carry.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.mixin.config import PARAMS
from exporter.mixin.render import render as render_mixin

if os.environ.get("CI"):
    import helm_python as helm
else:
    helm = pytest.importorskip("helm_python", reason="pip install helm-python-sdk")

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm" / "llm-savings-exporter"
ON = {"prometheusRule": {"enabled": True}, "dashboards": {"enabled": True}}
CUSTOM: dict[str, Any] = {
    "jobSelector": 'job="gateway-savings", namespace=~"llm|ai"',
    "clusterLabel": "k8s_cluster",
    "namespaceLabel": "kube_namespace",
    "runbookBaseUrl": "https://wiki.example.org/runbooks/llm-savings",
    "overviewDashboardUid": "savings-1",
    "dashboardTag": "finops",
    "recordsRejectedPercent": 2.5,
    "ingestLagMiB": 256,
    "exporterDownFor": "2m",
    "priceTableStaleDays": 30,
}


def render(values: dict[str, Any]) -> list[dict[str, Any]]:
    with helm.Chart.load(CHART) as loaded:
        manifests = loaded.render(values, name="rel", namespace="obs", is_install=True)
    return [
        doc
        for path, text in sorted(manifests.items())
        if not path.endswith("NOTES.txt")
        for doc in yaml.safe_load_all(text)
        if doc
    ]


def rendered(values: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """(rule groups of the PrometheusRule, dashboard file name -> dashboard) the chart renders."""
    objects = render(values)
    (rule,) = [o for o in objects if o["kind"] == "PrometheusRule"]
    boards = {
        name: json.loads(text)
        for o in objects
        if o["kind"] == "ConfigMap" and "grafana_dashboard" in o["metadata"]["labels"]
        for name, text in o["data"].items()
    }
    return rule["spec"]["groups"], boards


def generated(params: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    files = render_mixin(params)
    groups = [g for name in sorted(files) if name.startswith("rules/") for g in yaml.safe_load(files[name])["groups"]]
    boards = {name.split("/", 1)[1]: json.loads(t) for name, t in files.items() if name.startswith("dashboards/")}
    return groups, boards


def test_default_values_render_the_repository_s_rules_and_dashboards() -> None:
    assert rendered(ON) == generated({})


def test_custom_values_render_what_the_generator_writes_for_them() -> None:
    groups, boards = rendered({**ON, "mixin": CUSTOM})
    assert (groups, boards) == generated(CUSTOM)
    text = json.dumps(groups) + json.dumps(boards)
    assert "llm-savings-exporter.*" not in text and "__mixin_" not in text
    alerts = {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}
    assert alerts["LlmSavingsExporterDown"]["expr"] == 'up{job="gateway-savings", namespace=~"llm|ai"} == 0'
    assert alerts["LlmSavingsExporterDown"]["for"] == "2m"
    assert "> 2.5 / 100" in alerts["LlmSavingsRecordsRejected"]["expr"]
    assert alerts["LlmSavingsIngestLag"]["annotations"]["runbook_url"] == (
        "https://wiki.example.org/runbooks/llm-savings#llmsavingsingestlag"
    )
    overview = boards["llm-savings-overview.json"]
    assert overview["uid"] == "savings-1" and overview["tags"] == ["finops"]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_rules_rendered_with_custom_values_pass_promtool(tmp_path: Path) -> None:
    groups, _ = rendered({**ON, "mixin": CUSTOM})
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}))
    result = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and "WARNING" not in result.stdout + result.stderr, result.stdout


def test_values_defaults_are_the_mixin_s() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())["mixin"]
    assert values == {p.name: p.default for p in PARAMS}


@pytest.mark.parametrize(
    ("mixin", "key"),
    [
        ({"jobSelector": 'job="a"}) or vector(1'}, "jobSelector"),
        ({"runbookBaseUrl": 'https://x/"y'}, "runbookBaseUrl"),
        ({"exporterDownFor": "five minutes"}, "exporterDownFor"),
        ({"ingestLagMiB": "64"}, "ingestLagMiB"),
        ({"noSuchParameter": 1}, "noSuchParameter"),
    ],
)
def test_schema_refuses_what_the_files_cannot_carry(mixin: dict[str, Any], key: str) -> None:
    with pytest.raises(Exception) as refused:
        render({**ON, "mixin": mixin})
    assert "mixin" in str(refused.value) and key in str(refused.value)


def test_a_parameter_removed_from_the_values_fails_the_render_with_its_name() -> None:
    """`null` deletes a value in Helm: the token it leaves is named, never shipped."""
    with pytest.raises(Exception) as refused:
        render({**ON, "mixin": {"ingestLagFor": None}})
    assert "parameter ingestLagFor has no value under mixin:" in str(refused.value)
