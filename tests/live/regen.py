"""Regenerate the dialect fixtures from the real packages: the one command to run.

    python -m tests.live.regen                      # every env and dialect
    python -m tests.live.regen --only litellm_otel  # one dialect (or a whole env by its name)

Creates the venvs when needed (``tests.live.make_envs``), then runs ``tests/live/capture.py`` in
each dialect's venv. With the default ``--out`` each dialect's folder is emptied first, so cases
that are gone do not linger.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.live import make_envs
from tests.live.envs import ENVS, all_dialects, env_of

ROOT = make_envs.ROOT
DEFAULT_OUT = ROOT / "tests" / "fixtures" / "dialects"
CAPTURE = ROOT / "tests" / "live" / "capture.py"


def selected(only: list[str] | None) -> list[str]:
    if not only:
        return all_dialects()
    out: list[str] = []
    for name in only:
        out += list(ENVS[name].dialects) if name in ENVS else [name]
    unknown = [d for d in out if d not in all_dialects()]
    if unknown:
        raise SystemExit(f"unknown dialect or env: {unknown}")
    return out


def capture(dialect: str, out: Path, clean: bool = True, timeout: float = 300) -> float:
    """Run the capture of one dialect in its venv; the seconds it took."""
    env = env_of(dialect)
    make_envs.ensure(env)
    if clean:
        shutil.rmtree(out / dialect, ignore_errors=True)
    t0 = time.monotonic()
    cmd = [str(make_envs.python_of(env)), str(CAPTURE), "--dialect", dialect, "--out", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        tail = f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        raise RuntimeError(f"capture of {dialect} failed ({done.returncode}):\n{tail}")
    took = time.monotonic() - t0
    print(f"dialect {dialect}: captured in {took:.1f}s", flush=True)
    return took


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="regenerate tests/fixtures/dialects from the real packages")
    ap.add_argument("--only", action="append", help="a dialect or an env name (repeatable)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    for dialect in selected(args.only):
        capture(dialect, args.out)
    print(f"total: {time.monotonic() - t0:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
