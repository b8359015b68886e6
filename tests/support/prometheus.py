"""Shared helpers for the tests of rules/, dashboards/ and the Prometheus end-to-end test.

Two parts:

* a small PromQL lexer that finds the metric names (and the label names of
  their matchers) an expression selects, so tests can check every query
  against the metric catalog and the recording rules. It only needs to tell
  metric names apart from functions, keywords, label names, strings and
  durations; the real parser (promtool) checks the syntax separately.
* process helpers for the end-to-end test: free ports, polling with a
  deadline, Grafana variable substitution.
"""

from __future__ import annotations

import json
import re
import socket
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from exporter.catalog import BY_NAME as CATALOG_BY_NAME

ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = ROOT / "rules"
DASHBOARDS_DIR = ROOT / "dashboards"

# Labels Prometheus attaches to every scraped series (`pod` and `namespace` under Kubernetes,
# `cluster` as the external label of a multi-cluster setup; the mixin's default label names).
TARGET_LABELS = frozenset({"job", "instance", "pod", "namespace", "cluster"})
# Series Prometheus makes itself; allowed in queries besides the catalog.
PROMETHEUS_SERIES: dict[str, frozenset[str]] = {"up": TARGET_LABELS}

KEYWORDS = frozenset(
    {
        "and",
        "or",
        "unless",
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "bool",
        "offset",
        "inf",
        "nan",
        "atan2",
    }
)
# Aggregation operators may be followed by `by (...)`/`without (...)` before their `(`.
AGGREGATORS = frozenset(
    {
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
        "limit_ratio",
    }
)
# Keywords followed by a parenthesised list of label names, not an expression.
GROUPING = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})

_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(
    r"0[xX][0-9a-fA-F]+|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?:(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*)?"
)
_MATCH_OP = re.compile(r"=~|!~|!=|=")


class PromQLLexError(ValueError):
    pass


@dataclass
class Selector:
    """A vector selector: metric name (None for a `{__name__=~...}` regex) and matcher labels."""

    metric: str | None
    labels: list[str] = field(default_factory=list)


@dataclass
class Analysis:
    selectors: list[Selector]
    grouping_labels: list[str]

    @property
    def metrics(self) -> list[str]:
        return [s.metric for s in self.selectors if s.metric is not None]


def _skip_string(expr: str, i: int) -> int:
    """Index just past the string literal starting at ``expr[i]``."""
    quote = expr[i]
    j = i + 1
    while j < len(expr):
        ch = expr[j]
        if ch == "\\" and quote != "`":
            j += 2
            continue
        if ch == quote:
            return j + 1
        j += 1
    raise PromQLLexError(f"unterminated string at {i}: {expr[i : i + 30]!r}")


def _skip_space(expr: str, i: int) -> int:
    while i < len(expr):
        if expr[i].isspace():
            i += 1
        elif expr[i] == "#":
            while i < len(expr) and expr[i] != "\n":
                i += 1
        else:
            break
    return i


def _read_string_value(expr: str, i: int) -> tuple[str, int]:
    end = _skip_string(expr, i)
    raw = expr[i + 1 : end - 1]
    if expr[i] == "`":
        return raw, end
    return re.sub(r"\\(.)", r"\1", raw), end  # enough for names; promtool checks the syntax


def _matchers(expr: str, i: int) -> tuple[list[tuple[str, str, str]], int]:
    """Parse `{l op "v", ...}` starting at the `{`; returns (matchers, index past `}`)."""
    assert expr[i] == "{"
    i += 1
    found: list[tuple[str, str, str]] = []
    while True:
        i = _skip_space(expr, i)
        if i < len(expr) and expr[i] == "}":
            return found, i + 1
        m = _LABEL.match(expr, i)
        if not m:
            raise PromQLLexError(f"label name expected at {i}: {expr[i : i + 30]!r}")
        name = m.group(0)
        i = _skip_space(expr, m.end())
        op = _MATCH_OP.match(expr, i)
        if not op:
            raise PromQLLexError(f"matcher operator expected at {i}: {expr[i : i + 30]!r}")
        i = _skip_space(expr, op.end())
        if i >= len(expr) or expr[i] not in "\"'`":
            raise PromQLLexError(f"string expected at {i}: {expr[i : i + 30]!r}")
        value, i = _read_string_value(expr, i)
        found.append((name, op.group(0), value))
        i = _skip_space(expr, i)
        if i < len(expr) and expr[i] == ",":
            i += 1
        elif i < len(expr) and expr[i] == "}":
            continue
        else:
            raise PromQLLexError(f"',' or '}}' expected at {i}: {expr[i : i + 30]!r}")


