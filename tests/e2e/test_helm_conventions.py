"""The chart's prometheus-community conventions and its guards, rendered by Helm's engine.

One monitor kind at a time; extraArgs, envFrom, probe overrides with a startup probe,
topologySpreadConstraints, updateStrategy, PodDisruptionBudget, NetworkPolicy; and
standalone mode past one replica (trace-id routing acknowledged, the headless Service,
the OTLP/gRPC bridge). Every scenario of ci/ is linted and validated object by object
in test_helm_chart.py; here each feature is checked for what it must do, and each
refusal for the message it gives.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from exporter.cli.main import build_parser
from tests.e2e.test_helm_chart import (
    CHART,
    NAMESPACE,
    RELEASE,
    SCENARIOS,
    by_kind,
    config_map_data,
    helm,
    one,
    render,
    scenario_values,
    sidecar,
)

HEADLESS = f"{RELEASE}-llm-savings-exporter-headless"


def render_error(values: dict[str, Any]) -> str:
    with helm.Chart.load(CHART) as loaded, pytest.raises((helm.HelmValuesError, helm.HelmError)) as caught:
        loaded.render(values, name=RELEASE, namespace=NAMESPACE)
    return str(caught.value)


def pod_template(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (workload,) = [o for o in objects if o["kind"] in ("Deployment", "StatefulSet")]
    template: dict[str, Any] = workload["spec"]["template"]
    return template


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A LabelSelector (matchLabels, matchExpressions In/NotIn/Exists/DoesNotExist) on labels."""
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expr in selector.get("matchExpressions", []):
        key, op, values = expr["key"], expr["operator"], expr.get("values", [])
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]
        if not ok:
            return False
    return True


# --- one monitor kind at a time ------------------------------------------------------


@pytest.mark.parametrize("name", SCENARIOS)
def test_never_two_monitors_on_the_same_pods(name: str) -> None:
    objects, _ = render(scenario_values(name))
    assert len(by_kind(objects, "ServiceMonitor")) + len(by_kind(objects, "PodMonitor")) <= 1


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"serviceMonitor": {"enabled": True}}, "additional properties 'serviceMonitor' not allowed"),
        ({"podMonitor": {"enabled": True}}, "additional properties 'podMonitor' not allowed"),
        ({"monitor": {"kind": "ServiceMonitor,PodMonitor"}}, "at '/monitor/kind': value must be one of"),
        (
            {"monitor": {"kind": "ServiceMonitor", "selector": {"app": "x"}}},
            "monitor.selector applies to monitor.kind PodMonitor",
        ),
        ({"monitor": {"kind": "ServiceMonitor"}, "service": {"enabled": False}}, "needs service.enabled"),
    ],
)
def test_monitor_kind_is_one_value(values: dict[str, Any], message: str) -> None:
    assert message in render_error(values)


def test_service_monitor_scrapes_each_pod_through_one_service() -> None:
    """The headless Service carries the chart's labels and a metrics port too: the
    ServiceMonitor must leave it out, or each standalone pod is scraped twice."""
    objects, _ = render(scenario_values("standalone"))
    monitor = one(objects, "ServiceMonitor")
    services = by_kind(objects, "Service")
    assert {s["metadata"]["name"] for s in services} == {f"{RELEASE}-llm-savings-exporter", HEADLESS}
    scraped = [s["metadata"]["name"] for s in services if selects(monitor["spec"]["selector"], s["metadata"]["labels"])]
    assert scraped == [f"{RELEASE}-llm-savings-exporter"]
    assert all(selects(s["spec"]["selector"], pod_template(objects)["metadata"]["labels"]) for s in services)


# --- the exporter container: extraArgs, envFrom, probes ------------------------------


