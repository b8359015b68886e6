"""The Dockerfile read as instructions and checked against the chart.

The image itself is built with buildah and run by tests/e2e/test_image_build.py; this
file keeps the cheap checks that need no builder.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

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
        i.args.partition("=")[0]: i.args.partition("=")[2] for i in INSTRUCTIONS if i.keyword == "ARG" and i.stage == -1
    }
    assert args["PYTHON_IMAGE"] == "python:3.11-slim"
    assert args["BUILD_IMAGE"] == "python:3.11"  # the same Python with a compiler: the C span-view walk
    assert froms[0].split() == ["${BUILD_IMAGE}", "AS", "build"]
    assert all(f.split()[0] == "${PYTHON_IMAGE}" for f in froms[1:])


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


def test_offline_builders_can_read_it() -> None:
    """Debian's buildah 1.28 has no RUN heredocs, and a `# syntax=` line makes BuildKit
    fetch a frontend image an offline builder cannot pull (test_image_build.py builds it)."""
    text = DOCKERFILE.read_text()
    assert not re.search(r"^#\s*syntax\s*=", text, re.I | re.M)
    assert not [i for i in INSTRUCTIONS if re.search(r"<<-?'?\w+'?\s*$", i.args.splitlines()[0])]
    # The one script a RUN step executes is in the build context.
    assert any(i.keyword == "COPY" and "scripts/bake_encodings.py" in i.args for i in INSTRUCTIONS)
