"""The text of /metrics sample lines: label escaping, value formatting, one family's lines.

Shared by the live render (``render``), the process_* families (``collector``)
and backfill's timestamped OpenMetrics (``replay.steps``). Label texts are
cached per label-value tuple because a scrape writes the same series again and
again; everything else is plain string work, kept here so ``render`` holds only
what decides which series exist and what they sum to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache

from exporter import catalog
from exporter.engine.aggregate import UNKNOWN_MONTH

Labels = tuple[str, ...]


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


escape_once = lru_cache(maxsize=1 << 16)(escape)  # months, models, versions recur in thousands of series


def format_value(value: float | int) -> str:
    if type(value) is int:
        return str(value)
    if value - value == 0:  # finite (inf - inf and NaN - NaN are NaN): the common case first
        return repr(float(value))
    if value != value:  # NaN
        return "NaN"
    return "+Inf" if value > 0 else "-Inf"


class LabelText:
    """``{name="value",...}`` per label-value tuple, for every family with these label names.

    Families that share label names (requests and output tokens; spend and the
    cache dollars...) share the cache, so each series' text is built once, and a
    value is escaped once however many series carry it.
    """

    def __init__(self, names: Labels) -> None:
        self.template = "{{" + ",".join(f'{n}="{{}}"' for n in names) + "}}" if names else ""  # str.format
        self.texts: dict[Labels, str] = {}

    def __call__(self, values: Labels) -> str:
        text = self.texts.get(values)
        return self.make(values) if text is None else text

    def make(self, values: Labels) -> str:
        """Build and keep the text of a tuple not cached yet (the render's miss path: no second lookup)."""
        text = self.texts[values] = self.template.format(*map(escape_once, values))
        return text


class Family:
    """One metric's series: label text cached per series, values looked up per scrape."""

    def __init__(self, spec: catalog.MetricSpec, label_text: LabelText) -> None:
        self.spec = spec
        self.labels_of = label_text
        # the text format 0.0.4 has no info type: a gauge there, as prometheus_client writes it
        text_type = "gauge" if spec.type == "info" else spec.type
        self.text_header = f"# HELP {spec.name} {spec.help}\n# TYPE {spec.name} {text_type}\n"
        self.om_header = f"# HELP {spec.family_name} {spec.help}\n# TYPE {spec.family_name} {spec.type}\n"
        self.has_month = bool(spec.labels) and spec.labels[0] == catalog.MONTH

    def render(self, series: Iterable[tuple[Labels, float | int]], out: list[str], openmetrics: bool,
               month_start: Callable[[str], float]) -> None:
        spec = self.spec
        out.append(self.om_header if openmetrics else self.text_header)
        name = spec.name
        make = self.labels_of.make
        get = self.labels_of.texts.get  # read straight: a cold render misses once per series, a steady one never
        # ("" is a label-less family's text: falsy, so remade each time, which costs nothing)
        # an int's text inline (format_value's answer for it), one call for the rest
        if not (openmetrics and spec.type == "counter" and self.has_month):
            fmt = format_value
            out.extend([f"{name}{get(values) or make(values)} {str(value) if type(value) is int else fmt(value)}\n"
                        for values, value in series])
            return
        created = spec.family_name + "_created"
        created_text: dict[str, str] = {}  # month -> its _created value's text: a few months, thousands of series
        for values, value in series:
            labels = get(values) or make(values)
            month = values[0]
            out.append(f"{name}{labels} {format_value(value)}\n")
            if month != UNKNOWN_MONTH:
                start = created_text.get(month)
                if start is None:
                    start = created_text[month] = format_value(month_start(month))
                out.append(f"{created}{labels} {start}\n")


__all__ = ["Family", "LabelText", "escape", "escape_once", "format_value"]
