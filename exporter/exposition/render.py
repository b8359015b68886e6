"""Rendering /metrics from the aggregates, fast, without rebuilding unchanged series.

A scrape must not cost the gateway's pod much CPU even with tens of thousands
of series, so this module writes the exposition text itself instead of
building prometheus_client sample objects on every scrape:

- series that map one-to-one to an aggregate table (divergence, unpriced,
  duplicates, rejects, flags) are rendered straight from that table, with each
  series' label text built once and cached; components and the optimizer's
  spend are summed from their tables (``breakdowns``);
- series that sum several cells (requests, spend, dollars saved...) are kept
  in per-metric tables updated only for the cells that changed since the last
  scrape; such a series is re-summed exactly from its cells.

Both the Prometheus text format 0.0.4 and OpenMetrics 1.0.0 are produced;
OpenMetrics adds ``_created`` = the month's start for every month series, so a
month never resets inside its own series. Metric names, types, help and label
names all come from ``exporter.catalog``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from exporter import catalog
from exporter.engine.aggregate import (
    CACHE_READ,
    FRESH,
    OUTPUT,
    REQUESTS,
    WOULD_SAVE,
    WRITE_1H,
    WRITE_5M,
    Aggregates,
    CellKey,
    ComponentKey,
    OptimizerKey,
    cell_dollars,
)
from exporter.engine.cells import TIER_JUMP, populations, tier_jump
from exporter.engine.gateway import GatewaySavings
from exporter.exposition import breakdowns, gateway_series
from exporter.exposition.lines import Family, LabelText
from exporter.prices.table import PricedModel

TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OPENMETRICS_CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"

Labels = tuple[str, ...]


@dataclass
class Frame:
    """A copy of what one render reads from ``Aggregates`` (see ``Exposition.take``)."""

    reset: bool  # the aggregates were replaced or restored: rebuild everything
    dirty: list[tuple[CellKey, list[int]]]  # cells changed since the last frame, copied, in cell order
    rate_book: list[PricedModel]
    components: dict[ComponentKey, int]
    optimizer: dict[OptimizerKey, tuple[int, ...]]
    optimizer_unpriced: dict[tuple[str, str, str], int]
    unpriced: dict[tuple[str, str, str], int]
    divergence: dict[tuple[str, str, str, str], tuple[int, int]]
    duplicates: dict[str, int]
    rejected: dict[tuple[str, str], int]
    flagged: dict[tuple[str, str], int]
    gateway: GatewaySavings  # response-cache hits and routing, copied


class HealthSample(NamedTuple):
    """One self-metric sample: its catalog entry (never a retyped name), label values in catalog order."""

    metric: catalog.MetricSpec
    labels: Labels
    value: float


class UnknownMetric(ValueError):
    """A sample whose metric is not the catalog's entry of that name, or whose labels do not fit it."""


def check_health_samples(samples: Iterable[HealthSample]) -> None:
    """Refuse a sample the catalog does not declare (never dropped silently from /metrics)."""
    for sample in samples:
        if catalog.BY_NAME.get(sample.metric.name) is not sample.metric:
            raise UnknownMetric(f"self-metric {sample.metric.name!r} is not in exporter.catalog")
        if len(sample.labels) != len(sample.metric.labels):
            raise UnknownMetric(f"self-metric {sample.metric.name}: labels {sample.labels!r} do not match "
                                f"{sample.metric.labels!r}")


# A cell's values, in the order of its value vector (see Exposition._vector): token sums, the
# populations (baseline, sent of compacted, then of untouched), then dollars.
_TOKEN_FIELDS = (REQUESTS, OUTPUT, FRESH, CACHE_READ, WRITE_5M, WRITE_1H, WOULD_SAVE)
_V_REQUESTS, _V_OUTPUT, _V_FRESH, _V_CACHE_READ, _V_WRITE_5M, _V_WRITE_1H, _V_WOULD_SAVE = range(7)
_V_BASE_COMPACTED, _V_SENT_COMPACTED, _V_BASE_UNTOUCHED, _V_SENT_UNTOUCHED = range(7, 11)
_V_SPEND, _V_CACHE_SAVINGS, _V_CACHE_PREMIUM, _V_USD_SAVED, _V_WOULD_SAVE_USD, _V_TIER_JUMP = range(11, 17)

