"""Month-to-date aggregates: integer token sums per cell, dollars derived.

Dollars are never accumulated as floats record by record. Each cell holds
integer token sums under the exact rates it was counted with (an id into the
``rate_book`` of frozen ``PricedModel`` entries), and a dollar figure is
``tokens x rate`` computed when it is read. That makes the totals exact,
independent of record order, and immune to repricing: a new price table adds
new rate-book entries, it never changes the old ones.

Cell layout and keys: ``exporter.engine.cells`` (a cell also holds the baseline
and sent input tokens of its populations: saved % and the compression ratio).
Beside the cells: saving components (under their cell's rate id, for dollars by
component) and the optimizer's own model usage (net savings), integer tables too.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from exporter.engine.cells import (
    CACHE_READ,
    CELL_WIDTH,
    FRESH,
    LEGACY_CELL_WIDTH,
    LEGACY_SAVED,
    OPT_REQUESTS,
    OPTIMIZER_WIDTH,
    OUTPUT,
    POPULATIONS,
    REQUESTS,
    SAVED,
    TIER_JUMP,
    UNKNOWN_MONTH,
    UNPRICED,
    WOULD_SAVE,
    WRITE_1H,
    WRITE_5M,
    CellKey,
    ComponentKey,
    Dollars,
    OptimizerKey,
    cell_dollars,
    exact_cell_dollars,
    exact_optimizer_spend,
    exact_saved_usd,
    exact_tier_jump,
    populations,
)
from exporter.engine.gateway import GatewaySavings
from exporter.prices.table import PricedModel

__all__ = [
    "CACHE_READ", "CELL_WIDTH", "FRESH", "OUTPUT", "REQUESTS", "SAVED", "UNKNOWN_MONTH", "UNPRICED", "WOULD_SAVE",
    "WRITE_1H", "WRITE_5M", "Aggregates", "CellKey", "ComponentKey", "Dollars", "OptimizerKey", "cell_dollars",
]

_PROVENANCE_FIELDS = ("tier", "service_tier", "window")  # which v2 prices made the rates (prices.tiers)
_CLIFF_FIELDS = ("cliff_saved", "cliff_would")
_RATE_FIELDS = ("version", "model", "family", "input", "output", "cache_read", "cache_write_5m", "cache_write_1h")


def _ratio(numerator: int, denominator: int) -> float | None:
    """An exact ratio of integer sums as the nearest float; None (JSON null) when there is nothing to divide by."""
    return numerator / denominator if denominator else None


class Aggregates:
    """Everything the counters show, keyed by month; plain data, no metrics objects."""

    def __init__(self) -> None:
        self.cells: dict[CellKey, list[int]] = {}
        self.components: dict[ComponentKey, int] = {}
        self.optimizer: dict[OptimizerKey, list[int]] = {}  # -> OPT_* sums of the optimizer's own calls
        self.optimizer_unpriced: dict[tuple[str, str, str], int] = {}  # (month, model, reason)
        self.unpriced: dict[tuple[str, str, str], int] = {}
        self.divergence: dict[tuple[str, str, str, str], list[int]] = {}  # -> [counted, provider]
        self.duplicates: dict[str, int] = {}
        self.rejected: dict[tuple[str, str], int] = {}
        self.flagged: dict[tuple[str, str], int] = {}
        self.gateway = GatewaySavings()  # response-cache hits and routing (engine.gateway)
        self.rate_book: list[PricedModel] = []
        self._rate_ids: dict[PricedModel, int] = {}
        self.newest_ts = 0.0
        self.dirty_all = True  # the renderer must rebuild everything (restore, dropped months)

    def rate_id(self, rates: PricedModel) -> int:
        found = self._rate_ids.get(rates)
        if found is None:
            found = self._rate_ids[rates] = len(self.rate_book)
            self.rate_book.append(rates)
        return found

    def cell(self, key: CellKey) -> list[int]:
        found = self.cells.get(key)
        if found is None:
            found = self.cells[key] = [0] * CELL_WIDTH
        return found

    def optimizer_cell(self, key: OptimizerKey) -> list[int]:
        found = self.optimizer.get(key)
        if found is None:
            found = self.optimizer[key] = [0] * OPTIMIZER_WIDTH
        return found

    def count(self, table: dict[Any, int], key: Any, amount: int = 1) -> None:
        table[key] = table.get(key, 0) + amount

    def months(self) -> list[str]:
        found = {key.month for key in self.cells}
        found.update(self.duplicates)
        found.update(key[0] for key in self.rejected)  # every other table's key starts with its month
        found.update(self.gateway.months())  # a month may hold hits only
        return sorted(found)

    def drop_months_before(self, oldest_kept: str) -> int:
        """Forget whole months older than ``oldest_kept`` ("YYYY-MM"); returns how many went."""
        before = set(self.months())

        def keep(month: str) -> bool:
            return month == UNKNOWN_MONTH or month >= oldest_kept

        self.cells = {k: v for k, v in self.cells.items() if keep(k.month)}
        self.components = {k: v for k, v in self.components.items() if keep(k.month)}
        self.optimizer = {k: v for k, v in self.optimizer.items() if keep(k.month)}
        self.optimizer_unpriced = {k: v for k, v in self.optimizer_unpriced.items() if keep(k[0])}
        self.unpriced = {k: v for k, v in self.unpriced.items() if keep(k[0])}
        self.divergence = {k: v for k, v in self.divergence.items() if keep(k[0])}
        self.duplicates = {k: v for k, v in self.duplicates.items() if keep(k)}
        self.rejected = {k: v for k, v in self.rejected.items() if keep(k[0])}
        self.flagged = {k: v for k, v in self.flagged.items() if keep(k[0])}
        self.gateway.keep(keep)
        self.dirty_all = True
        return len(before - set(self.months()))

    def add(self, other: Aggregates) -> None:
        """Add ``other``'s counts to these (parallel replay of disjoint parts of the input).

        Sums are integers, so adding parts gives exactly the counts of one pass over
        the whole when the parts were counted independently (no id in two parts,
        no label cap reached: ``replay_parallel`` checks both). Rate ids are
        renumbered into this rate book.
        """
        rate_ids = [self.rate_id(rates) for rates in other.rate_book]

        def renumbered(rate_id: int) -> int:
            return rate_ids[rate_id] if rate_id != UNPRICED else UNPRICED

        for key, cell in other.cells.items():
            _add_into(self.cell(key._replace(rate_id=renumbered(key.rate_id))), cell)
        for opt_key, opt_cell in other.optimizer.items():
            _add_into(self.optimizer_cell(opt_key._replace(rate_id=renumbered(opt_key.rate_id))), opt_cell)
        for div_key, pair in other.divergence.items():
            _add_into(self.divergence.setdefault(div_key, [0, 0]), pair)
        for comp_key, tokens in other.components.items():
            self.count(self.components, comp_key._replace(rate_id=renumbered(comp_key.rate_id)), tokens)
        tables: tuple[tuple[dict[Any, int], dict[Any, int]], ...] = (
            (self.unpriced, other.unpriced), (self.optimizer_unpriced, other.optimizer_unpriced),
            (self.duplicates, other.duplicates), (self.rejected, other.rejected), (self.flagged, other.flagged))
        for mine_table, theirs in tables:
            for key, value in theirs.items():
                mine_table[key] = mine_table.get(key, 0) + value
        self.gateway.add(other.gateway, renumbered)
        self.newest_ts = max(self.newest_ts, other.newest_ts)
        self.dirty_all = True

    def priced_cells(self) -> Iterator[tuple[CellKey, list[int], PricedModel | None]]:
        for key, cell in self.cells.items():
            yield key, cell, (self.rate_book[key.rate_id] if key.rate_id != UNPRICED else None)

    # --- the replay/summary view (the replay JSON of docs/record-format.md) ----------------------------
    def month_totals(self) -> dict[str, dict[str, Any]]:
        """The same month-to-date totals the counters hold, one dict per month.

        Dollars are summed exactly (``Fraction``s of the integer sums and the table's
        written rates, ``cells.exact_cell_dollars``) and rounded once: each figure is the
        nearest float to the true sum, whatever the order of the records.
        """
        months: dict[str, dict[str, Any]] = {}
        exact: dict[str, dict[str, Fraction]] = {}
        by_component: dict[str, dict[str, list[Any]]] = {}  # month -> component -> [tokens, exact usd]

        def month(name: str) -> dict[str, Any]:
            found = months.get(name)
            if found is None:
                found = months[name] = {
                    "requests": 0, "duplicates": 0, "rejected": 0, "unpriced": 0,
                    "tokens_saved": 0, "usd_saved": 0.0,
                    "would_have_saved_tokens": 0, "would_have_saved_usd": 0.0,
                    "fresh_input_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0,
                    "output_tokens": 0, "spend_usd": 0.0, "cache_savings_usd": 0.0,
                    "cache_hit_rate": 0.0,
                    "baseline_input_tokens": 0, "sent_input_tokens": 0,
                    "saved_pct": None, "compression_ratio": None,
                    "populations": {name: {"baseline_input_tokens": 0, "sent_input_tokens": 0}
                                    for name in POPULATIONS},
                    "optimizer_requests": 0, "optimizer_unpriced": 0,
                    "optimizer_spend_usd": 0.0, "net_usd_saved": 0.0,
                    "tokens_saved_by_component": {}, "usd_saved_by_component": {},
                }
                exact[name] = dict.fromkeys(("usd_saved", "would_have_saved_usd", "spend_usd", "cache_savings_usd",
                                             "optimizer_spend_usd"), Fraction(0))
                by_component[name] = {}
            return found

        for key, cell, rates in self.priced_cells():
            totals = month(key.month)
            totals["requests"] += cell[REQUESTS]
            totals["tokens_saved"] += cell[SAVED]
            totals["would_have_saved_tokens"] += cell[WOULD_SAVE]
            totals["fresh_input_tokens"] += cell[FRESH]
            totals["cache_read_tokens"] += cell[CACHE_READ]
            totals["cache_write_tokens"] += cell[WRITE_5M] + cell[WRITE_1H]
            totals["output_tokens"] += cell[OUTPUT]
            if key.method:
                pops = populations(cell)
                compacted, untouched = totals["populations"]["compacted"], totals["populations"]["untouched"]
                compacted["baseline_input_tokens"] += pops.baseline_compacted
                compacted["sent_input_tokens"] += pops.sent_compacted
                untouched["baseline_input_tokens"] += pops.baseline_untouched
                untouched["sent_input_tokens"] += pops.sent_untouched
            if rates is None:
                totals["unpriced"] += cell[REQUESTS]
                continue
            dollars = exact_cell_dollars(cell, rates, key.method)
            sums = exact[key.month]
            sums["usd_saved"] += dollars.usd_saved
            sums["would_have_saved_usd"] += dollars.would_have_saved
            sums["spend_usd"] += dollars.spend
            sums["cache_savings_usd"] += dollars.cache_net
            if rates.cliff_saved and key.method:  # the jump of a saving across a prompt tier: no tokens
                by_component[key.month].setdefault(TIER_JUMP, [None, Fraction(0)])[1] += exact_tier_jump(
                    cell, rates)
        for comp_key, tokens in self.components.items():
            month(comp_key.month)
            entry = by_component[comp_key.month].setdefault(comp_key.component, [0, Fraction(0)])
            entry[0] = (entry[0] or 0) + tokens
            if comp_key.rate_id != UNPRICED:
                entry[1] += exact_saved_usd(tokens, self.rate_book[comp_key.rate_id], comp_key.method)
        for opt_key, opt_cell in self.optimizer.items():
            month(opt_key.month)["optimizer_requests"] += opt_cell[OPT_REQUESTS]
            if opt_key.rate_id != UNPRICED:
                exact[opt_key.month]["optimizer_spend_usd"] += exact_optimizer_spend(
                    opt_cell, self.rate_book[opt_key.rate_id])
        for (name, _model, _reason), count in self.optimizer_unpriced.items():
            month(name)["optimizer_unpriced"] += count
        for name, count in self.duplicates.items():
            month(name)["duplicates"] += count
        for (name, _reason), count in self.rejected.items():
            month(name)["rejected"] += count
        for name in self.gateway.months():
            month(name)
        self.gateway.month_totals(months, self.rate_book)
        for name, totals in months.items():
            _finish_month(totals, exact[name], by_component[name])
        return dict(sorted(months.items()))

    # --- checkpoint ---------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        """JSON-ready state; restoring it gives back exactly these values."""
        return {
            "cells": [[*key, *cell] for key, cell in self.cells.items()],
            "components": [[*key, value] for key, value in self.components.items()],
            "optimizer": [[*key, *cell] for key, cell in self.optimizer.items()],
            "optimizer_unpriced": [[*key, value] for key, value in self.optimizer_unpriced.items()],
            "unpriced": [[*key, value] for key, value in self.unpriced.items()],
            "divergence": [[*key, *value] for key, value in self.divergence.items()],
            "duplicates": self.duplicates,
            "rejected": [[*key, value] for key, value in self.rejected.items()],
            "flagged": [[*key, value] for key, value in self.flagged.items()],
            "rate_book": [
                {**{f: getattr(r, f) for f in _RATE_FIELDS}, "factors": [list(pair) for pair in r.factors],
                 **{f: getattr(r, f) for f in _PROVENANCE_FIELDS if getattr(r, f)},  # v2 rates only
                 **{f: list(getattr(r, f)) for f in _CLIFF_FIELDS if getattr(r, f)}}
                for r in self.rate_book
            ],
            "newest_ts": self.newest_ts,
            "gateway": self.gateway.to_state(),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Aggregates:
        """Restore ``to_state``'s output, or a checkpoint written before populations, optimizer spend
        and components' rate ids existed: its 8-wide cells count populations from now on (their saving
        so far is ``LEGACY_SAVED``), the optimizer tables start empty, and the components are split
        over their cells' rate ids (``_legacy_components``)."""
        agg = cls()
        for entry in state["rate_book"]:
            fields: dict[str, Any] = {k: (tuple(float(r) for r in v) if k in _CLIFF_FIELDS else v)
                      for k, v in entry.items() if k != "factors"}
            agg.rate_id(PricedModel(**fields, factors=tuple((str(m), float(f)) for m, f in entry["factors"])))
        for row in state["cells"]:
            key = CellKey(str(row[0]), str(row[1]), str(row[2]), str(row[3]), int(row[4]))
            cell = [int(v) for v in row[5:]]
            if len(cell) == LEGACY_CELL_WIDTH:
                cell += [0] * (CELL_WIDTH - LEGACY_CELL_WIDTH)
                cell[LEGACY_SAVED] = cell[SAVED]
            if len(cell) != CELL_WIDTH:
                raise ValueError("checkpoint cell has the wrong width")
            agg.cells[key] = cell
        legacy: list[list[Any]] = []
        for row in state["components"]:
            if len(row) == 6:  # written before components carried their rate id
                legacy.append(row)
            else:
                comp_key = ComponentKey(str(row[0]), str(row[1]), str(row[2]), str(row[3]), str(row[4]), int(row[5]))
                agg.count(agg.components, comp_key, int(row[6]))
        _legacy_components(agg, legacy)
        for row in state.get("optimizer", ()):
            cell = [int(v) for v in row[4:]]
            if len(cell) != OPTIMIZER_WIDTH:
                raise ValueError("checkpoint optimizer cell has the wrong width")
            agg.optimizer[OptimizerKey(str(row[0]), str(row[1]), str(row[2]), int(row[3]))] = cell
        agg.optimizer_unpriced = {(str(row[0]), str(row[1]), str(row[2])): int(row[3])
                                  for row in state.get("optimizer_unpriced", ())}
        agg.unpriced = {tuple(row[:3]): int(row[3]) for row in state["unpriced"]}
        agg.divergence = {tuple(row[:4]): [int(row[4]), int(row[5])] for row in state["divergence"]}
        agg.duplicates = {str(k): int(v) for k, v in state["duplicates"].items()}
        agg.rejected = {(str(row[0]), str(row[1])): int(row[2]) for row in state["rejected"]}
        agg.flagged = {(str(row[0]), str(row[1])): int(row[2]) for row in state["flagged"]}
        agg.newest_ts = float(state.get("newest_ts", 0.0))
        agg.gateway = GatewaySavings.from_state(state.get("gateway"))  # None: written before hits and routing
        return agg


