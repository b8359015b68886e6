"""The month summary: the one model the landing page and ``report`` show, built from the aggregates.

Pure: :func:`build_report` reads ``Aggregates`` (a copy, for the live page) and the month
totals replay prints (``Aggregates.month_totals``, replay's arithmetic, kept exactly as
``totals``), and returns plain data; the writers (``text``, ``markdown``, ``json_report``,
``html``) only format it. Breakdowns are sums of each cell's dollars (``cell_dollars``),
the figures /metrics sums into its series. Figures the engine may not count (baseline and
sent input tokens, dollars by component, the optimizer's own spend) are optional: ``None``
means "not counted here", never zero.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from exporter.engine.aggregate import REQUESTS, SAVED, UNKNOWN_MONTH, Aggregates, cell_dollars
from exporter.prices.table import PricedModel
from exporter.report.kinds import NO_KINDS, KindLine, SavingsByKind, kind_lines, savings_by_kind
from exporter.report.numbers import share

SCHEMA = "llm-savings-report/v1"
# replay's month keys that the engine may add (issue 16): read when present, else None
OPTIONAL_KEYS = ("baseline_input_tokens", "sent_input_tokens", "saved_pct", "compression_ratio",
                 "optimizer_requests", "optimizer_spend_usd", "net_usd_saved")
COMPONENT_USD_KEY = "usd_saved_by_component"  # replay's month key: {component: usd_saved}, when counted


class Row(NamedTuple):
    """One line of a breakdown by model or tenant: the sums of its cells."""

    name: str
    requests: int
    tokens_saved: int
    usd_saved: float
    spend_usd: float
    cache_savings_usd: float  # the provider's cache effect, net (read savings - write premium)
    unpriced_requests: int


class ComponentRow(NamedTuple):
    """What one optimisation component saved (the remainder of a record's saving is ``unattributed``)."""

    name: str
    tokens_saved: int
    usd_saved: float | None  # None until dollars are counted by component


class Tally(NamedTuple):
    """A provenance line: a price version, a count method or a factor source, and what it covers."""

    name: str
    requests: int
    tokens_saved: int
    usd_saved: float
    spend_usd: float


class Population(NamedTuple):
    """Baseline and sent input tokens of one population (``compacted``: before > after, ``untouched``,
    or ``all``), with its saved % and compression ratio (None when there is nothing to divide by)."""

    name: str
    baseline_input_tokens: int
    sent_input_tokens: int
    saved_pct: float | None
    compression_ratio: float | None


class Count(NamedTuple):
    """A named count: records flagged by flag, rejected by reason, unpriced by reason."""

    name: str
    total: int


class Provenance(NamedTuple):
    """Where a month's figures come from, and how complete its usage is."""

    price_versions: tuple[Tally, ...]
    count_methods: tuple[Tally, ...]
    factor_sources: tuple[Tally, ...]
    flagged: tuple[Count, ...]
    rejected: tuple[Count, ...]
    unpriced: tuple[Count, ...]
    duplicates: int


@dataclass(frozen=True, slots=True)
class MonthSummary:
    """One month: replay's totals as they are, the derived percentages, breakdowns and provenance."""

    month: str
    totals: Mapping[str, Any]  # replay's month totals, exactly (requests, usd_saved, spend_usd, ...)
    by_model: tuple[Row, ...]
    by_tenant: tuple[Row, ...]
    by_component: tuple[ComponentRow, ...]
    provenance: Provenance
    kinds: SavingsByKind = NO_KINDS  # response cache and routing

    @property
    def by_kind(self) -> tuple[KindLine, ...]:
        """The four kinds of saving side by side, with each one's share of their sum (the total saved)."""
        return kind_lines(self.totals, self.kinds)

    def figure(self, key: str) -> Any:
        """A month total by replay's key; None when the engine does not count it."""
        return self.totals.get(key)

    @property
    def saved_pct(self) -> float | None:
        """Tokens saved over baseline input tokens; None without a baseline count."""
        given = self.totals.get("saved_pct")
        if given is not None:
            return float(given)
        baseline = self.totals.get("baseline_input_tokens")
        return share(self.totals["tokens_saved"], baseline) if baseline is not None else None

    @property
    def compression_ratio(self) -> float | None:
        """Baseline over sent input tokens; None without both counts."""
        given = self.totals.get("compression_ratio")
        if given is not None:
            return float(given)
        baseline, sent = self.totals.get("baseline_input_tokens"), self.totals.get("sent_input_tokens")
        return share(baseline, sent) if baseline is not None and sent is not None else None

    @property
    def populations(self) -> tuple[Population, ...]:
        """Saved % and the compression ratio per population and for all, when the engine counts baselines."""
        found = self.totals.get("populations")
        baseline, sent = self.totals.get("baseline_input_tokens"), self.totals.get("sent_input_tokens")
        if not isinstance(found, Mapping) or baseline is None or sent is None:
            return ()
        rows = []
        for name, body in found.items():
            pop_baseline, pop_sent = int(body["baseline_input_tokens"]), int(body["sent_input_tokens"])
            saved = body.get("saved_pct", share(max(0, pop_baseline - pop_sent), pop_baseline))
            ratio = body.get("compression_ratio", share(pop_baseline, pop_sent))
            rows.append(Population(str(name), pop_baseline, pop_sent, saved, ratio))
        rows.append(Population("all", int(baseline), int(sent), self.saved_pct, self.compression_ratio))
        return tuple(rows)

    @property
    def optimizer_counted(self) -> bool:
        """Whether any record of the month carried the optimizer's own spend (else net = saved, not worth a line)."""
        return bool(self.totals.get("optimizer_requests") or self.totals.get("optimizer_spend_usd"))

    @property
    def net_usd_saved(self) -> float | None:
        """Dollars saved minus the optimizer's own spend; None when that spend is not counted."""
        given = self.totals.get("net_usd_saved")
        if given is not None:
            return float(given)
        spend = self.totals.get("optimizer_spend_usd")
        return float(self.totals["usd_saved"]) - float(spend) if spend is not None else None


@dataclass(frozen=True, slots=True)
class Report:
    """Every month of one source (the live sidecar, or a replay of files), one of them in focus."""

    source: str  # "sidecar" or "replay of N file(s)"
    generated_at: str  # RFC 3339, UTC
    timezone: str
    month: str | None  # the month in focus; None when nothing was counted
    months: tuple[MonthSummary, ...]  # oldest first, "unknown" (rejections without a month) last
    price_versions: tuple[str, ...]  # the versions of the price table in use
    note: str = ""  # why the focus is not the month asked for, if it is not
    schema: str = SCHEMA

    @property
    def focus(self) -> MonthSummary | None:
        return next((m for m in self.months if m.month == self.month), None)


class _Sums:
    """Running sums of one breakdown line (mutable while building; frozen into a Row or Tally)."""

    __slots__ = ("cache_savings_usd", "requests", "spend_usd", "tokens_saved", "unpriced", "usd_saved")

    def __init__(self) -> None:
        self.requests = self.tokens_saved = self.unpriced = 0
        # int zeros: exact (Fraction) cell dollars would sum exactly and be rounded once, in _rows/_tallies
        self.usd_saved: float = 0
        self.spend_usd: float = 0
        self.cache_savings_usd: float = 0


def _ranked(rows: Iterable[Any]) -> tuple[Any, ...]:
    """Biggest saving first (dollars, then tokens, then requests), then by name: a stable order."""
    return tuple(sorted(rows, key=lambda r: (-r.usd_saved, -r.tokens_saved, -r.requests, r.name)))


def _group(sums: dict[str, _Sums], name: str) -> _Sums:
    found = sums.get(name)
    if found is None:
        found = sums[name] = _Sums()
    return found


class _MonthParts:
    """Every breakdown of one month while the cells are read."""

    def __init__(self) -> None:
        self.models: dict[str, _Sums] = {}
        self.tenants: dict[str, _Sums] = {}
        self.versions: dict[str, _Sums] = {}
        self.methods: dict[str, _Sums] = {}
        self.factor_sources: dict[str, _Sums] = {}
        self.components: dict[str, int] = {}


def _dollars(cell: list[int], rates: PricedModel, method: str) -> tuple[float, float, float]:
    """A cell's dollars saved, spend and net provider-cache savings: the one place the report prices a cell."""
    dollars = cell_dollars(cell, rates, method)
    return dollars.usd_saved, dollars.spend, dollars.cache_net


def _read_cells(agg: Aggregates) -> dict[str, _MonthParts]:
    parts: dict[str, _MonthParts] = {}
    for key, cell, rates in agg.priced_cells():
        month = parts.get(key.month) or parts.setdefault(key.month, _MonthParts())
        groups = [_group(month.models, key.model), _group(month.tenants, key.tenant)]
        if key.method:
            groups.append(_group(month.methods, key.method))
        usd_saved: float
        spend: float
        cache: float
        if rates is None:
            usd_saved = spend = cache = 0
        else:
            usd_saved, spend, cache = _dollars(cell, rates, key.method)
            groups.append(_group(month.versions, rates.version))
            if key.method:
                groups.append(_group(month.factor_sources, rates.factor(key.method)[1]))
        for sums in groups:
            sums.requests += cell[REQUESTS]
            sums.tokens_saved += cell[SAVED]
            sums.usd_saved += usd_saved
            sums.spend_usd += spend
            sums.cache_savings_usd += cache
            if rates is None:
                sums.unpriced += cell[REQUESTS]
    for component_key, saved in agg.components.items():
        month = parts.get(component_key.month) or parts.setdefault(component_key.month, _MonthParts())
        month.components[component_key.component] = month.components.get(component_key.component, 0) + saved
    return parts


def _rows(sums: dict[str, _Sums]) -> tuple[Row, ...]:
    return _ranked(Row(name, s.requests, s.tokens_saved, float(s.usd_saved), float(s.spend_usd),
                       float(s.cache_savings_usd), s.unpriced) for name, s in sums.items())


def _tallies(sums: dict[str, _Sums]) -> tuple[Tally, ...]:
    return _ranked(Tally(name, s.requests, s.tokens_saved, float(s.usd_saved), float(s.spend_usd))
                   for name, s in sums.items())


def _counts(table: Mapping[Any, int], month: str, name_at: int) -> tuple[Count, ...]:
    """A month's counts of a table keyed ``(month, ..., name, ...)``, biggest first."""
    found: dict[str, int] = {}
    for key, value in table.items():
        if key[0] == month:
            found[key[name_at]] = found.get(key[name_at], 0) + value
    return tuple(Count(n, c) for n, c in sorted(found.items(), key=lambda item: (-item[1], item[0])))


def _components(counted: dict[str, int], dollars: Mapping[str, float] | None) -> tuple[ComponentRow, ...]:
    rows = [ComponentRow(name, saved, None if dollars is None else float(dollars.get(name, 0.0)))
            for name, saved in counted.items()]
    # dollars no tokens were counted for: tier_jump (a saving's jump across a prompt tier)
    rows += [ComponentRow(name, 0, float(usd)) for name, usd in (dollars or {}).items() if name not in counted]
    return tuple(sorted(rows, key=lambda r: (-(r.usd_saved or 0.0), -r.tokens_saved, r.name)))


def month_order(name: str) -> tuple[bool, str]:
    """Months oldest first; ``unknown`` (rejections that have no month) last."""
    return (name == UNKNOWN_MONTH, name)


def build_report(agg: Aggregates, totals: Mapping[str, Mapping[str, Any]], *, source: str, generated_at: str,
                 timezone: str, month: str | None, price_versions: Iterable[str]) -> Report:
    """The report of ``agg``, with ``totals`` (replay's month totals of the same aggregates) as its figures.

    ``month`` is the month to put in focus (the current one for the live page, ``--month`` for
    ``report``); when it has no records the newest counted month is shown, and ``note`` says so.
    """
    parts = _read_cells(agg)
    months = []
    for name in sorted(totals, key=month_order):
        part = parts.get(name) or _MonthParts()
        component_usd = totals[name].get(COMPONENT_USD_KEY)
        provenance = Provenance(
            price_versions=_tallies(part.versions), count_methods=_tallies(part.methods),
            factor_sources=_tallies(part.factor_sources), flagged=_counts(agg.flagged, name, 1),
            rejected=_counts(agg.rejected, name, 1), unpriced=_counts(agg.unpriced, name, 2),
            duplicates=int(agg.duplicates.get(name, 0)))
        months.append(MonthSummary(name, dict(totals[name]), _rows(part.models), _rows(part.tenants),
                                   _components(part.components, component_usd), provenance,
                                   savings_by_kind(totals[name])))
    counted = [m.month for m in months if m.month != UNKNOWN_MONTH]
    note = ""
    focus = month
    if focus not in counted:
        focus = counted[-1] if counted else None
        if month is not None and focus is not None:
            note = f"no records counted for {month}; showing {focus}, the newest month counted"
    return Report(source=source, generated_at=generated_at, timezone=timezone, month=focus, months=tuple(months),
                  price_versions=tuple(price_versions), note=note)