def test_extra_args_follow_the_config_and_parse() -> None:
    objects, _ = render({"exampleGateway": {"enabled": True}, "extraArgs": ["--check-config"]})
    args = sidecar(pod_template(objects)["spec"])["args"]
    assert args == ["run", "--config", "/etc/llm-savings-exporter/config.yaml", "--check-config"]
    parsed = build_parser().parse_args(args)  # the container's entrypoint is the CLI
    assert parsed.check_config is True
    assert "at '/extraArgs/0'" in render_error({"extraArgs": [3]})


def test_env_from_and_probe_overrides() -> None:
    values = scenario_values("conventions")
    objects, _ = render(values)
    exporter = sidecar(pod_template(objects)["spec"])
    assert exporter["envFrom"] == values["envFrom"]
    # Startup: the TCP handler replaces GET /healthz; the timings are the values'.
    assert exporter["startupProbe"] == {
        "tcpSocket": {"port": "savings-metrics"},
        "periodSeconds": 1,
        "failureThreshold": 120,
        "timeoutSeconds": 3,
    }
    # Liveness: httpGet merged over the default path and port.
    assert exporter["livenessProbe"]["httpGet"] == {
        "path": "/healthz",
        "port": "savings-metrics",
        "httpHeaders": [{"name": "X-Probe", "value": "kubelet"}],
    }
    assert exporter["livenessProbe"]["terminationGracePeriodSeconds"] == 15
    assert exporter["readinessProbe"]["successThreshold"] == 2
    assert exporter["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "savings-metrics"}


def test_startup_probe_by_default_and_probes_can_be_turned_off() -> None:
    objects, _ = render({"exampleGateway": {"enabled": True}})
    exporter = sidecar(pod_template(objects)["spec"])
    startup = exporter["startupProbe"]
    assert startup["httpGet"] == {"path": "/healthz", "port": "savings-metrics"}
    assert startup["failureThreshold"] * startup["periodSeconds"] >= 60
    objects, _ = render(
        {
            "exampleGateway": {"enabled": True},
            "probes": {"startup": {"enabled": False}, "readiness": {"enabled": False}},
        }
    )
    exporter = sidecar(pod_template(objects)["spec"])
    assert "startupProbe" not in exporter and "readinessProbe" not in exporter and "livenessProbe" in exporter


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"probes": {"liveness": {"exec": {"command": ["true"]}, "tcpSocket": {"port": 9464}}}},
            "probes.liveness: set one handler (httpGet, exec, tcpSocket or grpc), not exec and tcpSocket",
        ),
        (
            {"probes": {"startup": {"httpGet": {"path": "/x"}, "grpc": {"port": 9464}}}},
            "probes.startup: set one handler (httpGet, exec, tcpSocket or grpc), not httpGet and grpc",
        ),
        ({"probes": {"readiness": {"httpGet": {"path": "readyz"}}}}, "at '/probes/readiness/httpGet/path'"),
        ({"probes": {"liveness": {"httpget": {}}}}, "at '/probes/liveness': additional properties 'httpget'"),
        ({"envFrom": [{"secretRef": {"name": "a"}, "configMapRef": {"name": "b"}}]}, "at '/envFrom/0'"),
    ],
)
def test_probe_and_env_mistakes_are_refused(values: dict[str, Any], message: str) -> None:
    assert message in render_error({"exampleGateway": {"enabled": True}, **values})


# --- pod placement, updates, disruption budget, network policy -----------------------


def test_topology_spread_selects_the_workloads_own_pods() -> None:
    values = scenario_values("standalone-replicas")
    objects, _ = render(values)
    template = pod_template(objects)
    zone, host = template["spec"]["topologySpreadConstraints"]
    assert zone["labelSelector"]["matchLabels"] == {
        "app.kubernetes.io/name": "llm-savings-exporter",
        "app.kubernetes.io/instance": RELEASE,
        "app.kubernetes.io/component": "standalone",
    }
    assert selects(zone["labelSelector"], template["metadata"]["labels"])
    assert host == values["topologySpreadConstraints"][1]  # a given labelSelector is kept


