"""The mixin's files: what ``scripts/gen_mixin.py`` writes, as relative path -> exact content.

Three outputs from the same groups and dashboards:

* ``rules/`` and ``dashboards/``: Prometheus rule files and Grafana JSON with
  the parameters filled in;
* ``mixin/``: ``mixin.libsonnet`` exposing ``_config``, ``prometheusAlerts``,
  ``prometheusRules`` and ``grafanaDashboards`` as kubernetes-mixin does, the
  rendered JSON imported by it;
* the Helm chart's ``files/``: the same files with a token in each parameter's
  place (``config.token``), which the chart's templates replace with its
  ``mixin:`` values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from exporter.mixin import alerts, rules
from exporter.mixin.config import Values, defaults, placeholders, values
from exporter.mixin.dashboards import DASHBOARDS
from exporter.mixin.emit import GENERATED, groups_dict, rule_file
from exporter.mixin.model import Group

RULES_FILE = "llm-savings.rules.yaml"
ALERTS_FILE = "llm-savings.alerts.yaml"
CHART_FILES = "helm/llm-savings-exporter/files"
MIXIN_DIR = "mixin"

RULES_HEADER = """\
Recording rules for llm-savings-exporter.

Naming: level:metric:operations (the Prometheus convention). One sidecar runs
per gateway replica; these rules fold the replicas together with
`sum without (instance, pod, job)`, so every other label of the catalog
(month, model, tenant and the provenance labels) is kept; `by` aggregations
keep the cluster label. `promtool test rules` checks each one in rules/tests/.

Counters are month-to-date and carry the record's own `month`: summing a month
over the replicas gives that month's total, with no increase() needed."""

ALERTS_HEADER = """\
Alerting rules for llm-savings-exporter.

Every alert carries a `severity` label (critical, warning, info) and the
annotations summary, description and runbook_url; the runbook has one section
per alert (docs/runbook.md). Thresholds and `for` durations are parameters of
the mixin (exporter/mixin/config.py, docs/monitoring.md)."""


def rule_groups(cfg: Values) -> list[Group]:
    return [build(cfg) for build in rules.GROUPS]


def alert_groups(cfg: Values) -> list[Group]:
    return [build(cfg) for build in alerts.GROUPS]


def dashboards(cfg: Values) -> dict[str, dict[str, Any]]:
    return {name: build(cfg) for name, build in DASHBOARDS.items()}


def _json(doc: Any) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def monitoring_files(cfg: Values) -> dict[str, str]:
    """rules/ and dashboards/ for one set of parameter texts."""
    files = {
        f"rules/{RULES_FILE}": rule_file(rule_groups(cfg), cfg, RULES_HEADER),
        f"rules/{ALERTS_FILE}": rule_file(alert_groups(cfg), cfg, ALERTS_HEADER),
    }
    files.update({f"dashboards/{name}": _json(board) for name, board in dashboards(cfg).items()})
    return files


def libsonnet(cfg: Values, config: Mapping[str, str | int | float]) -> dict[str, str]:
    """mixin/: mixin.libsonnet and the JSON it imports."""
    boards = dashboards(cfg)
    entries = "\n".join(f"    '{name}': import 'dashboards/{name}'," for name in boards)
    config_text = json.dumps(dict(config), indent=2, sort_keys=True, ensure_ascii=False).replace("\n", "\n  ")
    text = f"""\
// {GENERATED}
// The llm-savings-exporter monitoring mixin, in kubernetes-mixin's layout.
// The rules, alerts and dashboards below are rendered with _config already:
// to change a parameter, write it in a params file and run
//   python scripts/gen_mixin.py --config params.yaml --out DIR
// which writes DIR/mixin/ (this directory) again. docs/monitoring.md lists the parameters.
{{
  _config+:: {config_text},

  prometheusAlerts+:: import 'prometheus_alerts.json',
  prometheusRules+:: import 'prometheus_rules.json',
  grafanaDashboards+:: {{
{entries}
  }},
}}
"""
    files = {
        f"{MIXIN_DIR}/mixin.libsonnet": text,
        f"{MIXIN_DIR}/prometheus_alerts.json": _json(groups_dict(alert_groups(cfg), cfg)),
        f"{MIXIN_DIR}/prometheus_rules.json": _json(groups_dict(rule_groups(cfg), cfg)),
    }
    files.update({f"{MIXIN_DIR}/dashboards/{name}": _json(board) for name, board in boards.items()})
    return files


def render(overrides: Mapping[str, str | int | float] | None = None) -> dict[str, str]:
    """Every generated file: relative path -> content."""
    config = defaults() | dict(overrides or {})
    cfg = values(overrides)
    files = monitoring_files(cfg)
    files.update(libsonnet(cfg, config))
    chart = monitoring_files(placeholders())
    files.update({f"{CHART_FILES}/{path}": text for path, text in chart.items()})
    return files

