"""Headless Chromium (Debian's ``chromium``) for the browser tests: screenshots and the rendered DOM.

Each call is one browser process with its own throw-away profile, no network services of
its own (no sync, updates, QUIC or background fetches), so a test sees only what the page
itself asks for.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--disable-dev-shm-usage")
TIMEOUT = 90.0
ARTIFACTS_ENV = "LLM_SAVINGS_TEST_ARTIFACTS"  # a directory to keep screenshots in (CI uploads it)


def chromium() -> str:
    """The browser binary; a clear failure (not a skip) when it is missing."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise AssertionError("headless Chromium is needed: install Debian's chromium (scripts/setup.sh --test)")
    return found


def _run(profile: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    profile.mkdir(parents=True, exist_ok=True)
    result = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                            timeout=TIMEOUT, check=False)
    if result.returncode != 0:
        raise AssertionError(f"chromium exited {result.returncode}: {result.stderr.decode(errors='replace')[-2000:]}")
    return result


def screenshot(url: str, target: Path, width: int, height: int, profile: Path) -> Path:
    """A PNG of the page at a window of ``width`` x ``height`` CSS pixels."""
    _run(profile, f"--window-size={width},{height}", f"--screenshot={target}", url)
    if not target.is_file():
        raise AssertionError(f"chromium wrote no screenshot to {target}")
    return target


def dump_dom(url: str, profile: Path) -> str:
    """The page's DOM after the browser has parsed and laid it out, serialised."""
    return _run(profile, "--dump-dom", url).stdout.decode("utf-8")


def keep(path: Path, name: str) -> Path:
    """Copy an artifact (a screenshot, a page) to ``$LLM_SAVINGS_TEST_ARTIFACTS`` when set; it stays in tmp too."""
    directory = os.environ.get(ARTIFACTS_ENV)
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, Path(directory) / name)
    return path
