"""The demo pod of the chart, run for real on this machine.

The example-gateway scenario is rendered with Helm's engine; its ConfigMaps become
files, the demo gateway's shell loop writes JSON lines, and the real sidecar
(`python -m exporter` + the container's args) tails them. Only the absolute pod
paths are moved under a temporary directory and the ports onto free loopback ports;
everything else (config keys, price table, env, probes) is what the pod would get.
The probes' paths must answer 200 and /metrics must count every demo record.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.test_helm_chart import one, render, scenario_values, sidecar


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return 0, ""


def wait_for(predicate: Any, what: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        assert proc.poll() is None, f"sidecar exited with {proc.returncode} waiting for {what}"
        time.sleep(0.1)  # polling another process over HTTP, bounded by the deadline
    raise AssertionError(f"timed out waiting for {what}")


def requests_total(metrics: str) -> float:
    return sum(
        float(m.group(1))
        for m in re.finditer(r"^llm_savings_requests_total\{[^}]*\} (\S+)$", metrics, re.M)
    )


@pytest.mark.slow
def test_demo_pod_runs_the_real_sidecar(tmp_path: Path) -> None:
    objects, _ = render(scenario_values("example-gateway"))
    deployment = one(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    exporter = sidecar(pod)
    gateway = pod["containers"][0]
    maps = {cm["metadata"]["name"]: cm["data"] for cm in objects if cm["kind"] == "ConfigMap"}
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in exporter["volumeMounts"]}

    # The pod's filesystem, under tmp_path.
    logs, state, prices_dir = tmp_path / "logs", tmp_path / "state", tmp_path / "prices"
    for d in (logs, state, prices_dir):
        d.mkdir()
    prices_cm = maps[
        volumes[mounts["/etc/llm-savings-exporter/prices"]["name"]]["configMap"]["name"]
    ]
    for key, text in prices_cm.items():
        (prices_dir / key).write_text(text)
    config_cm = maps[volumes[mounts[exporter["args"][2]]["name"]]["configMap"]["name"]]
    config = yaml.safe_load(config_cm["config.yaml"])
    metrics_port, otlp_port = free_port(), free_port()
    config["listen"] = f"127.0.0.1:{metrics_port}"
    config["otlp"]["listen"] = f"127.0.0.1:{otlp_port}"
    config["state_dir"] = str(state)
    config["prices"] = config["prices"].replace("/etc/llm-savings-exporter/prices", str(prices_dir))
    for source in config["sources"]:
        source["paths"] = [p.replace("/var/log/gateway", str(logs)) for p in source["paths"]]
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(config))

    # The demo gateway writes a handful of lines first.
    gw_env = {e["name"]: e["value"] for e in gateway["env"]}
    gw_env.update(
        LOG_FILE=str(logs / "gateway.jsonl"), INTERVAL="0", HOSTNAME="demo", PATH=os.environ["PATH"]
    )
    writer = subprocess.Popen(
        ["/bin/sh", "-c", gateway["args"][0]], env=gw_env, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 20
        while (
            not (logs / "gateway.jsonl").exists()
            or (logs / "gateway.jsonl").read_bytes().count(b"\n") < 20
        ):
            assert time.monotonic() < deadline and writer.poll() is None
            time.sleep(0.02)
    finally:
        os.killpg(writer.pid, signal.SIGTERM)
        writer.wait(timeout=10)
    written = (logs / "gateway.jsonl").read_bytes()
    lines = written[: written.rfind(b"\n") + 1]
    (logs / "gateway.jsonl").write_bytes(lines)  # drop a line cut by the kill
    n_lines = lines.count(b"\n")

    # The sidecar container: its args and env, secrets filled in as the kubelet would.
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_SAVINGS_")}
    for item in exporter["env"]:
        env[item["name"]] = item.get("value", "test-token")
    env["TMPDIR"] = str(tmp_path)
    args = [exporter["args"][0], "--config", str(config_file)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "exporter", *args],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{metrics_port}"
    try:
        liveness = exporter["livenessProbe"]["httpGet"]["path"]
        readiness = exporter["readinessProbe"]["httpGet"]["path"]
        wait_for(lambda: get(base + liveness)[0] == 200, liveness, proc)
        wait_for(lambda: get(base + readiness)[0] == 200, readiness, proc)
        wait_for(lambda: requests_total(get(base + "/metrics")[1]) == n_lines, "all records", proc)
        metrics = get(base + "/metrics")[1]
        assert 'price_version="2026-11-01"' in metrics  # the inline table from the ConfigMap
        assert "llm_savings_usd_saved_total{" in metrics
        # The OTLP receiver is open and wants the bearer token from the Secret.
        status, _ = get(f"http://127.0.0.1:{otlp_port}/v1/traces")
        assert status not in (0, 200)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            output, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
    assert proc.returncode == 0, output.decode(errors="replace")[-2000:]
    # The exporter wrote only where the pod lets it: the state directory.
    assert any(state.iterdir())
