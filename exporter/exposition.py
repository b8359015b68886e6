"""Rendering /metrics from the aggregates, fast, without rebuilding unchanged series.

A scrape must not cost the gateway's pod much CPU even with tens of thousands
of series, so this module writes the exposition text itself instead of
building prometheus_client sample objects on every scrape:

- series that map one-to-one to an aggregate table (tokens saved by component,
  divergence, unpriced, duplicates, rejects, flags) are rendered straight from
  that table, with each series' label text built once and cached;
- series that sum several cells (requests, spend, dollars saved...) are kept
  in per-metric tables updated only for the cells the pipeline marked dirty
  since the last scrape; a dirty series is re-summed exactly from its cells.

Both the Prometheus text format 0.0.4 and OpenMetrics 1.0.0 are produced;
OpenMetrics adds ``_created`` = the month's start for every month series, so a
month never resets inside its own series. Metric names, types, help and label
names all come from ``exporter.catalog``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from exporter import catalog
from exporter.aggregate import (
    CACHE_READ,
    FRESH,
    OUTPUT,
    REQUESTS,
    UNKNOWN_MONTH,
    WOULD_SAVE,
    WRITE_1H,
    WRITE_5M,
    Aggregates,
    CellKey,
    cell_dollars,
)

TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OPENMETRICS_CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"

Labels = tuple[str, ...]
HealthSample = tuple[str, Labels, float]  # (metric name, label values in catalog order, value)


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def format_value(value: float | int) -> str:
    if type(value) is int:
        return str(value)
    if value != value:  # NaN
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


class _Family:
    """One metric's series: label text cached per series, values looked up per scrape."""

    def __init__(self, spec: catalog.MetricSpec) -> None:
        self.spec = spec
        self.label_text: dict[Labels, str] = {}
        header = f"# HELP {{name}} {spec.help}\n# TYPE {{name}} {spec.type}\n"
        self.text_header = header.format(name=spec.name)
        self.om_header = header.format(name=spec.family_name)
        self.has_month = bool(spec.labels) and spec.labels[0] == catalog.MONTH

    def labels_of(self, values: Labels) -> str:
        text = self.label_text.get(values)
        if text is None:
            pairs = ",".join(f'{n}="{escape(v)}"' for n, v in zip(self.spec.labels, values, strict=True))
            text = self.label_text[values] = "{" + pairs + "}" if pairs else ""
        return text

    def render(self, series: Iterable[tuple[Labels, float | int]], out: list[str], openmetrics: bool,
               month_start: Callable[[str], float]) -> None:
        spec = self.spec
        out.append(self.om_header if openmetrics else self.text_header)
        name = spec.name
        created = spec.family_name + "_created"
        for values, value in series:
            labels = self.labels_of(values)
            out.append(f"{name}{labels} {format_value(value)}\n")
            if openmetrics and spec.type == "counter" and self.has_month and values[0] != UNKNOWN_MONTH:
                out.append(f"{created}{labels} {format_value(month_start(values[0]))}\n")


_TIERS = ("fresh", "cache_read", "cache_write_5m", "cache_write_1h")
_TIER_INDEX = (FRESH, CACHE_READ, WRITE_5M, WRITE_1H)


