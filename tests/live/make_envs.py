"""Create the capture venvs under ``.venv-live/<env>`` with their exact pins.

    python -m tests.live.make_envs [--only ENV ...]

A venv whose ``.pins-stamp`` matches its pins (and the Python version) is kept as it is, so a second
run in the same CI job or on the same machine is quick. pip's download cache is shared as usual
(set ``PIP_CACHE_DIR`` to move it). Installs run one after the other: the machine has 2 cores.

Each env is built under an exclusive lock (``.venv-live/<env>.lock``): ``scripts/test.sh`` builds the
envs in the background while the first tests run, and a live test that reaches an env still being
built waits for that build instead of starting a second one in the same directory.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.live.envs import ENVS, Env

ROOT = Path(__file__).resolve().parents[2]
VENVS = Path(os.environ.get("LLM_SAVINGS_LIVE_VENVS", ROOT / ".venv-live"))
STAMP = ".pins-stamp"


def venv_dir(env: Env) -> Path:
    return VENVS / env.name


def python_of(env: Env) -> Path:
    return venv_dir(env) / "bin" / "python"


def is_current(env: Env) -> bool:
    stamp = venv_dir(env) / STAMP
    return python_of(env).exists() and stamp.exists() and stamp.read_text().strip() == env.stamp()


def ensure(env: Env, log: bool = True) -> float:
    """Create or reuse the venv of ``env``; the seconds it took (waiting for another build included)."""
    t0 = time.monotonic()
    VENVS.mkdir(parents=True, exist_ok=True)
    with (VENVS / f"{env.name}.lock").open("w") as lock:
        # held until the venv is complete or removed: the stamp is written last, under the lock
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure_locked(env, t0, log)


def _ensure_locked(env: Env, t0: float, log: bool) -> float:
    if is_current(env):
        if log:
            print(f"env {env.name}: up to date ({time.monotonic() - t0:.1f}s)", flush=True)
        return time.monotonic() - t0
    target = venv_dir(env)
    shutil.rmtree(target, ignore_errors=True)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(target)], check=True)
    cmd = [str(python_of(env)), "-m", "pip", "install", "-q", "--disable-pip-version-check", *env.pip_args, *env.pins]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join(line for line in done.stderr.splitlines() if "is ignored" not in line)[-3000:]
        raise RuntimeError(f"pip install for env {env.name} failed:\n{tail}")
    (target / STAMP).write_text(env.stamp() + "\n")
    took = time.monotonic() - t0
    if log:
        print(f"env {env.name}: created in {took:.1f}s", flush=True)
    return took


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="create the live-capture venvs")
    ap.add_argument("--only", action="append", choices=sorted(ENVS), help="only this env (repeatable)")
    args = ap.parse_args(argv)
    total = 0.0
    for name in args.only or list(ENVS):
        total += ensure(ENVS[name])
    print(f"all envs: {total:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