def test_update_strategy_per_workload() -> None:
    sts = one(render(scenario_values("standalone-replicas"))[0], "StatefulSet")
    assert sts["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    deployment = one(render(scenario_values("conventions"))[0], "Deployment")
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert "strategy" not in one(render({"exampleGateway": {"enabled": True}})[0], "Deployment")["spec"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"mode": "standalone", "updateStrategy": {"type": "Recreate"}},
            "updateStrategy.type Recreate does not apply to the StatefulSet the chart renders",
        ),
        (
            {"exampleGateway": {"enabled": True}, "updateStrategy": {"type": "OnDelete"}},
            "updateStrategy.type OnDelete does not apply to the Deployment the chart renders",
        ),
        (
            {"exampleGateway": {"enabled": True}, "updateStrategy": {"rollingUpdate": {"partition": 1}}},
            "updateStrategy.rollingUpdate.partition does not apply to the Deployment",
        ),
        (
            {"mode": "standalone", "updateStrategy": {"type": "OnDelete", "rollingUpdate": {"partition": 1}}},
            "updateStrategy.rollingUpdate needs updateStrategy.type RollingUpdate",
        ),
        ({"updateStrategy": {"type": "Sideways"}}, "at '/updateStrategy/type'"),
    ],
)
def test_update_strategy_mistakes_are_refused(values: dict[str, Any], message: str) -> None:
    assert message in render_error(values)


@pytest.mark.parametrize(
    ("scenario", "spec"),
    [
        ("standalone-replicas", {"maxUnavailable": 1}),
        ("conventions", {"minAvailable": "50%"}),
    ],
)
def test_disruption_budget_covers_the_pods(scenario: str, spec: dict[str, Any]) -> None:
    objects, _ = render(scenario_values(scenario))
    pdb = one(objects, "PodDisruptionBudget")
    assert {k: v for k, v in pdb["spec"].items() if k != "selector"} == spec
    assert selects(pdb["spec"]["selector"], pod_template(objects)["metadata"]["labels"])


def test_network_policy_opens_only_the_pods_ports_to_the_given_peers() -> None:
    values = scenario_values("standalone-replicas")
    objects, _ = render(values)
    policy = one(objects, "NetworkPolicy")
    template = pod_template(objects)
    assert selects(policy["spec"]["podSelector"], template["metadata"]["labels"])
    ports = {p["name"] for c in template["spec"]["containers"] for p in c.get("ports", [])}
    metrics_rule, otlp_rule = policy["spec"]["ingress"]
    assert [p["port"] for p in metrics_rule["ports"]] == ["savings-metrics"]
    assert metrics_rule["from"] == values["networkPolicy"]["metricsFrom"]
    assert {p["port"] for p in otlp_rule["ports"]} == {"savings-otlp", "otlp-grpc"} <= ports
    assert otlp_rule["from"] == values["networkPolicy"]["otlpFrom"]
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert policy["spec"]["egress"] == values["networkPolicy"]["egress"]
    # Open peers, egress untouched, on the demo gateway (OTLP off there).
    open_policy = one(render(scenario_values("conventions"))[0], "NetworkPolicy")
    assert open_policy["spec"]["policyTypes"] == ["Ingress"]
    assert open_policy["spec"]["ingress"] == [{"ports": [{"port": "savings-metrics", "protocol": "TCP"}]}]


@pytest.mark.parametrize("key", ["networkPolicy", "podDisruptionBudget"])
def test_objects_for_the_charts_own_pods_are_refused_in_sidecar_mode(key: str) -> None:
    message = render_error({key: {"enabled": True}})
    assert f"{key}.enabled applies to the chart's own pods" in message
    assert "your gateway's chart owns" in message


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"podDisruptionBudget": {"enabled": True, "minAvailable": 1, "maxUnavailable": 1}},
            "set minAvailable or maxUnavailable, not both",
        ),
        (
            {"podDisruptionBudget": {"enabled": True, "maxUnavailable": "half"}},
            "at '/podDisruptionBudget/maxUnavailable'",
        ),
        ({"networkPolicy": {"enabled": True, "ingress": []}}, "at '/networkPolicy': additional properties 'ingress'"),
        ({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone"}]}, "at '/topologySpreadConstraints/0'"),
    ],
)
def test_budget_policy_and_spread_mistakes_are_refused(values: dict[str, Any], message: str) -> None:
    assert message in render_error({"exampleGateway": {"enabled": True}, **values})