class Exposition:
    """Renders the catalog's families from ``Aggregates`` plus health samples."""

    def __init__(self, month_start: Callable[[str], float]) -> None:
        self.month_start = month_start
        self.families = {spec.name: _Family(spec) for spec in catalog.CATALOG}
        # cell-derived sums: metric -> series labels -> value, and series -> its cells
        self._sums: dict[str, dict[Labels, float | int]] = {}
        self._members: dict[tuple[str, Labels], list[CellKey]] = {}
        self._cell_series: dict[CellKey, list[tuple[str, Labels]]] = {}
        self._dollars: dict[CellKey, dict[str, float]] = {}  # per cell, until the cell changes
        self._aggregates_id = 0

    def reset(self) -> None:
        self._sums.clear()
        self._members.clear()
        self._cell_series.clear()
        self._dollars.clear()

    def _series_of(self, agg: Aggregates, key: CellKey) -> list[tuple[str, Labels]]:
        """The summed series a cell contributes to (fixed for the cell's lifetime)."""
        found = self._cell_series.get(key)
        if found is not None:
            return found
        month, model, tenant, method, rate_id = key
        p = catalog.PREFIX
        series: list[tuple[str, Labels]] = [(p + "requests_total", (month, model, tenant)),
                                            (p + "output_tokens_total", (month, model, tenant))]
        series += [(p + "prompt_tokens_total", (month, model, tenant, tier)) for tier in _TIERS]
        if method:
            series.append((p + "would_have_saved_tokens_total", (month, model, tenant, method)))
        if rate_id >= 0:
            rates = agg.rate_book[rate_id]
            version = rates.version
            _factor, source = rates.factor(method or None)
            for name in ("spend_usd_total", "cache_read_savings_usd_total", "cache_write_premium_usd_total"):
                series.append((p + name, (month, model, tenant, version)))
            if method:
                series.append((p + "usd_saved_total", (month, model, tenant, method, version, source)))
                series.append((p + "would_have_saved_usd_total", (month, model, tenant, method, version, source)))
        for entry in series:
            self._members.setdefault(entry, []).append(key)
        self._cell_series[key] = series
        return series

    def _cell_value(self, agg: Aggregates, metric: str, labels: Labels, key: CellKey) -> float | int:
        cell = agg.cells[key]
        short = metric[len(catalog.PREFIX):]
        if short == "requests_total":
            return cell[REQUESTS]
        if short == "output_tokens_total":
            return cell[OUTPUT]
        if short == "prompt_tokens_total":
            return cell[_TIER_INDEX[_TIERS.index(labels[3])]]
        if short == "would_have_saved_tokens_total":
            return cell[WOULD_SAVE]
        by_metric = self._dollars.get(key)
        if by_metric is None:  # one cell_dollars per changed cell, not one per dollar series
            dollars = cell_dollars(cell, agg.rate_book[key[4]], key[3])
            by_metric = self._dollars[key] = {
                "spend_usd_total": dollars.spend,
                "cache_read_savings_usd_total": dollars.cache_read_savings,
                "cache_write_premium_usd_total": dollars.cache_write_premium,
                "usd_saved_total": dollars.usd_saved,
                "would_have_saved_usd_total": dollars.would_have_saved,
            }
        return by_metric[short]

    def _update_sums(self, agg: Aggregates) -> None:
        if id(agg) != self._aggregates_id or agg.dirty_all:
            self.reset()
            self._aggregates_id = id(agg)
            dirty: Iterable[CellKey] = list(agg.cells)
            agg.dirty_all = False
        else:
            dirty = list(agg.dirty)
        agg.dirty.clear()
        # a dict, not a set: series first appear in cell order, the same in every
        # process (set order of str tuples changes with PYTHONHASHSEED)
        touched: dict[tuple[str, Labels], None] = {}
        for key in dirty:
            self._dollars.pop(key, None)
            if key in agg.cells:
                touched.update(dict.fromkeys(self._series_of(agg, key)))
        for metric, labels in touched:
            members = self._members[(metric, labels)]
            total: float | int = 0
            for key in members:
                total += self._cell_value(agg, metric, labels, key)
            self._sums.setdefault(metric, {})[labels] = total

    def series(
        self, agg: Aggregates, health: Iterable[HealthSample]
    ) -> Iterator[tuple[_Family, Iterable[tuple[Labels, float | int]]]]:
        """Every catalog family with its current series, in catalog order.

        The one view of the numbers: the text renderer and the OTLP push both read it.
        """
        self._update_sums(agg)
        p = catalog.PREFIX
        one_to_one: dict[str, Iterable[tuple[Labels, float | int]]] = {
            p + "tokens_saved_total": (((k[0], k[1], k[2], k[4], k[3]), v) for k, v in agg.components.items()),
            p + "unpriced_requests_total": agg.unpriced.items(),
            p + "divergence_counted_tokens_total": ((k, v[0]) for k, v in agg.divergence.items()),
            p + "divergence_provider_tokens_total": ((k, v[1]) for k, v in agg.divergence.items()),
            p + "duplicates_total": (((k,), v) for k, v in agg.duplicates.items()),
            p + "records_rejected_total": agg.rejected.items(),
            p + "records_flagged_total": agg.flagged.items(),
        }
        health_by_name: dict[str, list[tuple[Labels, float | int]]] = {}
        for name, labels, value in health:
            health_by_name.setdefault(name, []).append((labels, value))
        for name, family in self.families.items():
            if name in one_to_one:
                yield family, one_to_one[name]
            elif name in self._sums:
                yield family, self._sums[name].items()
            else:
                yield family, health_by_name.get(name, ())

    def render(self, agg: Aggregates, health: Iterable[HealthSample], openmetrics: bool = False) -> bytes:
        out: list[str] = []
        for family, series in self.series(agg, health):
            family.render(series, out, openmetrics, self.month_start)
        if openmetrics:
            out.append("# EOF\n")
        return "".join(out).encode("utf-8")


def wants_openmetrics(accept: str | None) -> bool:
    return bool(accept) and "application/openmetrics-text" in (accept or "")


def render_for(accept: str | None, exposition: Exposition, agg: Aggregates,
               health: Iterable[HealthSample]) -> tuple[bytes, str]:
    om = wants_openmetrics(accept)
    return exposition.render(agg, health, om), OPENMETRICS_CONTENT_TYPE if om else TEXT_CONTENT_TYPE


__all__ = ["Exposition", "HealthSample", "render_for", "wants_openmetrics"]

