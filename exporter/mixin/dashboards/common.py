"""What the three dashboards share: panels, rows, template variables, the import header.

Every panel's unit comes from the catalog entry of the metric it shows
(``unit_of``) unless the panel changes the dimension (a ratio, dollars per
hour) and names its unit; a metric missing from the catalog stops the
generation. The PromQL of each panel is written out whole in its module,
with named selector slots (below) for the scope the variables choose. The
queries read the exporter's own counters, not the recording rules, so the
dashboards work on a Prometheus without ``rules/`` loaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from exporter.catalog import BY_NAME, MetricSpec
from exporter.mixin.config import Values
from exporter.mixin.model import fill

SCHEMA_VERSION = 39
DS = {"type": "prometheus", "uid": "${datasource}"}
GRAFANA_VERSION = "10.4.0"  # the oldest Grafana the panels' JSON (schema 39) is written for

# Catalog unit -> Grafana unit id. A counter of tokens shown as a rate is still
# "short"; panels that change the dimension name their unit explicitly.
GRAFANA_UNIT = {
    "usd": "currencyUSD",
    "tokens": "short",
    "requests": "short",
    "records": "short",
    "lines": "short",
    "entries": "short",
    "seconds": "s",
    "bytes": "bytes",
    "": "short",
}

# The selector slots of the panels' PromQL. Each names the matchers one kind of
# query needs; "scope" is the cluster, namespace and job the variables chose.
SCOPE = '%(clusterLabel)s=~"$cluster", %(namespaceLabel)s=~"$namespace", job=~"$job"'
SLOTS = {
    "scope": SCOPE,
    # month to date, one month: counters with month, tenant and model
    "mtd": SCOPE + ', month="$month", tenant=~"$tenant", model=~"$model"',
    # month to date of every model of the chosen tenants (the optimizer's counters: their model
    # is the optimizer's, not the request's)
    "mtd_tenant": SCOPE + ', month="$month", tenant=~"$tenant"',
    # month to date of counters without a tenant label
    "mtd_model": SCOPE + ', month="$month", model=~"$model"',
    # month to date of counters with only a month
    "mtd_month": SCOPE + ', month="$month"',
    # rates over all months
    "all_months": SCOPE + ', tenant=~"$tenant", model=~"$model"',
    "all_months_model": SCOPE + ', model=~"$model"',
    # the health dashboard: one or more instances
    "instances": SCOPE + ', instance=~"$instance"',
    # the billing tiers of prompt tokens, listed so a future tier cannot slip into a denominator unseen
    "prompt_tiers": 'tier=~"fresh|cache_read|cache_write_5m|cache_write_1h"',
}


def slots(cfg: Values) -> dict[str, str]:
    """The parameters plus the filled selector slots, for ``fill``."""
    return {**cfg, **{name: fill(text, cfg) for name, text in SLOTS.items()}}


def catalog_unit(name: str) -> str:
    """Grafana unit of a catalog metric; KeyError if the metric is not in the catalog."""
    metric: MetricSpec = BY_NAME[name]
    return GRAFANA_UNIT[metric.unit]


class Target(NamedTuple):
    expr: str
    legend: str = ""


PanelKind = Literal["stat", "timeseries", "bargauge"]


@dataclass
class Panel:
    """One data panel; ``unit`` or ``unit_of`` (a catalog metric) decides the unit."""

    kind: PanelKind
    title: str
    description: str
    targets: list[Target]
    w: int = 6
    h: int = 4
    unit: str | None = None
    unit_of: str | None = None
    decimals: int | None = None
    stack: bool = False
    extra_defaults: dict[str, Any] = field(default_factory=dict)

    def resolved_unit(self) -> str:
        if self.unit is not None:
            return self.unit
        if self.unit_of is None:
            raise ValueError(f"panel {self.title!r} has neither unit nor unit_of")
        return catalog_unit(self.unit_of)


class Row(NamedTuple):
    """A titled row of the dashboard and its lines of panels (each line fills up to 24 columns)."""

    title: str
    lines: list[list[Panel]]


# --- template variables ---------------------------------------------------

def datasource_var() -> dict[str, Any]:
    return {
        "name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
        "current": {}, "hide": 0, "includeAll": False, "multi": False, "options": [],
        "refresh": 1, "regex": "", "skipUrlSync": False,
    }


def query_var(name: str, label: str, query: str, *, multi: bool, sort: int,
              all_value: str | None = None) -> dict[str, Any]:
    """A Prometheus label_values variable. sort 1 = alphabetical, 2 = alphabetical descending.

    A multi-value variable without ``all_value`` expands All to the values it
    found (Grafana's default), so it never widens past its own query.
    """
    var: dict[str, Any] = {
        "name": name, "label": label, "type": "query", "datasource": DS,
        "definition": query,
        "query": {"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
        "current": {}, "hide": 0, "includeAll": multi, "multi": multi, "options": [],
        "refresh": 2, "regex": "", "skipUrlSync": False, "sort": sort,
    }
    if multi:
        var["allValue"] = all_value
    return var


def scope_vars(cfg: Values, series: str) -> list[dict[str, Any]]:
    """Data source, cluster, namespace, job: the scope every dashboard starts with.

    The values come from ``series`` inside the job selector: the savings
    dashboards read their own month-to-date counter (so series without a live
    target, such as a backfilled month, still offer their job), the health
    dashboard reads ``up``. Cluster and namespace: All = ".*", which also
    matches targets without the label (a single cluster, no Kubernetes). Job:
    All = the jobs found, so the dashboards never show another exporter's series.
    """
    cells = {**cfg, "series": series}
    return [
        datasource_var(),
        query_var("cluster", "Cluster", fill("label_values(%(series)s{%(jobSelector)s}, %(clusterLabel)s)", cells),
                  multi=True, sort=1, all_value=".*"),
        query_var("namespace", "Namespace",
                  fill('label_values(%(series)s{%(jobSelector)s, %(clusterLabel)s=~"$cluster"}, %(namespaceLabel)s)',
                       cells),
                  multi=True, sort=1, all_value=".*"),
        query_var("job", "Job",
                  fill('label_values(%(series)s{%(jobSelector)s, %(clusterLabel)s=~"$cluster", '
                       '%(namespaceLabel)s=~"$namespace"}, job)', cells),
                  multi=True, sort=1),
    ]


def savings_vars(cfg: Values) -> list[dict[str, Any]]:
    """Scope, then month (latest first), tenant and model, each narrowed by the ones before."""
    cells = slots(cfg)
    return [
        *scope_vars(cfg, "llm_savings_requests_total"),
        # YYYY-MM sorts as text; descending puts the latest month first, and
        # Grafana selects the first value by default.
        query_var("month", "Month", fill("label_values(llm_savings_requests_total{%(scope)s}, month)", cells),
                  multi=False, sort=2),
        # All = ".*" (not a list of every value): it also matches series whose
        # tenant is empty and stays short with many tenants.
        query_var("tenant", "Tenant",
                  fill('label_values(llm_savings_requests_total{%(scope)s, month="$month"}, tenant)', cells),
                  multi=True, sort=1, all_value=".*"),
        query_var("model", "Model",
                  fill('label_values(llm_savings_requests_total{%(scope)s, month="$month", tenant=~"$tenant"}, '
                       "model)", cells),
                  multi=True, sort=1, all_value=".*"),
    ]


def health_vars(cfg: Values) -> list[dict[str, Any]]:
    """Scope, then the instances (All = ".*" inside the chosen jobs)."""
    return [
        *scope_vars(cfg, "up"),
        query_var("instance", "Instance",
                  fill("label_values(llm_savings_build_info{%(scope)s}, instance)", slots(cfg)),
                  multi=True, sort=1, all_value=".*"),
    ]


# --- panel JSON -------------------------------------------------------------

def panel_json(panel: Panel, panel_id: int, x: int, y: int, cells: Values) -> dict[str, Any]:
    """A panel's JSON, its query templates filled with the parameters and selector slots."""
    defaults: dict[str, Any] = {"unit": panel.resolved_unit(), "color": {"mode": "palette-classic"}}
    if panel.decimals is not None:
        defaults["decimals"] = panel.decimals
    defaults.update(panel.extra_defaults)
    options: dict[str, Any]
    instant = panel.kind in ("stat", "bargauge")
    if panel.kind == "stat":
        defaults["color"] = {"mode": "fixed", "fixedColor": "green"}
        options = {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "value", "graphMode": "none", "justifyMode": "auto",
            "orientation": "auto", "textMode": "auto",
        }
    elif panel.kind == "bargauge":
        options = {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "displayMode": "basic", "orientation": "horizontal", "showUnfilled": True,
            "minVizHeight": 10, "minVizWidth": 0, "valueMode": "color",
        }
    else:
        defaults["custom"] = {
            "drawStyle": "line", "lineWidth": 1, "fillOpacity": 10, "showPoints": "never",
            "spanNulls": False, "axisPlacement": "auto",
            "stacking": {"mode": "normal" if panel.stack else "none", "group": "A"},
        }
        options = {
            "legend": {"displayMode": "table", "placement": "bottom", "showLegend": True,
                       "calcs": ["lastNotNull"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        }
    targets = [
        {
            "refId": chr(ord("A") + i), "datasource": DS, "expr": fill(t.expr, cells),
            "legendFormat": t.legend or "__auto", "instant": instant, "range": not instant,
            "editorMode": "code",
        }
        for i, t in enumerate(panel.targets)
    ]
    return {
        "id": panel_id, "type": panel.kind, "title": panel.title, "description": panel.description,
        "datasource": DS, "gridPos": {"h": panel.h, "w": panel.w, "x": x, "y": y},
        "fieldConfig": {"defaults": defaults, "overrides": []}, "options": options,
        "targets": targets,
    }


def layout(rows: list[Row], cells: Values) -> list[dict[str, Any]]:
    """Each row as a Grafana row panel followed by its panels, top to bottom on the 24-column grid."""
    out: list[dict[str, Any]] = []
    y = 0
    panel_id = 1
    for row in rows:
        out.append({"id": panel_id, "type": "row", "title": row.title, "collapsed": False, "panels": [],
                    "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}})
        panel_id += 1
        y += 1
        for line in row.lines:
            x = 0
            height = 0
            for panel in line:
                if x + panel.w > 24:
                    raise ValueError(f"row overflows 24 columns at {panel.title!r}")
                out.append(panel_json(panel, panel_id, x, y, cells))
                panel_id += 1
                x += panel.w
                height = max(height, panel.h)
            y += height
    return out


PANEL_NAMES = {"stat": "Stat", "timeseries": "Time series", "bargauge": "Bar gauge", "row": "Row"}


def import_header(panels: list[dict[str, Any]]) -> dict[str, Any]:
    """``__inputs`` and ``__requires``: what grafana.com's import asks for and checks.

    The one input is a Prometheus data source, which the import screen asks
    for. The panels read the ``datasource`` variable (the default Prometheus
    until one is picked), not the input, so the same JSON also works when
    provisioned from a file or the chart's ConfigMaps, where no import runs.
    """
    kinds = sorted({p["type"] for p in panels if p["type"] != "row"})
    return {
        "__inputs": [{
            "name": "DS_PROMETHEUS", "label": "Prometheus", "description": "Prometheus scraping the exporter",
            "type": "datasource", "pluginId": "prometheus", "pluginName": "Prometheus",
        }],
        "__requires": [
            {"type": "grafana", "id": "grafana", "name": "Grafana", "version": GRAFANA_VERSION},
            {"type": "datasource", "id": "prometheus", "name": "Prometheus", "version": "1.0.0"},
            *({"type": "panel", "id": kind, "name": PANEL_NAMES[kind], "version": ""} for kind in kinds),
        ],
    }


def dashboard(cfg: Values, uid: str, title: str, description: str, variables: list[dict[str, Any]],
              rows: list[Row], time_from: str) -> dict[str, Any]:
    panels = layout(rows, slots(cfg))
    return {
        **import_header(panels),
        "uid": uid,
        "title": title,
        "description": description,
        "tags": [cfg["dashboardTag"]],
        "timezone": cfg["dashboardTimezone"],
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "editable": True,
        "graphTooltip": 1,
        "liveNow": False,
        "refresh": cfg["dashboardRefresh"],
        "time": {"from": time_from, "to": "now"},
        "timepicker": {},
        "fiscalYearStartMonth": 0,
        "weekStart": "",
        "annotations": {"list": [{
            "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True,
            "hide": True, "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts",
            "type": "dashboard",
        }]},
        "links": [{
            "asDropdown": False, "icon": "external link", "includeVars": True, "keepTime": True,
            "tags": [cfg["dashboardTag"]], "targetBlank": False, "title": "LLM savings", "type": "dashboards",
        }],
        "templating": {"list": variables},
        "panels": panels,
    }