# --- standalone past one replica -----------------------------------------------------


@pytest.mark.parametrize("affinity", [None, False])
def test_replicas_above_one_need_trace_affinity(affinity: bool | None) -> None:
    standalone: dict[str, Any] = {"replicas": 2}
    if affinity is not None:
        standalone["traceAffinity"] = affinity
    message = render_error({"mode": "standalone", "standalone": standalone})
    assert "at '/standalone/traceAffinity': value must be true" in message


def test_one_replica_needs_no_acknowledgement_and_keeps_otlp_on_the_service() -> None:
    objects, notes = render({"mode": "standalone"})
    main = [s for s in by_kind(objects, "Service") if s["metadata"]["name"] != HEADLESS]
    assert {p["name"] for p in main[0]["spec"]["ports"]} == {"metrics", "otlp-http"}
    assert "/v1/traces" in notes


def test_trace_affine_replicas_route_through_the_headless_service() -> None:
    objects, notes = render(scenario_values("standalone-replicas"))
    sts = one(objects, "StatefulSet")
    assert sts["spec"]["replicas"] == 3
    services = {s["metadata"]["name"]: s for s in by_kind(objects, "Service")}
    # Nothing can send spans round-robin: the ClusterIP Service carries /metrics only.
    assert [p["name"] for p in services[f"{RELEASE}-llm-savings-exporter"]["spec"]["ports"]] == ["metrics"]
    headless = services[HEADLESS]
    assert headless["spec"]["clusterIP"] == "None" and sts["spec"]["serviceName"] == HEADLESS
    assert headless["spec"]["publishNotReadyAddresses"] is True  # a stable hash ring
    grpc_port = {p["name"]: p for p in headless["spec"]["ports"]}["otlp-grpc"]
    assert grpc_port["port"] == 4317 and grpc_port["targetPort"] == "otlp-grpc"
    assert f"{HEADLESS}.{NAMESPACE}.svc.cluster.local" in notes and "routing_key: traceID" in notes


def test_grpc_bridge_forwards_to_the_exporter_in_its_own_pod() -> None:
    objects, _ = render(scenario_values("standalone-replicas"))
    pod = pod_template(objects)["spec"]
    bridge = {c["name"]: c for c in pod["containers"]}["otlp-grpc-bridge"]
    exporter = sidecar(pod)
    assert bridge["securityContext"] == exporter["securityContext"]
    assert {p["name"]: p["containerPort"] for p in bridge["ports"]} == {"otlp-grpc": 4317, "bridge-health": 13133}
    assert bridge["args"] == ["--config=/etc/otlp-grpc-bridge/config.yaml"]
    (mount,) = bridge["volumeMounts"]
    config_map = {v["name"]: v for v in pod["volumes"]}[mount["name"]]["configMap"]["name"]
    config = yaml.safe_load(config_map_data(objects, config_map)["config.yaml"])
    exporter_config = yaml.safe_load(config_map_data(objects, f"{RELEASE}-llm-savings-exporter-config")["config.yaml"])
    exporter_port = int(exporter_config["otlp"]["listen"].rpartition(":")[2])
    http = config["exporters"]["otlphttp"]
    # To the exporter of the same pod, synchronously (no queue: its 429/503 reach the sender).
    assert http["traces_endpoint"] == f"http://127.0.0.1:{exporter_port}/v1/traces"
    assert http["sending_queue"] == {"enabled": False}
    assert http["headers"] == {"Authorization": "Bearer ${env:LLM_SAVINGS_OTLP_BEARER_TOKEN}"}
    assert {e["name"] for e in bridge["env"]} == {"LLM_SAVINGS_OTLP_BEARER_TOKEN"}
    assert config["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"] == "0.0.0.0:4317"
    assert config["extensions"]["health_check"]["endpoint"] == "0.0.0.0:13133"
    pipeline = config["service"]["pipelines"]["traces"]
    assert set(pipeline["receivers"]) <= set(config["receivers"]) and set(pipeline["exporters"]) <= set(
        config["exporters"]
    )
    assert set(config["service"]["extensions"]) <= set(config["extensions"])
    # The Collector does not reload its file: a config change rolls the pods.
    annotations = pod_template(objects)["metadata"]["annotations"]
    other, _ = render({**scenario_values("standalone-replicas"), "ports": {"otlp": 4319}})
    assert (
        annotations["checksum/otlp-grpc-bridge"]
        != pod_template(other)["metadata"]["annotations"]["checksum/otlp-grpc-bridge"]
    )


