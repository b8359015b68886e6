"""scripts/setup.sh says what it sets up (one line per step) for `make demo`, and nothing with --test.

The script runs for real, in a copy of the repository layout whose interpreter is
a stub recording what it is asked (a real venv and pip install take ~45 s and the
network; what is tested here is the script's own logic and wording).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from tests.support.processes import ROOT

STUB = """#!/usr/bin/env bash
# a stand-in for python3 and .venv/bin/python: records its arguments, makes what they would make
echo "$*" >> "$STUB_LOG"
case "$*" in
  --version) echo "Python 3.11.2" ;;
  "-m venv .venv") mkdir -p .venv/bin && cp "$0" .venv/bin/python ;;
  *"pip install -q -e ."*) touch .venv/bin/llm-savings-exporter && chmod +x .venv/bin/llm-savings-exporter ;;
esac
"""


def _tree(tmp: Path) -> tuple[Path, dict[str, str]]:
    (tmp / "repo" / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp / "repo" / "scripts" / "setup.sh")
    stub = tmp / "python3"
    stub.write_text(STUB)
    stub.chmod(0o755)
    env = {**os.environ, "PYTHON": str(stub), "STUB_LOG": str(tmp / "calls.log")}
    return tmp / "repo", env


def _setup(repo: Path, env: dict[str, str], *args: str) -> list[str]:
    result = subprocess.run(["bash", str(repo / "scripts" / "setup.sh"), *args], capture_output=True, text=True,
                            env=env, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    return result.stderr.splitlines()


def test_first_run_then_a_rerun_say_each_step(tmp_path: Path) -> None:
    repo, env = _tree(tmp_path)
    assert _setup(repo, env) == [
        "setup: creating the virtualenv .venv (Python 3.11.2)",
        "setup: installing llm-savings-exporter and its dependencies into .venv (pip, about 45 s the first time)",
        "setup: ready: .venv/bin/llm-savings-exporter",
    ]
    assert _setup(repo, env) == [
        "setup: checking llm-savings-exporter in .venv is up to date (pip install -e .)",
        "setup: ready: .venv/bin/llm-savings-exporter",
    ]
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert calls.count("-m venv .venv") == 1 and calls.count("-m pip install -q -e .") == 2


def test_test_mode_stays_quiet(tmp_path: Path) -> None:
    repo, env = _tree(tmp_path)
    bin_dir = tmp_path / "bin"  # every tool the script checks for is "installed", so apt-get never runs
    bin_dir.mkdir()
    tools = set(re.findall(r"command -v (\S+)", (repo / "scripts" / "setup.sh").read_text()))
    for tool in tools:
        (bin_dir / tool).write_text("#!/bin/sh\n")
        (bin_dir / tool).chmod(0o755)
    (bin_dir / "apt-get").write_text('#!/bin/sh\necho "apt-get $*" >> "$STUB_LOG"\n')
    (bin_dir / "apt-get").chmod(0o755)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    assert _setup(repo, env, "--test") == []
    calls = (tmp_path / "calls.log").read_text()
    assert "-m pip install -q -e .[dev]" in calls and "apt-get" not in calls
