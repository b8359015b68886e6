"""Suite-wide markers: every test under tests/e2e/ is marked ``e2e``.

``pytest -m "not e2e"`` is the fast loop (no processes, Prometheus, Helm or
browser); plain ``pytest`` runs everything.

The tests that need what takes longest to build, the live-capture venvs and the
container image, run last: ``scripts/test.sh`` builds both in the background
while the others run (docs/testing.md), and their tests wait on its locks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

E2E_DIR = Path(__file__).parent / "e2e"
# whole modules (or folders), so a module-scoped fixture still serves one contiguous run
BUILT_IN_BACKGROUND = (E2E_DIR / "live", E2E_DIR / "test_image_build.py")

# No unit test is timed: hypothesis' default deadline (200 ms an example) fails a test whose machine
# is busy, and scripts/test.sh runs two lanes at once. The fuzz targets keep their explicit 1 s.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


def _built_in_background(path: Path) -> bool:
    return any(path == last or last in path.parents for last in BUILT_IN_BACKGROUND)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if E2E_DIR in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.e2e)
    # a stable sort: every other test keeps its order
    items.sort(key=lambda item: _built_in_background(Path(str(item.path))))
