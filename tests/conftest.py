"""Suite-wide markers: every test under tests/e2e/ is marked ``e2e``.

``pytest -m "not e2e"`` is the fast loop (no processes, Prometheus, Helm or
browser); plain ``pytest`` runs everything.
"""

from __future__ import annotations

from pathlib import Path

import pytest

E2E_DIR = Path(__file__).parent / "e2e"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if E2E_DIR in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.e2e)
