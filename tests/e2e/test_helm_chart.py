"""The Helm chart, rendered by Helm's own engine (helm-python-sdk binds Helm v4's Go library).

Every documented shape, the chart's ci/*-values.yaml (and the defaults), is rendered, linted strict, and each
rendered object is validated against the Kubernetes schemas (kubernetes-validate,
strict: unknown fields refused) or the Prometheus Operator CRD schemas vendored in
tests/fixtures/helm/crds/. Then the pod specs are checked field by field, and the
rendered config.yaml is loaded by the exporter's real config loader.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

if os.environ.get("CI"):
    import helm_python as helm  # CI must install helm-python-sdk: fail loudly there
    import kubernetes_validate
else:
    helm = pytest.importorskip("helm_python", reason="pip install helm-python-sdk")
    kubernetes_validate = pytest.importorskip(
        "kubernetes_validate", reason="pip install kubernetes-validate"
    )

from exporter.engine.records import Record, parse_line
from exporter.sidecar.config import load_config

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm" / "llm-savings-exporter"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "helm"
CRDS = FIXTURES / "crds"
KUBE_VERSION = "1.30.0"
RELEASE, NAMESPACE = "rel", "obs"
CI_VALUES = CHART / "ci"
SCENARIOS = ("default", *sorted(p.name.removesuffix("-values.yaml") for p in CI_VALUES.glob("*-values.yaml")))
CRD_KINDS = {"ServiceMonitor", "PodMonitor", "PrometheusRule"}
LOG_MOUNT = "/var/log/gateway"
CONFIG_PATH = "/etc/llm-savings-exporter/config.yaml"
STATE_DIR = "/var/lib/llm-savings-exporter"


def scenario_values(name: str) -> dict[str, Any]:
    if name == "default":
        return {}
    loaded: dict[str, Any] = yaml.safe_load((CI_VALUES / f"{name}-values.yaml").read_text())
    return loaded


def render(values: dict[str, Any], *, chart: Path = CHART) -> tuple[list[dict[str, Any]], str]:
    """Render like `helm template`: the objects of every manifest, and NOTES.txt."""
    with helm.Chart.load(chart) as loaded:
        manifests = loaded.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    objects: list[dict[str, Any]] = []
    notes = ""
    for path, text in sorted(manifests.items()):
        if path.endswith("NOTES.txt"):
            notes = text
            continue
        objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return objects, notes


@pytest.fixture(scope="module", params=SCENARIOS)
def scenario(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]], str]:
    objects, notes = render(scenario_values(request.param))
    return request.param, objects, notes


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = by_kind(objects, kind)
    assert len(found) == 1, f"expected one {kind}, got {[o['metadata']['name'] for o in found]}"
    return found[0]


def sidecar(pod_spec: dict[str, Any]) -> dict[str, Any]:
    found: list[dict[str, Any]] = [
        c for c in pod_spec["containers"] if c["name"] == "llm-savings-exporter"
    ]
    assert len(found) == 1, [c["name"] for c in pod_spec["containers"]]
    return found[0]


def config_map_data(objects: list[dict[str, Any]], name: str) -> dict[str, str]:
    for cm in by_kind(objects, "ConfigMap"):
        if cm["metadata"]["name"] == name:
            data: dict[str, str] = cm["data"]
            return data
    raise AssertionError(f"no ConfigMap {name}")


# --- lint and schema validation of every rendered object ---------------------------------


@pytest.mark.parametrize("name", SCENARIOS)
def test_lint_strict_is_clean(name: str) -> None:
    report = helm.lint(CHART, scenario_values(name), strict=True, namespace=NAMESPACE)
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert not problems and not report["errors"], report


def test_every_object_is_valid_for_kubernetes_or_its_crd(
    scenario: tuple[str, list[dict[str, Any]], str],
) -> None:
    _, objects, _ = scenario
    assert objects
    for obj in objects:
        if obj["kind"] in CRD_KINDS:
            validate_crd(obj)
        else:
            kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)


def crd_errors(obj: dict[str, Any]) -> list[str]:
    """Every violation of the kind's CRD schema, flattened out of anyOf contexts."""
    schema = json.loads((CRDS / f"{obj['kind'].lower()}-monitoring-v1.json").read_text())
    found: list[str] = []

    def flatten(errors: Any) -> None:
        for error in errors:
            found.append(f"{error.json_path}: {error.message[:200]}")
            flatten(error.context or [])

    flatten(jsonschema.Draft202012Validator(schema).iter_errors(obj))
    return found


