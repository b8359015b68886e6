"""The Grafana dashboards, one module each: file name -> builder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from exporter.mixin.config import Values
from exporter.mixin.dashboards import health, overview, provenance

DASHBOARDS: dict[str, Callable[[Values], dict[str, Any]]] = {
    overview.FILE: overview.build,
    provenance.FILE: provenance.build,
    health.FILE: health.build,
}
