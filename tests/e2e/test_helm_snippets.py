"""The values snippets for gateway charts that take extra containers, rendered for real.

Two fixture charts stand for the gateway: one of the common kind (extraContainers,
extraVolumes, extraVolumeMounts) and one shaped like LiteLLM's (extraContainers,
volumes, volumeMounts, extraEnvVars). Each is rendered by Helm's engine with its
snippet, this chart with snippets/exporter-values.yaml in the same namespace, and every
object of both is validated against the Kubernetes schemas; the pod must then hold the
exporter exactly as the chart's own templates render it, wired to the chart's ConfigMap,
and the gateway must write where the exporter's sources read.
"""

from __future__ import annotations

import fnmatch
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.test_helm_chart import (
    CHART,
    CRD_KINDS,
    FIXTURES,
    KUBE_VERSION,
    NAMESPACE,
    check_sidecar,
    config_map_data,
    helm,
    kubernetes_validate,
    one,
    render,
    sidecar,
    validate_crd,
)

REPO = Path(__file__).resolve().parents[2]
SNIPPETS = CHART / "snippets"
GATEWAYS = {
    # fixture chart: snippet, key of the gateway container's extra mounts, its pods' labels
    "extra-containers-chart": (
        "extra-containers.yaml",
        "extraVolumeMounts",
        {"app.kubernetes.io/name": "some-gateway"},
    ),
    "litellm-like-chart": ("litellm-values.yaml", "volumeMounts", {"app.kubernetes.io/name": "litellm"}),
}


def render_chart(chart: Path, values: dict[str, Any]) -> list[dict[str, Any]]:
    with helm.Chart.load(chart) as loaded:
        manifests = loaded.render(values, name="gw", namespace=NAMESPACE, is_install=True)
    return [
        doc
        for path, text in sorted(manifests.items())
        if path.endswith(".yaml")
        for doc in yaml.safe_load_all(text)
        if doc
    ]


def test_snippets_are_what_the_chart_renders() -> None:
    check = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_chart_snippets.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("fixture", sorted(GATEWAYS))
def test_gateway_chart_with_the_snippet_runs_the_sidecar(fixture: str, tmp_path: Path) -> None:
    snippet_file, mounts_key, pod_labels = GATEWAYS[fixture]
    snippet = yaml.safe_load((SNIPPETS / snippet_file).read_text())
    exporter_values = yaml.safe_load((SNIPPETS / "exporter-values.yaml").read_text())
    exporter_values["service"]["selector"] = pod_labels  # the file names LiteLLM's labels
    ours, _ = render(exporter_values)
    gateway_objects = render_chart(FIXTURES / fixture, snippet)
    for obj in [*ours, *gateway_objects]:
        if obj["kind"] in CRD_KINDS:
            validate_crd(obj)
        else:
            kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)

    deployment = one(gateway_objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    gateway, exporter = pod["containers"][0], sidecar(pod)
    assert [c["name"] for c in pod["containers"]] == [gateway["name"], "llm-savings-exporter"]
    # The container and its volumes are the chart's own, and resolve against the chart's
    # ConfigMap (check_sidecar loads config.yaml with the exporter's real loader).
    check_sidecar(pod, [*ours, *gateway_objects], otlp=False)
    names = [v["name"] for v in pod["volumes"]]
    assert len(names) == len(set(names)), names
    example = one(render({**exporter_values, "exampleGateway": {"enabled": True}})[0], "Deployment")
    assert exporter == sidecar(example["spec"]["template"]["spec"])

    # The gateway writes where the exporter reads.
    (log_mount,) = [m for m in gateway["volumeMounts"] if m["name"] == "gateway-logs"]
    assert not log_mount.get("readOnly")
    assert snippet[mounts_key] == [log_mount]
    config = yaml.safe_load(config_map_data(ours, "llm-savings-exporter-config")["config.yaml"])
    globs = [g for source in config["sources"] for g in source["paths"]]
    probe = f"{log_mount['mountPath']}/gateway.jsonl"
    env = {e["name"]: e.get("value") for e in gateway.get("env", [])}
    if "LLM_SAVINGS_LITELLM_LOG" in env:
        probe = env["LLM_SAVINGS_LITELLM_LOG"]
        assert probe.startswith(log_mount["mountPath"] + "/")
    assert any(fnmatch.fnmatch(probe, g) for g in globs), (probe, globs)
    assert any(fnmatch.fnmatch(probe + ".1", g) for g in globs), "rotated names are read too"

    # The chart's Service and PodMonitor find the gateway's pods.
    assert deployment["spec"]["template"]["metadata"]["labels"] == pod_labels
    assert one(ours, "Service")["spec"]["selector"].items() <= pod_labels.items()
    assert one(ours, "PodMonitor")["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