def validate_crd(obj: dict[str, Any]) -> None:
    errors = crd_errors(obj)
    assert not errors, f"{obj['kind']} {obj['metadata']['name']}: {errors}"


def test_crd_schemas_refuse_a_misspelt_field() -> None:
    """The vendored schemas are strict, so the validation above can catch a typo."""
    objects, _ = render(scenario_values("servicemonitor"))
    monitor = one(objects, "ServiceMonitor")
    monitor["spec"]["endpoints"][0]["scrapeIntervall"] = "30s"
    assert any("'scrapeIntervall' was unexpected" in e for e in crd_errors(monitor))
    rule = one(objects, "PrometheusRule")
    rule["spec"]["groups"][0]["rules"][0]["for"] = "5 minutes"
    assert any(
        e.startswith("$.spec.groups[0].rules[0].for") and "does not match" in e
        for e in crd_errors(rule)
    ), crd_errors(rule)


def test_names_fit_63_characters() -> None:
    long_release = "r" * 53  # Helm's longest release name
    with helm.Chart.load(CHART) as loaded:
        manifests = loaded.render(
            {"exampleGateway": {"enabled": True}, "dashboards": {"enabled": True}},
            name=long_release,
        )
    objects = [
        d for p, t in manifests.items() if p.endswith(".yaml") for d in yaml.safe_load_all(t)
    ]
    names = [o["metadata"]["name"] for o in objects if o]
    assert names and all(
        len(n) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", n) for n in names
    ), names
    kinds_names = [(o["kind"], o["metadata"]["name"]) for o in objects if o]
    assert len(set(kinds_names)) == len(kinds_names), kinds_names


# --- the sidecar container ---------------------------------------------------------------


def check_sidecar(pod_spec: dict[str, Any], objects: list[dict[str, Any]], *, otlp: bool) -> None:
    """What every pod that runs the exporter must have, whoever renders it."""
    c = sidecar(pod_spec)
    assert c["args"] == ["run", "--config", CONFIG_PATH]
    sc = c["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["runAsUser"] == 10001
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert sc["seccompProfile"]["type"] == "RuntimeDefault"

    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports["savings-metrics"] == 9464
    assert ("savings-otlp" in ports) == otlp
    if otlp:
        assert ports["savings-otlp"] == 4318
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "savings-metrics"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "savings-metrics"}
    assert c["resources"]["limits"]["memory"]

    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    claims = {t["metadata"]["name"] for t in pod_spec.get("_claims", [])}
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    for m in c["volumeMounts"]:
        assert m["name"] in volumes or m["name"] in claims, f"mount {m} has no volume"
    # Writable only where the exporter writes: its state and /tmp.
    assert mounts[STATE_DIR].get("readOnly") is not True
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]
    # The config file, from the chart's ConfigMap, loaded by the real loader.
    cfg_mount = mounts[CONFIG_PATH]
    assert cfg_mount["subPath"] == "config.yaml" and cfg_mount["readOnly"] is True
    cm_name = volumes[cfg_mount["name"]]["configMap"]["name"]
    config_text = config_map_data(objects, cm_name)["config.yaml"]
    return_config = parse_rendered_config(config_text)
    assert return_config["listen"] == "0.0.0.0:9464"
    assert return_config["state_dir"] == STATE_DIR
    assert return_config["otlp"]["enabled"] is otlp


def parse_rendered_config(text: str) -> dict[str, Any]:
    parsed: dict[str, Any] = yaml.safe_load(text)
    return parsed


@pytest.fixture
def exporter_config(tmp_path: Path) -> Iterator[Any]:
    def load(text: str) -> Any:
        path = tmp_path / "config.yaml"
        path.write_text(text)
        return load_config(path, environ={})

    yield load