def test_no_bridge_unless_asked() -> None:
    objects, notes = render({"mode": "standalone", "standalone": {"replicas": 2, "traceAffinity": True}})
    assert [c["name"] for c in pod_template(objects)["spec"]["containers"]] == ["llm-savings-exporter"]
    assert "otlp-grpc" not in {p["name"] for s in by_kind(objects, "Service") for p in s["spec"]["ports"]}
    assert "speaks OTLP/gRPC only" in notes


def test_readme_collector_config_points_at_what_the_chart_renders() -> None:
    """The README's loadbalancing exporter config, for a release `savings` in `obs`."""
    readme = (CHART / "README.md").read_text()
    blocks = []
    for block in readme.split("```yaml\n")[1:]:
        try:
            blocks.append(yaml.safe_load(block.split("```")[0]))
        except yaml.YAMLError:
            continue  # a template of the parent-chart example, not plain YAML
    (collector,) = [b for b in blocks if isinstance(b, dict) and "loadbalancing" in b.get("exporters", {})]
    (chart_values,) = [b for b in blocks if isinstance(b, dict) and b.get("mode") == "standalone"]
    balancer = collector["exporters"]["loadbalancing"]
    assert balancer["routing_key"] == "traceID"
    with helm.Chart.load(CHART) as loaded:
        manifests = loaded.render(chart_values, name="savings", namespace="obs", is_install=True)
    objects = [d for p, t in manifests.items() if p.endswith(".yaml") for d in yaml.safe_load_all(t) if d]
    (headless,) = [s for s in by_kind(objects, "Service") if s["spec"].get("clusterIP") == "None"]
    dns = balancer["resolver"]["dns"]
    assert dns["hostname"] == f"{headless['metadata']['name']}.obs.svc.cluster.local"
    assert dns["port"] == {p["name"]: p["port"] for p in headless["spec"]["ports"]}["otlp-grpc"]
    assert collector["service"]["pipelines"]["traces/llm-savings"]["exporters"] == ["loadbalancing"]


@pytest.mark.parametrize("scenario", ["standalone-replicas", "conventions"])
def test_new_objects_fit_63_characters_under_the_longest_release(scenario: str) -> None:
    with helm.Chart.load(CHART) as loaded:
        manifests = loaded.render(scenario_values(scenario), name="r" * 53, namespace=NAMESPACE)
    objects = [d for p, t in manifests.items() if p.endswith(".yaml") for d in yaml.safe_load_all(t) if d]
    kinds = {o["kind"] for o in objects}
    assert {"PodDisruptionBudget", "NetworkPolicy"} <= kinds
    names = [(o["kind"], o["metadata"]["name"]) for o in objects]
    assert all(len(name) <= 63 for _, name in names), names
    assert len(set(names)) == len(names), names
