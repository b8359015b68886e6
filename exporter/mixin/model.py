"""The shapes the mixin's modules build: recording rules, alerts, groups.

Each rule and alert group is one module returning one ``Group``; the
generator writes them as Prometheus rule files (``emit.rule_file``) and as
the JSON ``mixin/mixin.libsonnet`` imports. Expressions are whole PromQL
texts with ``%(name)s`` parameter slots, formatted once by ``fill``.
"""

from __future__ import annotations

from typing import NamedTuple

from exporter.mixin.config import Values


class Record(NamedTuple):
    """A recording rule; ``comment`` is written above it in the rule file."""

    record: str
    expr: str
    comment: str = ""


class Alert(NamedTuple):
    """An alerting rule. ``for_`` is a duration text; the runbook anchor is the name in lower case."""

    alert: str
    expr: str
    for_: str
    severity: str
    summary: str
    description: str
    comment: str = ""


class Group(NamedTuple):
    """One rule group: evaluated together, in order (a rule may read the records above it)."""

    name: str
    rules: tuple[Record | Alert, ...]


def fill(template: str, cfg: Values) -> str:
    """A template with its ``%(name)s`` slots filled; a name that is no parameter is a KeyError."""
    return template % cfg


def runbook_url(alert: str, cfg: Values) -> str:
    return f"{cfg['runbookBaseUrl']}#{alert.lower()}"