def test_default_renders_no_pod_only_config_and_service() -> None:
    objects, notes = render({})
    assert sorted(o["kind"] for o in objects) == ["ConfigMap", "Service"]
    assert "port-forward" in notes and "/metrics" in notes
    assert 'include "llm-savings-exporter.sidecarContainer"' in notes


def test_example_gateway_runs_the_sidecar_next_to_a_demo_writer(exporter_config: Any) -> None:
    objects, notes = render(scenario_values("example-gateway"))
    deployment = one(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    assert "demo" in json.dumps(deployment["metadata"]["annotations"]).lower()
    pod = deployment["spec"]["template"]["spec"]
    check_sidecar(pod, objects, otlp=True)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["automountServiceAccountToken"] is False

    names = [c["name"] for c in pod["containers"]]
    assert names == ["demo-gateway", "llm-savings-exporter"]
    gateway = pod["containers"][0]
    exporter = sidecar(pod)
    # The gateway writes the shared volume; the exporter only reads it.
    (gw_mount,) = gateway["volumeMounts"]
    (log_mount,) = [m for m in exporter["volumeMounts"] if m["mountPath"] == LOG_MOUNT]
    assert gw_mount["name"] == log_mount["name"] == "gateway-logs"
    assert gw_mount.get("readOnly") is not True
    assert log_mount["readOnly"] is True
    assert gateway["securityContext"]["readOnlyRootFilesystem"] is True

    # OTLP on, bound to the pod's loopback, token from the Secret by env.
    env = {e["name"]: e for e in exporter["env"]}
    assert env["LLM_SAVINGS_OTLP_BEARER_TOKEN"]["valueFrom"]["secretKeyRef"] == {
        "name": "otlp-token",
        "key": "token",
    }
    assert env["TZ"]["value"] == "UTC"
    config = parse_rendered_config(
        config_map_data(objects, f"{RELEASE}-llm-savings-exporter-config")["config.yaml"]
    )
    assert config["otlp"]["listen"] == "127.0.0.1:4318"
    # Inline prices: their own ConfigMap, mounted as a directory (hot reload works).
    prices_dir = "/etc/llm-savings-exporter/prices"
    (prices_mount,) = [m for m in exporter["volumeMounts"] if m["mountPath"] == prices_dir]
    assert "subPath" not in prices_mount
    prices_cm = {v["name"]: v for v in pod["volumes"]}[prices_mount["name"]]["configMap"]["name"]
    table = yaml.safe_load(config_map_data(objects, prices_cm)["prices.yaml"])
    assert table["schema"] == "llm-savings-prices/v1"
    assert config["prices"] == f"{prices_dir}/prices.yaml"

    # The real loader accepts what the chart rendered, with the file's own types.
    loaded = exporter_config(
        config_map_data(objects, f"{RELEASE}-llm-savings-exporter-config")["config.yaml"]
    )
    assert [s.name for s in loaded.sources] == ["gateway", "litellm"]
    assert loaded.sources[1].poll_interval_seconds == 0.5 and loaded.sources[1].watch is False
    assert loaded.otlp.max_body_bytes == 16 << 20  # an int, not 1.6777216e+07
    assert all(p.startswith(LOG_MOUNT + "/") for s in loaded.sources for p in s.paths)

    # The pod rolls when the config changes (config.yaml is a subPath mount).
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert re.fullmatch(r"[0-9a-f]{64}", annotations["checksum/llm-savings-config"])
    assert annotations["example.com/team"] == "platform"
    assert "port-forward service/rel-llm-savings-exporter 9464:9464" in notes
    service = one(objects, "Service")
    assert {p["name"] for p in service["spec"]["ports"]} == {"metrics", "otlp-http"}


def test_standalone_is_a_statefulset_with_a_state_pvc(exporter_config: Any) -> None:
    objects, notes = render(scenario_values("standalone"))
    assert not by_kind(objects, "Deployment")
    sts = one(objects, "StatefulSet")
    spec = sts["spec"]
    assert spec["replicas"] == 1
    (claim,) = spec["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "llm-savings-state"
    assert claim["spec"]["resources"]["requests"]["storage"] == "2Gi"
    assert claim["spec"]["storageClassName"] == "fast-ssd"
    pod = dict(spec["template"]["spec"])
    pod["_claims"] = spec["volumeClaimTemplates"]
    check_sidecar(pod, objects, otlp=True)
    mounts = {m["mountPath"]: m["name"] for m in sidecar(pod)["volumeMounts"]}
    assert mounts[STATE_DIR] == "llm-savings-state"
    assert LOG_MOUNT not in mounts  # no gateway log volume in standalone mode
    assert "llm-savings-state" not in {
        v["name"] for v in pod["volumes"]
    }  # the PVC, not an emptyDir

    services = {s["metadata"]["name"]: s for s in by_kind(objects, "Service")}
    assert spec["serviceName"] in services
    assert services[spec["serviceName"]]["spec"]["clusterIP"] == "None"
    main = services[f"{RELEASE}-llm-savings-exporter"]
    assert {(p["name"], p["port"], p["targetPort"]) for p in main["spec"]["ports"]} == {
        ("metrics", 9464, "savings-metrics"),
        ("otlp-http", 4318, "savings-otlp"),
    }
    pod_labels = spec["template"]["metadata"]["labels"]
    for svc in services.values():
        assert svc["spec"]["selector"].items() <= pod_labels.items()
    assert spec["selector"]["matchLabels"].items() <= pod_labels.items()

    loaded = exporter_config(
        config_map_data(objects, f"{RELEASE}-llm-savings-exporter-config")["config.yaml"]
    )
    assert loaded.otlp.enabled and loaded.otlp.listen == "0.0.0.0:4318"
    assert loaded.sources == ()
    assert "/v1/traces" in notes


def test_monitoring_objects_are_gated_labelled_and_wired() -> None:
    objects, notes = render(scenario_values("servicemonitor"))
    service = one(objects, "Service")
    sm = one(objects, "ServiceMonitor")
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    assert sm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert sm["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    (endpoint,) = sm["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["interval"] == "1m" and endpoint["scrapeTimeout"] == "10s"
    assert endpoint["metricRelabelings"][0]["action"] == "drop"

    assert not by_kind(objects, "PodMonitor")  # one monitor kind at a time
    pm = one(render(scenario_values("podmonitor"))[0], "PodMonitor")
    pod = one(objects, "Deployment")["spec"]["template"]
    assert pm["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (pod_endpoint,) = pm["spec"]["podMetricsEndpoints"]
    assert pod_endpoint["port"] in {p["name"] for p in sidecar(pod["spec"])["ports"]}
    assert pod_endpoint["relabelings"][0]["targetLabel"] == "node"

    rule = one(objects, "PrometheusRule")
    expected_groups = []
    # With the default mixin: values the chart renders the repository's rules/ (test_helm_mixin.py
    # checks other values against scripts/gen_mixin.py's output for the same parameters).
    for path in sorted((REPO / "rules").glob("*.yaml")):
        expected_groups.extend(yaml.safe_load(path.read_text())["groups"])
    assert rule["spec"]["groups"] == expected_groups
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"

    dashboards = [
        cm
        for cm in by_kind(objects, "ConfigMap")
        if "grafana_dashboard" in cm["metadata"]["labels"]
    ]
    sources = sorted((CHART / "files" / "dashboards").glob("*.json"))
    assert sources, "no dashboards in the chart: run scripts/gen_mixin.py"
    assert len(dashboards) == len(sources)
    for cm in dashboards:
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert cm["metadata"]["namespace"] == "grafana"
        assert cm["metadata"]["annotations"] == {"grafana_folder": "LLM"}
        ((file_name, text),) = cm["data"].items()
        assert json.loads(text) == json.loads((REPO / "dashboards" / file_name).read_text())
    assert "ServiceMonitor is rendered" in notes


def test_monitor_api_version_and_dashboard_label_are_configurable() -> None:
    objects, _ = render(
        {
            "monitor": {"kind": "ServiceMonitor", "apiVersion": "monitoring.coreos.com/v1beta1"},
            "prometheusRule": {"enabled": True, "apiVersion": "monitoring.example/v3"},
            "dashboards": {"enabled": True, "label": "grafana_dashboard_llm", "labelValue": "yes"},
        }
    )
    assert one(objects, "ServiceMonitor")["apiVersion"] == "monitoring.coreos.com/v1beta1"
    pod_monitor, _ = render({"monitor": {"kind": "PodMonitor", "apiVersion": "monitoring.example/v2"}})
    assert one(pod_monitor, "PodMonitor")["apiVersion"] == "monitoring.example/v2"
    assert one(objects, "PrometheusRule")["apiVersion"] == "monitoring.example/v3"
    for cm in by_kind(objects, "ConfigMap"):
        if cm["metadata"]["name"].endswith("-config"):
            continue
        assert cm["metadata"]["labels"]["grafana_dashboard_llm"] == "yes"
        assert "grafana_dashboard" not in cm["metadata"]["labels"]


def test_optional_objects_are_off_by_default() -> None:
    objects, _ = render({"exampleGateway": {"enabled": True}})
    kinds = {o["kind"] for o in objects}
    assert kinds.isdisjoint(CRD_KINDS)
    assert not [
        cm
        for cm in by_kind(objects, "ConfigMap")
        if "grafana_dashboard" in cm["metadata"]["labels"]
    ]


def test_existing_price_configmap_is_mounted_not_rendered(exporter_config: Any) -> None:
    objects, _ = render(scenario_values("existing-prices"))
    assert [cm["metadata"]["name"] for cm in by_kind(objects, "ConfigMap")] == [
        f"{RELEASE}-llm-savings-exporter-config"
    ]
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    check_sidecar(pod, objects, otlp=False)
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["llm-savings-prices"]["configMap"]["name"] == "team-llm-prices"
    assert volumes["llm-savings-state"]["persistentVolumeClaim"]["claimName"] == "savings-state"
    loaded = exporter_config(
        config_map_data(objects, f"{RELEASE}-llm-savings-exporter-config")["config.yaml"]
    )
    assert loaded.prices == "/etc/llm-savings-exporter/prices/prices-2026.yaml"


def test_no_price_table_means_the_bundled_one(exporter_config: Any) -> None:
    objects, _ = render({"exampleGateway": {"enabled": True}})
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    assert "llm-savings-prices" not in {v["name"] for v in pod["volumes"]}
    loaded = exporter_config(
        config_map_data(objects, f"{RELEASE}-llm-savings-exporter-config")["config.yaml"]
    )
    assert loaded.prices is None


def test_demo_and_standalone_together_are_refused_with_a_reason() -> None:
    with pytest.raises(helm.HelmError, match=r"exampleGateway\.enabled needs mode: sidecar"):
        render({"mode": "standalone", "exampleGateway": {"enabled": True}})


# --- values.schema.json ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"mode": "sidecars"}, "at '/mode': value must be one of 'sidecar', 'standalone'"),
        ({"ports": {"metrics": "9464"}}, "at '/ports/metrics': got string, want integer"),
        (
            {"config": {"timezon": "UTC"}},
            "at '/config': additional properties 'timezon' not allowed",
        ),
        ({"monitor": {"interval": "30 seconds"}}, "at '/monitor/interval'"),
        (
            {"config": {"sources": [{"name": "g", "type": "syslog", "paths": ["/x"]}]}},
            "at '/config/sources/0/type'",
        ),
        ({"ports": {"names": {"metrics": "llm-savings-metrics"}}}, "at '/ports/names/metrics'"),
        ({"securityContext": {"runAsUser": -1}}, "at '/securityContext/runAsUser'"),
        ({"image": {"digest": "latest"}}, "at '/image/digest'"),
    ],
)
def test_schema_refuses_wrong_values_with_a_clear_message(
    values: dict[str, Any], message: str
) -> None:
    with helm.Chart.load(CHART) as loaded, pytest.raises(helm.HelmValuesError) as caught:
        loaded.render(values, name=RELEASE)
    assert message in str(caught.value)


def test_schema_sets_additional_properties_false_on_every_object() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    open_objects: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            # A Volume is a name plus one of ~30 volume sources, left to the API server.
            if (
                node.get("type") == "object"
                and "properties" in node
                and node.get("additionalProperties") is not False
                and path != "/properties/extraVolumes/items"
            ):
                open_objects.append(path)
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}/{i}")

    walk(schema, "")
    assert not open_objects


def test_every_value_has_a_comment() -> None:
    """Each key of values.yaml has a comment on the line above it, except the fields of
    plain Kubernetes objects (resources, securityContext), documented by their block."""
    exempt_blocks = {"resources", "securityContext", "podSecurityContext"}
    lines = (CHART / "values.yaml").read_text().splitlines()
    stack: list[tuple[int, str]] = []
    undocumented = []
    previous = ""
    for line in lines:
        match = re.match(r"^(\s*(?:- )?)([A-Za-z_][\w-]*):", line)
        if match:
            indent, key = len(match.group(1)), match.group(2)
            while stack and stack[-1][0] >= indent:
                stack.pop()
            commented = previous.lstrip("- ").startswith("#")
            if not commented and not any(k in exempt_blocks for _, k in stack):
                undocumented.append(".".join([k for _, k in stack] + [key]))
            stack.append((indent, key))
        if line.strip():
            previous = line.strip()
    assert not undocumented, undocumented


# --- a user's chart that includes the sidecar, as the README shows -----------------------


def test_parent_chart_includes_the_sidecar_as_the_readme_shows(tmp_path: Path) -> None:
    parent = tmp_path / "my-gateway"
    shutil.copytree(FIXTURES / "parent-chart", parent)
    chart_yaml = parent / "Chart.yaml"
    chart_yaml.write_text(re.sub(r"file://\S+", f"file://{CHART}", chart_yaml.read_text()))
    helm.dependency_update(parent)  # `helm dependency update`: packages the chart into charts/
    objects, _ = render({}, chart=parent)
    (gateway,) = [
        d for d in by_kind(objects, "Deployment") if d["metadata"]["name"] == "rel-gateway"
    ]
    pod = gateway["spec"]["template"]["spec"]
    check_sidecar(pod, objects, otlp=False)
    volume_names = [v["name"] for v in pod["volumes"]]
    assert len(volume_names) == len(set(volume_names))
    assert pod["containers"][0]["volumeMounts"][0]["name"] == "gateway-logs"
    service = one(objects, "Service")
    assert service["spec"]["selector"] == {"app": "my-gateway"}
    podmonitor = one(objects, "PodMonitor")
    assert podmonitor["spec"]["selector"]["matchLabels"] == {"app": "my-gateway"}
    for obj in objects:
        if obj["kind"] in CRD_KINDS:
            validate_crd(obj)
        else:
            kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)


