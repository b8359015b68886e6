"""Month-to-date aggregates: integer token sums per cell, dollars derived.

Dollars are never accumulated as floats record by record. Each cell holds
integer token sums under the exact rates it was counted with (an id into the
``rate_book`` of frozen ``PricedModel`` entries), and a dollar figure is
``tokens x rate`` computed when it is read. That makes the totals exact,
independent of record order, and immune to repricing: a new price table adds
new rate-book entries, it never changes the old ones.

Cell layout (``CellKey`` -> list of ints, indices below):
``(month, model, tenant, method, rate_id)`` with ``rate_id == -1`` for unpriced.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from exporter.prices.table import PER_MILLION, PricedModel

REQUESTS, FRESH, CACHE_READ, WRITE_5M, WRITE_1H, OUTPUT, SAVED, WOULD_SAVE = range(8)
CELL_WIDTH = 8



class CellKey(NamedTuple):
    """Where a record's token sums go: its labels and the id of the rates it was priced with.

    Built once per route (``Pipeline._route``), so naming the fields costs the
    per-record path nothing; ``rate_id`` indexes ``Aggregates.rate_book`` (``UNPRICED`` when none).
    """

    month: str
    model: str
    tenant: str
    method: str
    rate_id: int


class ComponentKey(NamedTuple):
    """The series of one saving component (``tokens_saved_total``)."""

    month: str
    model: str
    tenant: str
    method: str
    component: str


UNPRICED = -1
UNKNOWN_MONTH = "unknown"


class Dollars(NamedTuple):
    """A cell's dollar figures (a named tuple: built for every changed cell at every scrape)."""

    spend: float
    usd_saved: float
    would_have_saved: float
    cache_read_savings: float  # >= 0 parts of the provider's cache effect
    cache_write_premium: float  # >= 0 parts; net = read savings - premium
    factor: float
    factor_source: str

    @property
    def cache_net(self) -> float:
        return self.cache_read_savings - self.cache_write_premium


def cell_dollars(cell: list[int], rates: PricedModel, method: str) -> Dollars:
    """The dollar figures of one cell (docs/prices.md), from its token sums."""
    factor, factor_source = rates.factor(method or None)
    spend = (
        cell[FRESH] * rates.input
        + cell[CACHE_READ] * rates.cache_read
        + cell[WRITE_5M] * rates.cache_write_5m
        + cell[WRITE_1H] * rates.cache_write_1h
        + cell[OUTPUT] * rates.output
    ) / PER_MILLION
    # The provider's cache effect per tier; a tier cheaper than input is a saving,
    # dearer a premium, so both counters only ever grow.
    savings = premium = 0.0
    for effect in (cell[CACHE_READ] * (rates.input - rates.cache_read),
                   cell[WRITE_5M] * (rates.input - rates.cache_write_5m),
                   cell[WRITE_1H] * (rates.input - rates.cache_write_1h)):
        if effect > 0:
            savings += effect
        elif effect < 0:
            premium -= effect
    return Dollars(spend, cell[SAVED] * factor * rates.input / PER_MILLION,
                   cell[WOULD_SAVE] * factor * rates.input / PER_MILLION,
                   savings / PER_MILLION, premium / PER_MILLION, factor, factor_source)


def _by_labels_and_rates(item: tuple[CellKey, list[int], PricedModel | None]) -> tuple[Any, ...]:
    key, _cell, rates = item
    if rates is None:
        return (key.month, key.model, key.tenant, key.method, False)
    return (key.month, key.model, key.tenant, key.method, True, rates.version, rates.model, rates.family,
            rates.input, rates.output, rates.cache_read,
            rates.cache_write_5m, rates.cache_write_1h, rates.factors)


