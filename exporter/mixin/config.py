"""Every parameter of the monitoring mixin, declared once with what it does.

This is the mixin's one config (kubernetes-mixin keeps the same in
``config.libsonnet``): the rules, the alerts and the dashboards read nothing
else. ``scripts/gen_mixin.py --config params.yaml`` overrides any of them; the
Helm chart's ``mixin:`` values carry the same names and defaults (a test
compares them). Names are camelCase so that one name serves the params file,
the chart values and the ``_config`` object of ``mixin/mixin.libsonnet``.

A parameter only ever appears in the output as the text it was given: no
module computes with it. That is what lets the chart ship the generated files
with a token in each parameter's place (``__mixin_<name>__``) and replace the
tokens with its values, and still render exactly what the generator would.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, NamedTuple

from exporter.yamlpos import YamlError, load_located

Kind = Literal["selector", "label", "url", "uid", "text", "duration", "number"]

DURATION = re.compile(r"^(?:[0-9]+(?:ms|s|m|h|d|w|y))+$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
# A URL that is safe inside a double-quoted YAML string and a JSON string as is.
URL = re.compile(r"^https?://[^\s\"'\\#]+$")
UID = re.compile(r"^[a-zA-Z0-9_-]{1,40}$")
# One or more label matchers, as they go between the braces of a selector.
SELECTOR = re.compile(r'^[a-zA-Z_][a-zA-Z0-9_]*(?:=~|!~|!=|=)"(?:[^"\\\n]|\\.)*"'
                      r'(?:\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*(?:=~|!~|!=|=)"(?:[^"\\\n]|\\.)*")*$')
TEXT = re.compile(r"^[^\"\\\n]{1,60}$")


class MixinConfigError(YamlError):
    """A refused params file; the message names file, line, key and value."""


class Param(NamedTuple):
    """One parameter: its name, default, kind (how it is validated) and what it does."""

    name: str
    default: str | int | float
    kind: Kind
    help: str


PARAMS: tuple[Param, ...] = (
    # --- what is scraped, and where ---
    Param("jobSelector", 'job=~".*llm-savings-exporter.*"', "selector",
          "Label matchers selecting the exporter's series in every rule, alert and dashboard variable. "
          "The default covers a plain job `llm-savings-exporter` and the `<release>-llm-savings-exporter` "
          "job a ServiceMonitor or PodMonitor produces."),
    Param("clusterLabel", "cluster", "label",
          "Label telling clusters apart (Thanos, Mimir, federation): kept by every aggregation of the "
          "rules and offered as the dashboards' cluster variable."),
    Param("namespaceLabel", "namespace", "label",
          "Label of the Kubernetes namespace: the dashboards' namespace variable."),
    Param("runbookBaseUrl",
          "https://github.com/llm-savings-exporter/llm-savings-exporter/blob/main/docs/runbook.md", "url",
          "Each alert's runbook_url is this URL plus `#` and the alert's name in lower case "
          "(the section anchors of docs/runbook.md)."),
    # --- dashboards ---
    Param("overviewDashboardUid", "llm-savings-overview", "uid", "UID of the Savings overview dashboard."),
    Param("provenanceDashboardUid", "llm-savings-provenance", "uid", "UID of the Provenance dashboard."),
    Param("healthDashboardUid", "llm-savings-health", "uid", "UID of the Exporter health dashboard."),
    Param("dashboardTag", "llm-savings", "text",
          "Tag of every dashboard; their links menu lists the dashboards with this tag."),
    Param("dashboardTimezone", "utc", "text", "Time zone of the dashboards (utc, browser or an IANA name)."),
    Param("dashboardRefresh", "1m", "duration", "Auto-refresh interval of the dashboards."),
    # --- alerts: `for` durations and thresholds ---
    Param("exporterDownFor", "5m", "duration", "LlmSavingsExporterDown: how long a target may fail its scrapes."),
    Param("exporterAbsentFor", "15m", "duration", "LlmSavingsExporterAbsent: how long no target may exist."),
    Param("recordsRejectedPercent", 1, "number",
          "LlmSavingsRecordsRejected: percentage of the records read over 15 minutes that may be rejected."),
    Param("recordsRejectedFor", "15m", "duration", "LlmSavingsRecordsRejected: how long the share may stay above."),
    Param("unpricedModelFor", "15m", "duration", "LlmSavingsUnpricedModel: how long unpriced requests may arrive."),
    Param("unknownServiceTierFor", "15m", "duration",
          "LlmSavingsUnknownServiceTier: how long records of a service tier the price table does not list may "
          "arrive."),
    Param("priceTableStaleDays", 90, "number",
          "LlmSavingsPriceTableStale: age in days of the newest price version before the alert."),
    Param("priceTableStaleFor", "1h", "duration", "LlmSavingsPriceTableStale: how long the table may stay that old."),
    Param("priceTableReloadFailedFor", "5m", "duration",
          "LlmSavingsPriceTableReloadFailed: how long a refused reload may stay in the last 15 minutes."),
    Param("estimatorDivergencePercent", 25, "number",
          "LlmSavingsEstimatorDivergence: how far, in percent, provider / counted tokens of compacted "
          "requests may be from 1 while dollars use the default factor."),
    Param("estimatorDivergenceFor", "1h", "duration", "LlmSavingsEstimatorDivergence: how long it may last."),
    Param("compactedVsUntouchedPercent", 15, "number",
          "LlmSavingsEstimatorDivergenceCompactedVsUntouched: how far, in percent, the divergence of "
          "compacted requests may be from that of untouched ones."),
    Param("compactedVsUntouchedFor", "1h", "duration",
          "LlmSavingsEstimatorDivergenceCompactedVsUntouched: how long it may last."),
    Param("sourceDownFor", "5m", "duration", "LlmSavingsSourceDown: how long a source may report an error."),
    Param("ingestLagMiB", 64, "number", "LlmSavingsIngestLag: MiB written and not yet read on one source."),
    Param("ingestLagFor", "15m", "duration", "LlmSavingsIngestLag: how long the backlog may last."),
    Param("ingestStalledMinutes", 10, "number",
          "LlmSavingsIngestStalled: minutes without a record while bytes are waiting."),
    Param("ingestStalledFor", "10m", "duration", "LlmSavingsIngestStalled: how long it may last."),
    Param("checkpointFailingFor", "10m", "duration",
          "LlmSavingsCheckpointFailing: how long failed checkpoint writes may keep appearing."),
    Param("checkpointStaleMinutes", 15, "number",
          "LlmSavingsCheckpointStale: age in minutes of the last committed checkpoint."),
    Param("checkpointStaleFor", "5m", "duration", "LlmSavingsCheckpointStale: how long it may stay that old."),
    Param("logBytesLostFor", "5m", "duration", "LlmSavingsLogBytesLost: how long a loss in the last hour is held."),
    Param("labelOverflowFor", "15m", "duration",
          "LlmSavingsLabelOverflow: how long values folded into `other` in the last hour are held."),
    Param("otlpCorrelationEvictedFor", "15m", "duration",
          "LlmSavingsOtlpCorrelationEvicted: how long correlation entries forgotten early in the last 15m are "
          "held."),
    Param("responseCacheHitRateDropFraction", 0.5, "number",
          "LlmSavingsResponseCacheHitRateDrop: fires when the response-cache hit rate over 1h is below this "
          "fraction of its rate over the day before."),
    Param("responseCacheMinRequests", 100, "number",
          "LlmSavingsResponseCacheHitRateDrop: requests (hits + provider calls) of a model in the hour "
          "below which it does not fire."),
    Param("responseCacheHitRateDropFor", "30m", "duration",
          "LlmSavingsResponseCacheHitRateDrop: how long the drop may last."),
    Param("promptCacheHitRateDropFraction", 0.5, "number",
          "LlmSavingsPromptCacheHitRateDrop: fires when the cache_read share of prompt tokens over 1h is below "
          "this fraction of its share over the day before."),
    Param("promptCacheMinPromptTokens", 100000, "number",
          "LlmSavingsPromptCacheHitRateDrop: prompt tokens of a model in the hour below which it does not fire."),
    Param("promptCacheHitRateDropFor", "30m", "duration",
          "LlmSavingsPromptCacheHitRateDrop: how long the drop may last."),
)
BY_NAME: dict[str, Param] = {param.name: param for param in PARAMS}

# What the rules, alerts and dashboards are given: each parameter as its text.
Values = Mapping[str, str]


def as_text(value: str | int | float) -> str:
    """How a parameter value is written into PromQL, YAML and JSON (``1``, ``0.5``, ``5m``)."""
    if isinstance(value, bool):
        raise TypeError("a boolean is not a parameter value")
    return value if isinstance(value, str) else repr(value)


def defaults() -> dict[str, str | int | float]:
    return {param.name: param.default for param in PARAMS}


def values(overrides: Mapping[str, str | int | float] | None = None) -> Values:
    """The text of every parameter: defaults, then ``overrides`` (already validated)."""
    merged = defaults() | dict(overrides or {})
    return {name: as_text(value) for name, value in merged.items()}


def placeholders() -> Values:
    """Every parameter as the token the chart replaces with its value: ``__mixin_<name>__``."""
    return {param.name: token(param.name) for param in PARAMS}


def token(name: str) -> str:
    return f"__mixin_{name}__"


def problem(param: Param, value: object) -> str | None:
    """Why ``value`` cannot be ``param``'s value, or None."""
    if param.kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value < 0:
            return "must be a number >= 0"
        return None
    if not isinstance(value, str):
        return "must be a string"
    pattern = {"selector": SELECTOR, "label": LABEL_NAME, "url": URL, "uid": UID, "text": TEXT,
               "duration": DURATION}[param.kind]
    if not pattern.match(value):
        explain = {
            "selector": 'label matchers such as job="savings" or job=~"a|b", comma-separated',
            "label": "a Prometheus label name",
            "url": "an http(s) URL without quotes, backslashes, spaces or '#'",
            "uid": "1-40 characters of letters, digits, '-' and '_'",
            "text": "1-60 characters without quotes, backslashes or newlines",
            "duration": "a Prometheus duration such as 30s, 5m or 1h30m",
        }[param.kind]
        return f"must be {explain}"
    return None


def load(path: Path) -> dict[str, str | int | float]:
    """A params file: a mapping of parameter names to values; anything else is refused with its line."""
    located = load_located(path.read_text(encoding="utf-8"), str(path))
    data = located.data if located.data is not None else {}
    if not isinstance(data, dict):
        raise MixinConfigError(f"{path}:1: (top level): must be a mapping of parameter names to values")
    found: dict[str, str | int | float] = {}
    for name, value in data.items():
        param = BY_NAME.get(name)
        if param is None:
            raise MixinConfigError(str(located.error((name,), f"unknown parameter (known: {', '.join(BY_NAME)})")))
        why = problem(param, value)
        if why is not None:
            raise MixinConfigError(str(located.error((name,), f"{value!r} {why}")))
        found[name] = value
    return found
