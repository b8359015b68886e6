"""The one place where records become counts.

Sources (file tailers, the OTLP receiver, replay) hand lines or decoded
objects to ``Pipeline``; it parses them (``exporter.engine.records``), dedupes by
request id, prices them by their own timestamp, caps labels and updates the
``Aggregates``. Sources know nothing of metrics, and the collector only reads
the aggregates. Single-threaded by design: callers serialise access (the
sidecar's ingest loop holds ``lock`` while it feeds a batch).
"""

from __future__ import annotations

import math
import threading
import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from msgspec.structs import astuple

from exporter.engine.aggregate import (
    CACHE_READ,
    FRESH,
    OUTPUT,
    REQUESTS,
    SAVED,
    UNKNOWN_MONTH,
    UNPRICED,
    WOULD_SAVE,
    WRITE_1H,
    WRITE_5M,
    Aggregates,
    CellKey,
    ComponentKey,
)
from exporter.engine.cells import BASE_COMPACTED, BASE_UNTOUCHED, SENT_UNTOUCHED
from exporter.engine.dedupe import DedupeLedger
from exporter.engine.gateway import count_hit, count_routing
from exporter.engine.labels import LabelCaps
from exporter.engine.months import MonthOf as MonthOf  # re-exported: callers import it from here
from exporter.engine.optimizer import count_optimizer, implausible

# NESTS_TOO_DEEPLY (re-exported): a line nesting past msgspec's or the reference's depth; SLOT_SECONDS: (month,
# price version) is remembered per slot of this many seconds; TIERED, UNKNOWN_TIER: the Route's last item
from exporter.engine.plainpath import NESTS_TOO_DEEPLY as NESTS_TOO_DEEPLY
from exporter.engine.plainpath import SLOT_SECONDS, TIERED, UNKNOWN_TIER, ingest_canonical, ingest_watched
from exporter.engine.records import (
    MAX_EPOCH_SECONDS,
    Record,
    Rejection,
    TextCounter,
    parse_object,
)
from exporter.engine.usage import DEFAULT_MAX_REQUEST_TOKENS, OptimizerCall, Usage
from exporter.prices.table import PricedModel, PriceTable
from exporter.prices.tiers import UNKNOWN_SERVICE_TIER

UNSET_TENANT = "unset"
UNSPECIFIED_METHOD = "unspecified"
UNATTRIBUTED = "unattributed"

DEFAULT_FUTURE_SKEW_SECONDS = 600.0  # further ahead of the clock: refused (future_ts), no month opened
MAX_ROUTES = 50_000  # remembered routes (and slots); past this they are forgotten and worked out again

# Both built or unpacked for every record, so bare tuples: a NamedTuple costs a call to build, and
# unpacking one takes the generic path (54 ns against 15 ns; +0.9% instructions per replayed record,
# tests/bench/bench_instructions.py). RouteKey: month, price version index, model, provider, tenant,
# count_method, whether the record has a method label. Route: the cell; its CellKey; the unpriced key
# (month, model, reason) or None; the unattributed saving's ComponentKey; the divergence keys (month,
# model, method, population) of compacted and untouched records.
# The RouteKey's last item is the service tier. The Route's last item: TIERED when the model's prompt size or
# time of day can change its rates (each record is then priced by its own, ``_tiered``; v1 models never
# are), UNKNOWN_TIER when the record's service tier is not the model's (base rates, flagged).
RouteKey = tuple[str, int, str, str | None, str | None, str | None, bool, str | None]
Route = tuple[list[int], CellKey, tuple[str, str, str] | None, ComponentKey,
              tuple[str, str, str, str], tuple[str, str, str, str], int]

LineDecoder = Callable[[bytes], Record | Rejection | None]
ObjectDecoder = Callable[[Any], Record | Rejection]