SeriesKey = tuple[str, Labels]  # (metric name, label values)
_REQUESTS, _OUTPUT = catalog.REQUESTS_TOTAL.name, catalog.OUTPUT_TOKENS_TOTAL.name
_PROMPT, _WOULD_SAVE = catalog.PROMPT_TOKENS_TOTAL.name, catalog.WOULD_HAVE_SAVED_TOKENS_TOTAL.name
_SPEND, _CACHE_SAVINGS = catalog.SPEND_USD_TOTAL.name, catalog.CACHE_READ_SAVINGS_USD_TOTAL.name
_CACHE_PREMIUM = catalog.CACHE_WRITE_PREMIUM_USD_TOTAL.name
_USD_SAVED, _WOULD_SAVE_USD = catalog.USD_SAVED_TOTAL.name, catalog.WOULD_HAVE_SAVED_USD_TOTAL.name
_BASELINE, _SENT = catalog.BASELINE_INPUT_TOKENS_TOTAL.name, catalog.SENT_INPUT_TOKENS_TOTAL.name
_PRICED, _PRICED_SPEND = catalog.PRICED_REQUESTS_TOTAL.name, catalog.PRICED_SPEND_USD_TOTAL.name
# the cells' tier jumps: summed like a family, rendered inside component_usd_saved_total (component tier_jump)
_TIER_JUMP = catalog.COMPONENT_USD_SAVED_TOTAL.name + ":tier_jump"


