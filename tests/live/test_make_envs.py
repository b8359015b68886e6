"""make_envs.ensure builds an env under its lock, so the background build of scripts/test.sh and a
live test that reaches the same env never install into one directory at once."""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest

from tests.live import make_envs
from tests.live.envs import ENVS


def _locked(path: Path) -> bool:
    with path.open("w") as other:  # a second open file description: flock conflicts with the first
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(other, fcntl.LOCK_UN)
        return False


def test_the_env_is_checked_and_built_under_its_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = ENVS["litellm"]
    monkeypatch.setattr(make_envs, "VENVS", tmp_path)
    seen: list[bool] = []

    def build(env_: object, t0: float, log: bool) -> float:
        seen.append(_locked(tmp_path / "litellm.lock"))
        return 0.0

    monkeypatch.setattr(make_envs, "_ensure_locked", build)
    make_envs.ensure(env, log=False)
    assert seen == [True]
    assert not _locked(tmp_path / "litellm.lock")  # released once the env is ready


def test_an_env_with_its_stamp_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = ENVS["langfuse"]
    monkeypatch.setattr(make_envs, "VENVS", tmp_path)
    python = make_envs.python_of(env)
    python.parent.mkdir(parents=True)
    python.write_text("")
    (tmp_path / env.name / make_envs.STAMP).write_text(env.stamp() + "\n")
    make_envs.ensure(env, log=False)  # would run venv and pip (and remove the fake python) if not current
    assert python.exists()