class Pipeline:
    def __init__(
        self,
        prices: PriceTable,
        *,
        timezone: str = "UTC",
        dedupe_window_days: float = 40.0,
        caps: LabelCaps | None = None,
        counter: TextCounter | None = None,
        aggregates: Aggregates | None = None,
        ledger: DedupeLedger | None = None,
        oldest_month: str | None = None,
        wall_clock: Callable[[], float] = time.time,
        future_skew_seconds: float = DEFAULT_FUTURE_SKEW_SECONDS,
        max_request_tokens: int = DEFAULT_MAX_REQUEST_TOKENS,
    ) -> None:
        self.prices = prices
        self.month_of = MonthOf(timezone)
        # `is None`, not `or`: an empty ledger is falsy (it has a length), and must still be used
        self.caps = caps if caps is not None else LabelCaps()
        self.counter = counter
        # the C loop's routes (engine/_plain.c, made by plainpath): they hold sums not yet in the
        # aggregates, written whenever anyone reads the aggregates (the property below)
        self._plain_routes: Any = None
        self._aggregates = aggregates if aggregates is not None else Aggregates()
        self.ledger = ledger if ledger is not None else DedupeLedger(dedupe_window_days)
        self.oldest_month = oldest_month  # records of older months are refused (expired_month)
        self.rejections = 0  # with last_rejection: a source feeding a line at a time sees which was rejected
        self.last_rejection = ""
        self.wall = wall_clock
        self.future_skew_seconds = future_skew_seconds
        self.max_request_tokens = max_request_tokens  # above it: implausible_count, never priced
        self._future_limit = wall_clock() + future_skew_seconds
        self.lock = threading.RLock()
        self._preload_caps()

    def _preload_caps(self) -> None:
        """Label values already counted keep their slots after a restart, and only they do.

        Values that never take a slot (the ``unset`` tenant, the empty method of
        records without savings, ``unattributed``) are not preloaded.
        """
        agg = self._aggregates
        for _month, model, tenant, method, _rate in agg.cells:
            self.caps.model.preload([model])
            if tenant != UNSET_TENANT:
                self.caps.tenant.preload([tenant])
            if method and method != UNSPECIFIED_METHOD:
                self.caps.method.preload([method])
        self.caps.model.preload(key.model for key in agg.optimizer)
        self.caps.model.preload(agg.gateway.models())
        self.caps.component.preload(key.component for key in agg.components if key.component != UNATTRIBUTED)

    @property
    def aggregates(self) -> Aggregates:
        """The counts. The C loop keeps the sums of a batch's records on their routes (a Python int made
        per route and batch, not per record and column) and they are written here before anyone reads:
        whoever takes the aggregates from the pipeline sees every record counted so far."""
        self._write_plain_sums()
        return self._aggregates

    @aggregates.setter
    def aggregates(self, aggregates: Aggregates) -> None:
        self._write_plain_sums()  # what was counted goes to the aggregates it was counted for
        self._aggregates = aggregates

    def _write_plain_sums(self) -> None:
        routes = self._plain_routes
        if routes is not None and routes.pending:
            routes.flush()

    # --- entry points for sources ------------------------------------------
    def ingest_line(self, line: bytes, source: str = "replay", decoder: LineDecoder | None = None) -> None:
        self.ingest_lines((line,), source, decoder)

    def ingest_lines(self, lines: Iterable[bytes], source: str = "replay", decoder: LineDecoder | None = None) -> None:
        """Complete lines (no newline) of one source, in order; blank lines are no record.

        Without a decoder the lines are canonical records: a plain line is counted in
        ``plainpath``'s loop from its decoded fields, an ordinary one through
        ``count_record``, anything else goes through the reference parser.
        """
        if decoder is None:
            self._ingest_canonical(lines)
            return
        apply = self.apply
        for line in lines:
            try:
                result = decoder(line)
            except RecursionError:
                result = NESTS_TOO_DEEPLY
            if type(result) is Record:  # the common case first: one call less per line
                apply(result)
            elif result is not None:
                self._consume(result)

    def _ingest_canonical(self, lines: Iterable[bytes]) -> None:
        ingest_canonical(self, lines)  # the plain line's loop (engine.plainpath), the rest through count_record

    def ingest_watched(self, lines: list[bytes], first: int, watch: Any) -> None:
        """Canonical ``lines[first:]`` for the sidecar, which logs where lines are rejected or fail:
        ``watch.rejected`` gets (index, reason) of each rejected line, ``watch.at`` the line that raised."""
        ingest_watched(self, lines, first, watch)

    def ingest_object(self, obj: Any, source: str = "otlp", decoder: ObjectDecoder | None = None) -> None:
        self._consume(decoder(obj) if decoder is not None else parse_object(obj, self.counter))

    def reject(self, reason: str, source: str = "replay", ts: float | None = None) -> None:
        """Count a rejection a source found itself (line too long, undecodable span...)."""
        if ts is not None and not 0 <= ts <= MAX_EPOCH_SECONDS:  # NaN too: no month, not a crash
            ts = None
        self._consume(Rejection(reason, reason, ts))

    def set_prices(self, prices: PriceTable) -> None:
        """Records from now on are priced by ``prices``; what is counted keeps its rates."""
        self.prices = prices

    # --- the arithmetic -----------------------------------------------------
    def _consume(self, result: Record | Rejection) -> None:
        if isinstance(result, Rejection):
            month = self.month_of(result.ts) if result.ts is not None else UNKNOWN_MONTH
            self._count_rejection(month, result.reason)
            return
        self.apply(result)

    def apply(self, record: Record) -> None:
        self.count_record(*astuple(record))

    def count_record(
        self, ts: float, request_id: str | None, model: str, provider: str | None, tenant: str | None,
        before: int | None, after: int | None, count_method: str | None, would_save: int | None,
        components: tuple[tuple[str, int], ...], usage: Usage | None, flags: tuple[str, ...] = (),
        source_dialect: str | None = None, optimizer: OptimizerCall | None = None,
        response_cache: str | None = None, requested_model: str | None = None, service_tier: str | None = None,
    ) -> bool:
        """Count one record, given as ``Record``'s fields in order; returns True (it was consumed).

        The fast path of canonical lines (``fastparse.fast_record``, for the lines the plain
        loop leaves) calls this with the fields it decoded, so no line builds a ``Record``. The plain
        line's loop (``plainpath``) repeats its common case inline: change both together
        (``tests/engine/test_plainpath.py`` holds them equal).
        """
        agg = self._aggregates
        if ts > self._future_limit and self._is_future(ts):
            # dated ahead of the clock: it must not open a month nor move the dedupe window
            self._count_rejection(UNKNOWN_MONTH, "future_ts")
            return True
        slot = self._slots.get(ts // SLOT_SECONDS)
        if slot is None:
            slot = self._slot(ts)
        month, version = slot
        if self.oldest_month is not None and month < self.oldest_month:
            # its own month is no longer published: count it where it stays visible
            self._count_rejection(UNKNOWN_MONTH, "expired_month")
            return True
        cap = self.max_request_tokens
        if ((usage is not None and (usage.output > cap or usage.fresh_input + usage.cache_read + usage.cache_write_5m
                                    + usage.cache_write_1h > cap))
                or (before is not None and before > cap) or (after is not None and after > cap)
                or (would_save is not None and would_save > cap)
                or (optimizer is not None and implausible(optimizer, cap))):
            self._count_rejection(month, "implausible_count")  # before dedupe: its id stays free
            return True
        if request_id is not None and self.ledger.seen_before(request_id, ts):
            agg.count(agg.duplicates, month)
            return True
        if ts > agg.newest_ts:
            agg.newest_ts = ts
        if response_cache is not None:  # no provider call: counted as a hit only (engine.gateway)
            count_hit(agg, self.caps.model, self._prices, month, ts, model, provider,
                      self.caps.tenant(tenant) if tenant is not None else UNSET_TENANT, response_cache, usage,
                      service_tier)
            for flag in flags:
                agg.count(agg.flagged, (month, flag))
            return True
        has_savings = before is not None and after is not None
        if agg.cells is not self._routes_cells:  # routes hold cells and rate ids of these aggregates
            self._clear_routes(agg)
        # labelled (the last item): only records with savings or shadow figures have a method label
        key = (month, version, model, provider, tenant, count_method, has_savings or would_save is not None,
               service_tier)
        route = self._routes.get(key)
        if route is None:
            route = self._route(key, ts)
        tier_flagged = route[6] & UNKNOWN_TIER
        if route[6]:
            if tier_flagged:
                agg.count(agg.flagged, (month, "unknown_service_tier"))
            if route[6] & TIERED:
                saved_tokens = before - after if has_savings and before > after else 0  # type: ignore[operator]
                route = self._tiered(key, ts, usage, saved_tokens, would_save or 0)
        cell, cell_key, unpriced, unattributed, compacted, untouched, _ = route
        if unpriced is not None:
            agg.count(agg.unpriced, unpriced)
        cell[REQUESTS] += 1
        if usage is not None:
            cell[FRESH] += usage.fresh_input
            cell[CACHE_READ] += usage.cache_read
            cell[WRITE_5M] += usage.cache_write_5m
            cell[WRITE_1H] += usage.cache_write_1h
            cell[OUTPUT] += usage.output
        if would_save is not None:
            cell[WOULD_SAVE] += would_save
        if has_savings:
            assert before is not None and after is not None
            if before > after:  # compacted (its sent tokens are before - saved: cells.populations)
                saved = before - after
                cell[SAVED] += saved
                cell[BASE_COMPACTED] += before
            else:  # untouched: saves nothing
                saved = 0
                cell[BASE_UNTOUCHED] += before
                cell[SENT_UNTOUCHED] += after
            if components:
                self._attribute(cell_key, saved, components)
            else:  # the common case of _attribute: all of it unattributed
                by_component = agg.components
                by_component[unattributed] = by_component.get(unattributed, 0) + saved
            if usage is not None and count_method != "provider":
                div_key = compacted if saved else untouched
                pair = agg.divergence.get(div_key)
                if pair is None:
                    pair = agg.divergence[div_key] = [0, 0]
                pair[0] += after
                pair[1] += usage.fresh_input + usage.cache_read + usage.cache_write_5m + usage.cache_write_1h
        if flags:
            for flag in flags:
                agg.count(agg.flagged, (month, flag))
        if optimizer is not None and count_optimizer(agg, self.caps.model, self._prices, month, ts, cell_key.tenant,
                                                     optimizer) and not tier_flagged:  # a record is flagged once
            agg.count(agg.flagged, (month, "unknown_service_tier"))
        if requested_model is not None and requested_model != model:
            count_routing(agg, self.caps.model, self._prices, month, ts, requested_model, provider, cell_key.model,
                          cell_key.tenant, cell_key.rate_id, unpriced[2] if unpriced else None, usage, service_tier)
        return True

    def _count_rejection(self, month: str, reason: str) -> None:
        self._aggregates.count(self._aggregates.rejected, (month, reason))
        self.rejections += 1
        self.last_rejection = reason

    def _is_future(self, ts: float) -> bool:
        """Whether ``ts`` is more than the allowed skew ahead of the wall clock. The limit is cached and
        refreshed only when a record passes it: the per-record path reads no clock."""
        self._future_limit = self.wall() + self.future_skew_seconds
        return ts > self._future_limit

    # --- routes: where a record's figures go ---------------------------------
    @property
    def prices(self) -> PriceTable:
        return self._prices

    @prices.setter
    def prices(self, table: PriceTable) -> None:
        self._prices = table
        self._version_starts = [version.effective_from for version in table.versions]
        self._slots: dict[float, tuple[str, int]] = {}
        self._clear_routes()

    def _slot(self, ts: float) -> tuple[str, int]:
        """(month, price version index) of ``ts``, remembered per 15 minutes unless a version starts inside.

        Every real zone's offset is a multiple of 15 minutes, so a month boundary
        never falls inside a slot; a price version may start anywhere.
        """
        slot = (self.month_of(ts), bisect_right(self._version_starts, ts))
        start = ts // SLOT_SECONDS * SLOT_SECONDS
        if bisect_right(self._version_starts, start) == bisect_left(self._version_starts, start + SLOT_SECONDS):
            if len(self._slots) >= MAX_ROUTES:
                self._slots.clear()
            self._slots[ts // SLOT_SECONDS] = slot
        return slot

    def _clear_routes(self, aggregates: Aggregates | None = None) -> None:
        self._routes: dict[RouteKey, Route] = {}
        self._tiered_routes: dict[tuple[RouteKey, PricedModel], Route] = {}
        # a model priced by prompt size alone: per route key its thresholds and the route of each prompt tier
        self._prompt_tier_routes: dict[RouteKey, tuple[list[int], list[Route | None]]] = {}
        # a route holds its cell: routes are only good while the aggregates keep this cells dict
        self._routes_cells = aggregates.cells if aggregates is not None else None

    def _tiered(self, key: RouteKey, ts: float, usage: Usage | None, saved: int, would_save: int) -> Route:
        """The route of one record of a model with prompt-size tiers or time windows: by its own rates.

        When the counterfactual (saved x factor put back as fresh input, or would-have-saved x factor
        removed) falls in another prompt tier, its rates ride along in the ``PricedModel`` (``cliff_*``):
        such records get cells of their own and ``cells.cliff_dollars`` adds the jump, exactly.
        """
        prompt = 0 if usage is None else (usage.fresh_input + usage.cache_read + usage.cache_write_5m
                                          + usage.cache_write_1h)
        by_prompt = self._prompt_tier_routes.get(key) if not (saved or would_save) else None
        if by_prompt is not None:  # prompt tiers alone: the tier's route, without the lookup and the rates' hash
            known = by_prompt[1][bisect_left(by_prompt[0], prompt)]
            if known is not None:
                return known
        lookup = self._prices.lookup
        priced = lookup(key[2], ts, key[3], service_tier=key[7], prompt_tokens=prompt)
        assert isinstance(priced, PricedModel)  # the route's lookup priced this model
        if saved or would_save:
            factor = priced.factor(key[5] or None)[0]
            cliffs: dict[str, Any] = {}
            for name, tokens in (("cliff_saved", prompt + math.ceil(saved * factor)),
                                 ("cliff_would", max(0, math.ceil(prompt - would_save * factor)))):
                if tokens != prompt:
                    other = lookup(key[2], ts, key[3], service_tier=key[7], prompt_tokens=tokens)
                    assert isinstance(other, PricedModel)
                    rates = (other.input, other.output, other.cache_read, other.cache_write_5m, other.cache_write_1h)
                    if rates != (priced.input, priced.output, priced.cache_read, priced.cache_write_5m,
                                 priced.cache_write_1h):
                        cliffs[name] = rates
            if cliffs:
                priced = replace(priced, **cliffs)
        tiered_key = (key, priced)
        route = self._tiered_routes.get(tiered_key)
        if route is None:
            caps = self.caps
            overflow = caps.model.overflow + caps.tenant.overflow + caps.method.overflow
            route = self._route(key, ts, priced)
            if overflow != caps.model.overflow + caps.tenant.overflow + caps.method.overflow:
                return route  # a folded label: worked out again for every record, as _route does
            if len(self._tiered_routes) >= MAX_ROUTES:
                self._tiered_routes.clear()
            self._tiered_routes[tiered_key] = route
        if not (saved or would_save):
            self._remember_prompt_tier(key, ts, prompt, route)
        return route

    def _remember_prompt_tier(self, key: RouteKey, ts: float, prompt: int, route: Route) -> None:
        """Keep ``route`` as its prompt tier's when only the prompt size decides the model's rates.

        The lookup's rates for one route key then depend on the prompt tier alone (``Plan.prompt_only``), so the
        next record of that key and tier takes the same route straight away: the route ``_tiered_routes`` holds
        for them, found without a lookup and without hashing the rates.
        """
        by_prompt = self._prompt_tier_routes.get(key)
        if by_prompt is None:
            aboves = self._prices.prompt_tier_thresholds(key[2], ts, key[3], key[7])
            if aboves is None:
                return
            if len(self._prompt_tier_routes) >= MAX_ROUTES:
                self._prompt_tier_routes.clear()
            by_prompt = self._prompt_tier_routes[key] = (aboves, [None] * (len(aboves) + 1))
        by_prompt[1][bisect_left(by_prompt[0], prompt)] = route

    def _route(self, key: RouteKey, ts: float, rates: PricedModel | None = None) -> Route:
        """Price, rate id and labels of one route key (docs/prices.md), remembered when that is exact.

        Label caps only ever admit values, so a route whose labels all took or
        held a slot gives the same labels next time with nothing to count; a
        route where a cap folded a value into ``other`` is worked out again for
        every record, so each one counts its overflow.
        """
        month, _version, record_model, provider, record_tenant, count_method, labelled, service_tier = key
        caps, agg = self.caps, self._aggregates
        overflow = caps.model.overflow + caps.tenant.overflow + caps.method.overflow
        priced = rates if rates is not None else self._prices.lookup(record_model, ts, provider,
                                                                     service_tier=service_tier)
        unpriced: tuple[str, str, str] | None = None
        extra = 0
        if isinstance(priced, PricedModel):
            rate_id = agg.rate_id(priced)
            model = caps.model(priced.model)
            if rates is None:  # the route's own lookup: does each record need its own?
                tiers = self._prices.tiers_of(priced, ts)
                extra = (TIERED if tiers is not None and tiers.tiered else 0) | (
                    UNKNOWN_TIER if priced.service_tier == UNKNOWN_SERVICE_TIER else 0)
        else:
            rate_id = UNPRICED
            model = caps.model(record_model)
            unpriced = (month, model, priced)
        tenant = caps.tenant(record_tenant) if record_tenant is not None else UNSET_TENANT
        method = self._method_label(count_method, priced) if labelled else ""
        cell_key = CellKey(month, model, tenant, method, rate_id)
        unattributed = ComponentKey(month, model, tenant, method, UNATTRIBUTED, rate_id)
        # a tiered model's own route holds no cell: each record goes to the cell of its rates (_tiered)
        route = ([] if extra & TIERED else agg.cell(cell_key), cell_key, unpriced, unattributed,
                 (month, model, method, "compacted"), (month, model, method, "untouched"), extra)
        if rates is None and overflow == caps.model.overflow + caps.tenant.overflow + caps.method.overflow:
            if len(self._routes) >= MAX_ROUTES:
                self._routes.clear()
            self._routes[key] = route
        return route

    def _method_label(self, method: str | None, priced: PricedModel | str) -> str:
        """The ``method`` label; methods that carry a factor are never folded into ``other``.

        Those are bounded by the price table, and folding them would change the
        dollars (``other`` has no factor); any other method's factor is the default
        1.0 whether it keeps its name or not.
        """
        if not method:
            return UNSPECIFIED_METHOD
        if method == "provider" or (
            isinstance(priced, PricedModel) and any(name == method for name, _ in priced.factors)
        ):
            return method
        return self.caps.method(method)

    def _attribute(self, cell_key: CellKey, saved: int, components: tuple[tuple[str, int], ...]) -> None:
        """Split a saving over its components; the remainder is ``unattributed``."""
        agg = self._aggregates
        month, model, tenant, method, rate_id = cell_key
        remaining = saved
        exceeded = False
        for name, tokens in components:
            share = tokens if tokens <= remaining else remaining
            exceeded = exceeded or share != tokens
            if share:
                agg.count(agg.components,
                          ComponentKey(month, model, tenant, method, self.caps.component(name), rate_id), share)
            remaining -= share
        if exceeded:
            agg.count(agg.flagged, (month, "components_exceed_saving"))
        if remaining or not components:
            key = ComponentKey(month, model, tenant, method, UNATTRIBUTED, rate_id)
            agg.components[key] = agg.components.get(key, 0) + remaining