def analyse(expr: str) -> Analysis:
    """Metric selectors and grouping labels of a PromQL expression.

    An identifier is a metric name unless it is a keyword, a function or
    aggregation (followed by `(`), or a label name (inside `{}` or a
    by/without/on/ignoring/group_x list). Strings, numbers, durations and
    `[...]` ranges (which may hold Grafana variables) are skipped.
    """
    selectors: list[Selector] = []
    grouping: list[str] = []
    i = 0
    n = len(expr)
    while True:
        i = _skip_space(expr, i)
        if i >= n:
            break
        ch = expr[i]
        if ch in "\"'`":
            i = _skip_string(expr, i)
        elif ch == "[":
            close = expr.find("]", i)
            if close < 0:
                raise PromQLLexError(f"unterminated range at {i}")
            i = close + 1
        elif ch == "{":
            matchers, i = _matchers(expr, i)
            names = [m[2] for m in matchers if m[0] == "__name__" and m[1] == "="]
            selectors.append(
                Selector(
                    names[0] if names else None, [m[0] for m in matchers if m[0] != "__name__"]
                )
            )
        elif ch.isdigit() or (ch == "." and i + 1 < n and expr[i + 1].isdigit()):
            m = _NUMBER.match(expr, i)
            assert m is not None
            i = m.end()
        elif _IDENT.match(expr, i):
            m = _IDENT.match(expr, i)
            assert m is not None
            word = m.group(0)
            i = m.end()
            j = _skip_space(expr, i)
            lowered = word.lower()
            if lowered in GROUPING:
                if j < n and expr[j] == "(":
                    close = expr.find(")", j)
                    if close < 0:
                        raise PromQLLexError(f"unterminated label list at {j}")
                    grouping.extend(x.strip() for x in expr[j + 1 : close].split(",") if x.strip())
                    i = close + 1
            elif lowered in KEYWORDS or lowered in AGGREGATORS:
                pass
            elif j < n and expr[j] == "(":
                pass  # function or aggregation
            else:
                selector = Selector(word)
                if j < n and expr[j] == "{":
                    matchers, i = _matchers(expr, j)
                    selector.labels = [m[0] for m in matchers]
                selectors.append(selector)
        elif ch == "$":
            # A Grafana variable outside a string or range: skip its name.
            m = re.compile(r"\$\{[^}]*\}|\$[A-Za-z0-9_]+").match(expr, i)
            i = m.end() if m else i + 1
        else:
            i += 1  # operators, parentheses, commas, `@`
    return Analysis(selectors, grouping)


# --- what rules/ and dashboards/ contain --------------------------------------


def load_rule_files() -> dict[str, Any]:
    return {
        p.name: yaml.safe_load(p.read_text(encoding="utf-8"))
        for p in sorted(RULES_DIR.glob("*.yaml"))
    }


def all_rules() -> list[dict[str, Any]]:
    return [
        rule
        for doc in load_rule_files().values()
        for group in doc["groups"]
        for rule in group["rules"]
    ]


def recording_rule_names() -> set[str]:
    return {rule["record"] for rule in all_rules() if "record" in rule}


def load_dashboards() -> dict[str, dict[str, Any]]:
    return {
        p.name: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(DASHBOARDS_DIR.glob("*.json"))
    }


def dashboard_panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    """The data panels of a dashboard: row panels left out, those inside collapsed rows included."""
    panels: list[dict[str, Any]] = []
    for panel in board["panels"]:
        if panel["type"] != "row":
            panels.append(panel)
        panels.extend(panel.get("panels", []))  # collapsed rows
    return panels


