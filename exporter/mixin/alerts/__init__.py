"""Alert groups, one module each.

Every alert carries a ``severity`` label (critical, warning, info) and the
annotations summary, description and runbook_url; docs/runbook.md has one
section per alert, whose anchor is the alert's name in lower case. The
thresholds and ``for`` durations are parameters (``exporter/mixin/config.py``);
descriptions quote them as configured.
"""

from __future__ import annotations

from collections.abc import Callable

from exporter.mixin.alerts import cache_drops, figures, ingest, targets
from exporter.mixin.config import Values
from exporter.mixin.model import Group

GROUPS: tuple[Callable[[Values], Group], ...] = (targets.group, figures.group, ingest.group,
                                                 cache_drops.group)