class Exposition:
    """Renders the catalog's families from ``Aggregates`` plus health samples."""

    def __init__(self, month_start: Callable[[str], float]) -> None:
        self.month_start = month_start
        label_texts: dict[Labels, LabelText] = {}
        self.families = {spec.name: Family(spec, label_texts.setdefault(spec.labels, LabelText(spec.labels)))
                         for spec in catalog.CATALOG}
        # cell-derived sums: metric -> series labels -> value; each series' cells and which of their values
        self._sums: dict[str, dict[Labels, float | int]] = {}
        self._members: dict[SeriesKey, list[CellKey]] = {}
        self._value_index: dict[SeriesKey, int] = {}
        self._cell_series: dict[CellKey, list[SeriesKey]] = {}
        self._vectors: dict[CellKey, tuple[float | int, ...]] = {}  # per cell, until the cell changes
        self._seen_cells: dict[CellKey, list[int]] = {}  # each cell as the last render saw it
        self._aggregates_id = 0
        self._rate_book: list[PricedModel] = []

    def reset(self) -> None:
        self._sums.clear()
        self._members.clear()
        self._value_index.clear()
        self._cell_series.clear()
        self._vectors.clear()
        self._seen_cells.clear()

    def _series_of(self, key: CellKey) -> list[SeriesKey]:
        """The summed series a cell contributes to (fixed for the cell's lifetime)."""
        found = self._cell_series.get(key)
        if found is not None:
            return found
        self._new_cell(key)
        return self._cell_series[key]

    def _new_cell(self, key: CellKey) -> list[tuple[SeriesKey, int]]:
        """File a cell not seen before under its series; its series with their value's index, to use at once
        (only the series are kept: each kept pair would be one more object for the collector to track)."""
        month, model, tenant, method, rate_id = key
        base = (month, model, tenant)
        series: list[tuple[SeriesKey, int]] = [
            ((_REQUESTS, base), _V_REQUESTS), ((_OUTPUT, base), _V_OUTPUT),
            ((_PROMPT, (month, model, tenant, "fresh")), _V_FRESH),
            ((_PROMPT, (month, model, tenant, "cache_read")), _V_CACHE_READ),
            ((_PROMPT, (month, model, tenant, "cache_write_5m")), _V_WRITE_5M),
            ((_PROMPT, (month, model, tenant, "cache_write_1h")), _V_WRITE_1H),
        ]
        if method:
            series.append(((_WOULD_SAVE, (month, model, tenant, method)), _V_WOULD_SAVE))
            compacted = (month, model, tenant, method, "compacted")
            untouched = (month, model, tenant, method, "untouched")
            series += [((_BASELINE, compacted), _V_BASE_COMPACTED), ((_SENT, compacted), _V_SENT_COMPACTED),
                       ((_BASELINE, untouched), _V_BASE_UNTOUCHED), ((_SENT, untouched), _V_SENT_UNTOUCHED)]
        if rate_id >= 0:
            rates = self._rate_book[rate_id]
            versioned = (month, model, tenant, rates.version)
            series += [((_SPEND, versioned), _V_SPEND), ((_CACHE_SAVINGS, versioned), _V_CACHE_SAVINGS),
                       ((_CACHE_PREMIUM, versioned), _V_CACHE_PREMIUM)]
            if method:
                _factor, source = rates.factor(method)
                provenance = (month, model, tenant, method, rates.version, source)
                series += [((_USD_SAVED, provenance), _V_USD_SAVED), ((_WOULD_SAVE_USD, provenance), _V_WOULD_SAVE_USD)]
                if rates.cliff_saved:  # a saving across a prompt tier: its jump is a component of its own
                    series.append(((_TIER_JUMP, (month, model, tenant, TIER_JUMP, method, rates.version, source)),
                                   _V_TIER_JUMP))
            if rates.tier or rates.service_tier or rates.window:  # v2 rates only: v1 cells add no series
                priced_by = (month, model, rates.version, rates.tier or "base", rates.service_tier or "default",
                             rates.window or "none")
                series += [((_PRICED, priced_by), _V_REQUESTS), ((_PRICED_SPEND, priced_by), _V_SPEND)]
        members, value_index = self._members, self._value_index
        for entry, index in series:
            found_members = members.get(entry)
            if found_members is None:
                members[entry] = [key]
                value_index[entry] = index
            else:
                found_members.append(key)
        self._cell_series[key] = [entry for entry, _index in series]
        return series

    def _vector(self, key: CellKey) -> tuple[float | int, ...]:
        """All of a cell's series values: one ``cell_dollars`` per changed cell, not one per dollar series."""
        found = self._vectors.get(key)
        if found is None:
            cell = self._seen_cells[key]
            tokens = (*[cell[field] for field in _TOKEN_FIELDS], *populations(cell))
            if key.rate_id < 0:  # unpriced: no dollar series
                found = tokens
            else:
                rates = self._rate_book[key.rate_id]
                d = cell_dollars(cell, rates, key.method)
                found = (*tokens, d.spend, d.cache_read_savings, d.cache_write_premium, d.usd_saved,
                         d.would_have_saved, tier_jump(cell, rates) if rates.cliff_saved else 0.0)
            self._vectors[key] = found
        return found

    def take(self, agg: Aggregates) -> Frame:
        """What a render needs from ``agg``, copied: the only step that reads the aggregates.

        Call it under the pipeline's lock; it is cheap (the cells changed since the
        last frame are copied, the one-to-one tables are shallow-copied), and the
        expensive part (``series_of``, ``render_frame``) then runs outside that lock.
        A changed cell is found by comparing it with the copy kept at the last
        frame (a C-level list compare per cell), so the pipeline's per-record path
        keeps no change set. Frames must be applied in the order they were taken,
        one at a time (the sidecar's render lock).
        """
        reset = id(agg) != self._aggregates_id or agg.dirty_all
        if reset:
            self._aggregates_id = id(agg)
            agg.dirty_all = False
            dirty = [(key, cell.copy()) for key, cell in agg.cells.items()]
        else:
            seen = self._seen_cells
            dirty = [(key, cell.copy()) for key, cell in agg.cells.items() if seen.get(key) != cell]
        return Frame(
            reset=reset,
            dirty=dirty,
            rate_book=list(agg.rate_book),
            components=dict(agg.components),
            optimizer={k: tuple(v) for k, v in agg.optimizer.items()},
            optimizer_unpriced=dict(agg.optimizer_unpriced),
            unpriced=dict(agg.unpriced),
            divergence={k: (v[0], v[1]) for k, v in agg.divergence.items()},
            duplicates=dict(agg.duplicates),
            rejected=dict(agg.rejected),
            flagged=dict(agg.flagged),
            gateway=agg.gateway.copy(),
        )

    def _update_sums(self, frame: Frame) -> None:
        """Re-sum the series of the cells that changed since the last frame."""
        if frame.reset:
            self.reset()
        self._rate_book = frame.rate_book
        seen = self._seen_cells
        for key, cell in frame.dirty:
            seen[key] = cell
        if frame.reset:
            self._sum_all(frame.dirty)
            return
        # a dict, not a set: series first appear in cell order, the same in every
        # process (set order of str tuples changes with PYTHONHASHSEED)
        touched: dict[SeriesKey, None] = {}
        vectors = self._vectors
        for key, _cell in frame.dirty:
            vectors.pop(key, None)
            touched.update(dict.fromkeys(self._series_of(key)))
        sums, members, value_index, vector = self._sums, self._members, self._value_index, self._vector
        for entry in touched:
            index = value_index[entry]
            total: float | int = 0
            for key in members[entry]:  # in cell order: the same float sum every time
                total += vector(key)[index]
            metric, labels = entry
            by_labels = sums.get(metric)
            if by_labels is None:
                by_labels = sums[metric] = {}
            by_labels[labels] = total

    def _sum_all(self, cells: list[tuple[CellKey, list[int]]]) -> None:
        """Every series of a reset frame, summed in one pass over its cells in cell order.

        The same additions, in the same order, as re-summing each series from its
        members (``0 + first + second...``), so the floats are those of a steady
        frame; without the per-series pass over the member lists.
        """
        sums, new_cell, vector = self._sums, self._new_cell, self._vector
        for key, _cell in cells:  # a reset frame: every cell is new to the emptied caches
            values = vector(key)
            for (metric, labels), index in new_cell(key):
                by_labels = sums.get(metric)
                if by_labels is None:
                    by_labels = sums[metric] = {}
                by_labels[labels] = by_labels.get(labels, 0) + values[index]

    def series(
        self, agg: Aggregates, health: Iterable[HealthSample]
    ) -> Iterator[tuple[Family, Iterable[tuple[Labels, float | int]]]]:
        """Every catalog family with its current series, in catalog order (``take`` then ``series_of``)."""
        return self.series_of(self.take(agg), health)

    def series_of(
        self, frame: Frame, health: Iterable[HealthSample]
    ) -> Iterator[tuple[Family, Iterable[tuple[Labels, float | int]]]]:
        """Every catalog family with its series as of ``frame``, in catalog order.

        The one view of the numbers: the text renderer and the OTLP push both read it.
        """
        self._update_sums(frame)
        one_to_one: dict[str, Iterable[tuple[Labels, float | int]]] = {
            catalog.TOKENS_SAVED_TOTAL.name: breakdowns.component_tokens(frame.components).items(),
            catalog.COMPONENT_USD_SAVED_TOTAL.name: breakdowns.add_tier_jumps(breakdowns.component_dollars(
                frame.components, frame.rate_book), self._sums.get(_TIER_JUMP, {})).items(),
            catalog.OPTIMIZER_SPEND_USD_TOTAL.name: breakdowns.optimizer_dollars(
                frame.optimizer, frame.rate_book).items(),
            catalog.OPTIMIZER_TOKENS_TOTAL.name: breakdowns.optimizer_tokens(frame.optimizer).items(),
            catalog.UNPRICED_REQUESTS_TOTAL.name: frame.unpriced.items(),
            catalog.OPTIMIZER_UNPRICED_REQUESTS_TOTAL.name: frame.optimizer_unpriced.items(),
            catalog.DIVERGENCE_COUNTED_TOKENS_TOTAL.name: ((k, v[0]) for k, v in frame.divergence.items()),
            catalog.DIVERGENCE_PROVIDER_TOKENS_TOTAL.name: ((k, v[1]) for k, v in frame.divergence.items()),
            catalog.DUPLICATES_TOTAL.name: (((k,), v) for k, v in frame.duplicates.items()),
            catalog.RECORDS_REJECTED_TOTAL.name: frame.rejected.items(),
            catalog.RECORDS_FLAGGED_TOTAL.name: frame.flagged.items(),
            **gateway_series.gateway_series(frame.gateway, frame.rate_book),
        }
        health_by_name: dict[str, list[tuple[Labels, float | int]]] = {}
        for metric, labels, value in health:
            if self.families.get(metric.name) is None:
                raise UnknownMetric(f"self-metric {metric.name!r} is not in exporter.catalog")
            health_by_name.setdefault(metric.name, []).append((labels, value))
        baseline, sent = self._sums.get(_BASELINE, {}), self._sums.get(_SENT, {})
        # every labelled cell has both populations' series; those still (0, 0) are left out
        counted = [labels for labels, value in baseline.items() if value or sent[labels]]
        one_to_one[_BASELINE] = [(labels, baseline[labels]) for labels in counted]
        one_to_one[_SENT] = [(labels, sent[labels]) for labels in counted]
        for name, family in self.families.items():
            if name in one_to_one:
                yield family, one_to_one[name]
            elif name in self._sums:
                yield family, self._sums[name].items()
            else:
                yield family, health_by_name.get(name, ())

    def render(self, agg: Aggregates, health: Iterable[HealthSample], openmetrics: bool = False) -> bytes:
        return self.render_frame(self.take(agg), health, openmetrics)

    def render_frame(self, frame: Frame, health: Iterable[HealthSample], openmetrics: bool = False) -> bytes:
        """The exposition text as of ``frame``; reads no aggregates, so no pipeline lock is needed."""
        return self.render_series(self.series_of(frame, health), openmetrics)

    def render_series(self, families: Iterable[tuple[Family, Iterable[tuple[Labels, float | int]]]],
                      openmetrics: bool = False, extra: Iterable[str] = ()) -> bytes:
        """The exposition text of ``series_of``'s families, then ``extra`` (families written elsewhere:
        the process_* ones of ``exporter.exposition.collector``), then OpenMetrics' ``# EOF``."""
        out: list[str] = []
        for family, series in families:
            family.render(series, out, openmetrics, self.month_start)
        out.extend(extra)
        if openmetrics:
            out.append("# EOF\n")
        return "".join(out).encode("utf-8")


def wants_openmetrics(accept: str | None) -> bool:
    return bool(accept) and "application/openmetrics-text" in (accept or "")


def render_for(accept: str | None, exposition: Exposition, agg: Aggregates,
               health: Iterable[HealthSample]) -> tuple[bytes, str]:
    om = wants_openmetrics(accept)
    return exposition.render(agg, health, om), OPENMETRICS_CONTENT_TYPE if om else TEXT_CONTENT_TYPE


__all__ = ["Exposition", "Frame", "HealthSample", "UnknownMetric", "check_health_samples", "render_for",
           "wants_openmetrics"]