class Aggregates:
    """Everything the counters show, keyed by month; plain data, no metrics objects."""

    def __init__(self) -> None:
        self.cells: dict[CellKey, list[int]] = {}
        self.components: dict[ComponentKey, int] = {}
        self.unpriced: dict[tuple[str, str, str], int] = {}
        self.divergence: dict[tuple[str, str, str, str], list[int]] = {}  # -> [counted, provider]
        self.duplicates: dict[str, int] = {}
        self.rejected: dict[tuple[str, str], int] = {}
        self.flagged: dict[tuple[str, str], int] = {}
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

    def count(self, table: dict[Any, int], key: Any, amount: int = 1) -> None:
        table[key] = table.get(key, 0) + amount

    def months(self) -> list[str]:
        found = {key.month for key in self.cells}
        found.update(self.duplicates)
        found.update(key[0] for key in self.rejected)  # every other table's key starts with its month
        return sorted(found)

    def drop_months_before(self, oldest_kept: str) -> int:
        """Forget whole months older than ``oldest_kept`` ("YYYY-MM"); returns how many went."""
        before = set(self.months())

        def keep(month: str) -> bool:
            return month == UNKNOWN_MONTH or month >= oldest_kept

        self.cells = {k: v for k, v in self.cells.items() if keep(k.month)}
        self.components = {k: v for k, v in self.components.items() if keep(k.month)}
        self.unpriced = {k: v for k, v in self.unpriced.items() if keep(k[0])}
        self.divergence = {k: v for k, v in self.divergence.items() if keep(k[0])}
        self.duplicates = {k: v for k, v in self.duplicates.items() if keep(k)}
        self.rejected = {k: v for k, v in self.rejected.items() if keep(k[0])}
        self.flagged = {k: v for k, v in self.flagged.items() if keep(k[0])}
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
        for key, cell in other.cells.items():
            rate = rate_ids[key.rate_id] if key.rate_id != UNPRICED else UNPRICED
            mine = self.cell(key._replace(rate_id=rate))
            for index, value in enumerate(cell):
                mine[index] += value
        for div_key, (counted, provider) in other.divergence.items():
            pair = self.divergence.setdefault(div_key, [0, 0])
            pair[0] += counted
            pair[1] += provider
        tables: tuple[tuple[dict[Any, int], dict[Any, int]], ...] = (
            (self.components, other.components), (self.unpriced, other.unpriced),
            (self.duplicates, other.duplicates), (self.rejected, other.rejected), (self.flagged, other.flagged))
        for mine_table, theirs in tables:
            for key, value in theirs.items():
                mine_table[key] = mine_table.get(key, 0) + value
        self.newest_ts = max(self.newest_ts, other.newest_ts)
        self.dirty_all = True

    def priced_cells(self) -> Iterator[tuple[CellKey, list[int], PricedModel | None]]:
        for key, cell in self.cells.items():
            yield key, cell, (self.rate_book[key.rate_id] if key.rate_id != UNPRICED else None)

    # --- the replay/summary view (the replay JSON of docs/record-format.md) ----------------------------
    def month_totals(self) -> dict[str, dict[str, Any]]:
        """The same month-to-date totals the counters hold, one dict per month."""
        months: dict[str, dict[str, Any]] = {}

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
                }
            return found

        # Sorted by labels and rate *values*, not rate ids (ids follow arrival order): float sums
        # are then the same whatever order the records came in.
        for key, cell, rates in sorted(self.priced_cells(), key=_by_labels_and_rates):
            totals = month(key.month)
            totals["requests"] += cell[REQUESTS]
            totals["tokens_saved"] += cell[SAVED]
            totals["would_have_saved_tokens"] += cell[WOULD_SAVE]
            totals["fresh_input_tokens"] += cell[FRESH]
            totals["cache_read_tokens"] += cell[CACHE_READ]
            totals["cache_write_tokens"] += cell[WRITE_5M] + cell[WRITE_1H]
            totals["output_tokens"] += cell[OUTPUT]
            if rates is None:
                totals["unpriced"] += cell[REQUESTS]
                continue
            dollars = cell_dollars(cell, rates, key.method)
            totals["usd_saved"] += dollars.usd_saved
            totals["would_have_saved_usd"] += dollars.would_have_saved
            totals["spend_usd"] += dollars.spend
            totals["cache_savings_usd"] += dollars.cache_net
        for name, count in self.duplicates.items():
            month(name)["duplicates"] += count
        for (name, _reason), count in self.rejected.items():
            month(name)["rejected"] += count
        for totals in months.values():
            prompt = (totals["fresh_input_tokens"] + totals["cache_read_tokens"]
                      + totals["cache_write_tokens"])
            totals["cache_hit_rate"] = totals["cache_read_tokens"] / prompt if prompt else 0.0
        return dict(sorted(months.items()))

    # --- checkpoint ---------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        """JSON-ready state; restoring it gives back exactly these values."""
        return {
            "cells": [[*key, *cell] for key, cell in self.cells.items()],
            "components": [[*key, value] for key, value in self.components.items()],
            "unpriced": [[*key, value] for key, value in self.unpriced.items()],
            "divergence": [[*key, *value] for key, value in self.divergence.items()],
            "duplicates": self.duplicates,
            "rejected": [[*key, value] for key, value in self.rejected.items()],
            "flagged": [[*key, value] for key, value in self.flagged.items()],
            "rate_book": [
                {**{f: getattr(r, f) for f in ("version", "model", "family", "input", "output", "cache_read",
                                               "cache_write_5m", "cache_write_1h")},
                 "factors": [list(pair) for pair in r.factors]}
                for r in self.rate_book
            ],
            "newest_ts": self.newest_ts,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Aggregates:
        agg = cls()
        for entry in state["rate_book"]:
            fields = {k: v for k, v in entry.items() if k != "factors"}
            agg.rate_id(PricedModel(**fields, factors=tuple((str(m), float(f)) for m, f in entry["factors"])))
        for row in state["cells"]:
            key = CellKey(str(row[0]), str(row[1]), str(row[2]), str(row[3]), int(row[4]))
            cell = [int(v) for v in row[5:]]
            if len(cell) != CELL_WIDTH:
                raise ValueError("checkpoint cell has the wrong width")
            agg.cells[key] = cell
        agg.components = {ComponentKey(*map(str, row[:5])): int(row[5]) for row in state["components"]}
        agg.unpriced = {tuple(row[:3]): int(row[3]) for row in state["unpriced"]}
        agg.divergence = {tuple(row[:4]): [int(row[4]), int(row[5])] for row in state["divergence"]}
        agg.duplicates = {str(k): int(v) for k, v in state["duplicates"].items()}
        agg.rejected = {(str(row[0]), str(row[1])): int(row[2]) for row in state["rejected"]}
        agg.flagged = {(str(row[0]), str(row[1])): int(row[2]) for row in state["flagged"]}
        agg.newest_ts = float(state.get("newest_ts", 0.0))
        return agg
