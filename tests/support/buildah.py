"""Working containers of an image, run with `buildah run --isolation chroot`.

Helpers of tests/e2e/test_image_build.py: a container whose overlay upper directory
tells what a run wrote to the image's root filesystem, and a server started in one
that is stopped the way the kubelet stops a container (SIGTERM to its main process).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any


def buildah(*args: str, timeout: float = 300) -> str:
    """stdout of a buildah command that must succeed (its output in the failure if not)."""
    result = subprocess.run(["buildah", *args], capture_output=True, text=True, timeout=timeout, check=False)
    assert result.returncode == 0, f"buildah {' '.join(args)}\n{result.stdout}\n{result.stderr}"
    return result.stdout


class Container:
    """A working container of the image; ``run`` is `buildah run --isolation chroot`."""

    def __init__(self, image: str) -> None:
        self.id = buildah("from", "--quiet", "--pull-never", image).strip()
        # The image's VOLUME would get an anonymous volume that buildah 1.28 may mount over
        # a --volume at the same path; the kubelet, too, mounts the pod's volume instead.
        for volume in json.loads(buildah("inspect", "--type", "image", image))["OCIv1"]["config"].get("Volumes", {}):
            buildah("config", "--volume", f"{volume}-", self.id)
        self.upper = Path(buildah("mount", self.id).strip()).parent / "diff"

    def argv(
        self, command: list[str], *, user: str = "", env: dict[str, str] | None = None, volumes: tuple[str, ...] = ()
    ) -> list[str]:
        argv = ["buildah", "run", "--isolation", "chroot", "--mount", "type=tmpfs,destination=/tmp"]
        if user:
            argv += ["--user", user]
        for key, value in (env or {}).items():
            argv += ["--env", f"{key}={value}"]
        for volume in volumes:
            argv += ["--volume", volume]
        return [*argv, self.id, "--", *command]

    def run(self, command: list[str], *, check: bool = True, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(self.argv(command, **kwargs), capture_output=True, text=True, timeout=120, check=False)
        if check:
            assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
        return result

    def root_writes(self, mount_points: set[str]) -> set[str]:
        """Files (and empty directories) written in the root filesystem, besides the mount
        points buildah made; the directories above a write are copied up, not written."""
        allowed = {"/run", *mount_points}
        found = {
            "/" + str(p.relative_to(self.upper))
            for p in self.upper.rglob("*")
            if p.is_symlink() or not p.is_dir() or not any(p.iterdir())
        }
        return found - allowed

    def remove(self) -> None:
        subprocess.run(["buildah", "umount", self.id], capture_output=True, check=False)
        subprocess.run(["buildah", "rm", self.id], capture_output=True, check=False)


class Served:
    """A server started by `buildah run`, in its own process group.

    ``stop`` sends SIGTERM to the process inside the container, as the kubelet does to a
    container's main process, and `buildah run` exits with its status.
    """

    def __init__(self, argv: list[str], log: Path, needle: str) -> None:
        self.log = log
        self.needle = needle
        self.out = log.open("wb")
        self.proc = subprocess.Popen(argv, stdout=self.out, stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self) -> None:
        assert self.proc.poll() is None, self.log.read_text()[-3000:]

    def uids(self) -> dict[int, int]:
        """pid -> real uid of the processes running inside the container."""
        return contained_pids(self.needle)

    def stop(self) -> int:
        if self.proc.poll() is None:
            for pid in contained_pids(self.needle):
                os.kill(pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.out.close()
        return self.proc.returncode


def contained_pids(needle: str) -> dict[int, int]:
    """pid -> real uid of the processes, other than buildah's, whose NUL-separated command
    line holds ``needle``: the ones running inside the container."""
    found = {}
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes() if proc.name.isdigit() else b""
            if needle.encode() not in cmdline or b"buildah" in cmdline.split(b"\0")[0]:
                continue
            uid = re.search(r"^Uid:\s+(\d+)", (proc / "status").read_text(), re.M)
        except (FileNotFoundError, ProcessLookupError):
            continue
        if uid:
            found[int(proc.name)] = int(uid.group(1))
    return found