def _add_into(mine: list[int], theirs: list[int]) -> None:
    for index, value in enumerate(theirs):
        mine[index] += value


def _finish_month(totals: dict[str, Any], exact: dict[str, Fraction], by_component: dict[str, list[Any]]) -> None:
    """Round the exact dollars once and derive the ratios of one month's totals."""
    for name, value in exact.items():
        totals[name] = float(value)
    totals["net_usd_saved"] = float(exact["usd_saved"] - exact["optimizer_spend_usd"])
    prompt = totals["fresh_input_tokens"] + totals["cache_read_tokens"] + totals["cache_write_tokens"]
    totals["cache_hit_rate"] = totals["cache_read_tokens"] / prompt if prompt else 0.0
    for pops in totals["populations"].values():
        totals["baseline_input_tokens"] += pops["baseline_input_tokens"]
        totals["sent_input_tokens"] += pops["sent_input_tokens"]
        pops["compression_ratio"] = _ratio(pops["baseline_input_tokens"], pops["sent_input_tokens"])
    compacted = totals["populations"]["compacted"]
    # only compacted records save: their saving is exactly baseline - sent
    compacted["saved_pct"] = _ratio(compacted["baseline_input_tokens"] - compacted["sent_input_tokens"],
                                    compacted["baseline_input_tokens"])
    totals["populations"]["untouched"]["saved_pct"] = 0.0 if totals["populations"]["untouched"][
        "baseline_input_tokens"] else None
    totals["saved_pct"] = _ratio(totals["tokens_saved"], totals["baseline_input_tokens"])
    totals["compression_ratio"] = _ratio(totals["baseline_input_tokens"], totals["sent_input_tokens"])
    for name in sorted(by_component):
        tokens, usd = by_component[name]
        if tokens is not None:  # tier_jump saves dollars, no tokens
            totals["tokens_saved_by_component"][name] = tokens
        totals["usd_saved_by_component"][name] = float(usd)