def dashboard_exprs(board: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, expr) of every panel target."""
    return [(p["title"], t["expr"]) for p in dashboard_panels(board) for t in p.get("targets", [])]


_LABEL_VALUES = re.compile(
    r"^\s*label_values\(\s*(?:(?P<expr>.*?)\s*,\s*)?(?P<label>[A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$",
    re.DOTALL,
)


def variable_queries(board: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    """(variable name, selector expr or None, label) of every label_values variable."""
    out: list[tuple[str, str | None, str]] = []
    for var in board["templating"]["list"]:
        if var["type"] != "query":
            continue
        query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
        m = _LABEL_VALUES.match(query)
        if not m:
            raise AssertionError(f"variable {var['name']}: not a label_values query: {query!r}")
        out.append((var["name"], m.group("expr"), m.group("label")))
    return out


def check_expr_against_catalog(expr: str, records: set[str]) -> list[str]:
    """Problems of one expression: unknown metrics, matcher or grouping labels a metric lacks."""
    problems: list[str] = []
    analysis = analyse(expr)
    known_labels: set[str] = set(TARGET_LABELS)
    only_catalog = True
    for selector in analysis.selectors:
        name = selector.metric
        if name is None:
            problems.append(f"selector without a metric name in {expr!r}")
            continue
        if name in CATALOG_BY_NAME:
            allowed = set(CATALOG_BY_NAME[name].labels) | TARGET_LABELS
        elif name in PROMETHEUS_SERIES:
            allowed = set(PROMETHEUS_SERIES[name])
        elif name in records:
            only_catalog = False
            continue  # a recording rule keeps labels of its own; promtool tests cover them
        else:
            problems.append(f"{name} is neither in exporter/catalog.py nor a recording rule")
            continue
        known_labels |= allowed
        problems.extend(
            f"{name} has no label {label!r}" for label in selector.labels if label not in allowed
        )
    if only_catalog:
        problems.extend(
            f"grouping label {label!r} is on none of the metrics of {expr!r}"
            for label in analysis.grouping_labels
            if label not in known_labels
        )
    return problems


# --- Grafana variable substitution, as Grafana does it for Prometheus -----------


def grafana_regex_value(values: list[str], all_value: str | None, selected_all: bool) -> str:
    """A multi-value variable in `=~"..."`: All -> allValue, else `(a|b)`, regex-escaped."""
    if selected_all and all_value is not None:
        return all_value
    escaped = [re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\\\1", v) for v in values]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"


def substitute(expr: str, variables: dict[str, str], rate_interval: str = "1m") -> str:
    """Replace `$__rate_interval`, `$name` and `${name}` the way Grafana does before querying."""
    out = expr.replace("$__rate_interval", rate_interval).replace(
        "${__rate_interval}", rate_interval
    )
    for name in sorted(variables, key=len, reverse=True):
        out = out.replace("${" + name + "}", variables[name]).replace("$" + name, variables[name])
    if re.search(r"\$[A-Za-z_{]", out):
        raise AssertionError(f"unsubstituted variable in {out!r}")
    return out


# --- processes and HTTP ----------------------------------------------------------

T = TypeVar("T")


def free_port() -> int:
    """An ephemeral port that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Fatal(RuntimeError):
    """Raised inside a poll check to stop waiting at once (a process died)."""


def poll(check: Callable[[], T | None], timeout: float, what: str, interval: float = 0.2) -> T:
    """Call ``check`` until it returns a truthy value or the deadline passes."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            result = check()
            if result:
                return result
        except Fatal:
            raise
        except Exception as exc:  # a server still starting refuses connections
            last_error = exc
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout}s waiting for {what}; last error: {last_error!r}"
            )
        time.sleep(interval)  # pacing between polls, not waiting for an event


def http_get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return bytes(response.read())


def prom_query(base: str, query: str) -> list[dict[str, Any]]:
    """Instant query through Prometheus's HTTP API; returns the result vector."""
    body = json.loads(http_get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": query})))
    if body.get("status") != "success":
        raise AssertionError(f"query failed: {query!r}: {body}")
    result = body["data"]["result"]
    if body["data"]["resultType"] == "scalar":
        return [{"metric": {}, "value": result}]
    return list(result)


def scalar(result: Iterable[dict[str, Any]]) -> float:
    values = [float(r["value"][1]) for r in result]
    if len(values) != 1:
        raise AssertionError(f"expected one sample, got {values}")
    return values[0]