def test_readme_example_is_the_tested_one() -> None:
    readme = (CHART / "README.md").read_text()
    fixture = (FIXTURES / "parent-chart" / "templates" / "deployment.yaml").read_text()
    context = '(index .Subcharts "llm-savings-exporter") | nindent 8 }}'
    for needle in (
        '{{- include "llm-savings-exporter.sidecarContainer" ' + context,
        '{{- include "llm-savings-exporter.sidecarVolumes" ' + context,
    ):
        assert needle in readme and needle in fixture


# --- the demo gateway's writer produces lines the exporter accepts -----------------------


def test_demo_gateway_script_writes_canonical_records(tmp_path: Path) -> None:
    objects, _ = render({"exampleGateway": {"enabled": True}})
    gateway = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert gateway["command"] == ["/bin/sh", "-c"]
    script = gateway["args"][0]
    log = tmp_path / "gateway.jsonl"
    env = {e["name"]: e["value"] for e in gateway["env"]}
    env.update(LOG_FILE=str(log), INTERVAL="0", HOSTNAME="demo-pod", PATH=os.environ["PATH"])
    proc = subprocess.Popen(["/bin/sh", "-c", script], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if log.exists() and log.read_bytes().count(b"\n") >= 5:
                break
            assert proc.poll() is None, f"demo writer exited with {proc.returncode}"
            time.sleep(0.02)  # polling a file another process writes, with a deadline
        else:
            raise AssertionError("demo writer wrote fewer than 5 lines in 20 s")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    lines = [line for line in log.read_bytes().splitlines(keepends=True) if line.endswith(b"\n")]
    ids = set()
    for line in lines:
        record = parse_line(line)
        assert isinstance(record, Record), (line, record)
        ids.add(json.loads(line)["request_id"])
    assert len(ids) == len(lines)