def _legacy_components(agg: Aggregates, rows: list[list[Any]]) -> None:
    """Give the components of an old checkpoint the rate ids of their cells.

    A label set (month, model, tenant, method) with one rate id gets it exactly.
    Across a price change inside a month the old format did not say which
    component's tokens were saved under which rates: the components fill the
    cells' savings in order (rate ids ascending), so every total stays exact
    (tokens by component, dollars by cell) and only that split is a guess.
    """
    if not rows:
        return
    capacity: dict[tuple[str, str, str, str], list[list[int]]] = {}  # labels -> [[rate_id, saved left]]
    for key in sorted(agg.cells, key=lambda k: k.rate_id):
        if agg.cells[key][SAVED]:
            capacity.setdefault((key.month, key.model, key.tenant, key.method), []).append(
                [key.rate_id, agg.cells[key][SAVED]])
    for row in rows:
        month, model, tenant, method, component = map(str, row[:5])
        left = int(row[5])
        slots = capacity.get((month, model, tenant, method), [])
        for slot in slots:
            if not left:
                break
            share = min(left, slot[1])
            if share:
                agg.count(agg.components, ComponentKey(month, model, tenant, method, component, slot[0]), share)
                slot[1] -= share
                left -= share
        if left or not int(row[5]):  # more than the cells saved (a damaged file), or a zero row: no rates
            agg.count(agg.components, ComponentKey(month, model, tenant, method, component, UNPRICED), left)
