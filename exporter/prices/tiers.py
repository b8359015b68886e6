"""Price table v2 (docs/prices.md): prompt-size tiers, service tiers, time-of-day windows, and ``bill``.

A v2 model may list ``tiers`` (rates that apply to the *whole* request when its
prompt tokens, fresh + cache_read + cache writes, exceed ``above``: Gemini and
Anthropic's 1M context bill so), ``service_tiers`` (a named rate set or a
multiplier: flex, priority, batch) and ``time_windows`` (a local time-of-day
range with a multiplier or rates). The order is fixed: the service tier picks
the rate set, the prompt tier is chosen within it, then the first window
containing the request's time applies. The result is a frozen ``PricedModel``
with the final rates and its provenance (``tier``, ``service_tier``, ``window``),
so the engine keeps counting integer tokens under frozen rates.

Multiplied rates are the nearest float to the exact product of the written
decimals, so ``bill`` (exact ``Fraction``s of the written decimals) stays exact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from fractions import Fraction
from functools import lru_cache
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from exporter.prices.table import (
    PER_MILLION,
    PricedModel,
    PriceTable,
    PriceTableError,
    _mapping,
    _number,
)
from exporter.yamlpos import Located

RATE_KEYS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
V2_MODEL_KEYS = {"tiers", "service_tiers", "time_windows"}
DEFAULT_SERVICE_TIER = "default"
UNKNOWN_SERVICE_TIER = "unknown"  # provenance of a tier the model does not list: base rates, flagged
_NAME = re.compile(r"[a-z0-9_-]{1,32}")
_WINDOW_NAME = re.compile(r"[a-z0-9_]{1,32}")
_CLOCK = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9])")
_MILLION = Fraction(int(PER_MILLION))


class UsageTiers(NamedTuple):
    """The token kinds of one request, as ``bill`` prices them."""

    fresh: int
    cache_read: int
    cache_write_5m: int
    cache_write_1h: int
    output: int

    @property
    def prompt(self) -> int:
        """The prompt tokens a prompt-size tier is chosen by: fresh + cache read + cache writes."""
        return self.fresh + self.cache_read + self.cache_write_5m + self.cache_write_1h


class Rates(NamedTuple):
    """Final rates, USD per million tokens, in ``RATE_KEYS`` order."""

    input: float
    output: float
    cache_read: float
    cache_write_5m: float
    cache_write_1h: float


class Tier(NamedTuple):
    above: int
    rates: Rates


class RateSet(NamedTuple):
    """One service tier's rates: below every threshold, and each prompt tier's."""

    base: Rates
    tiers: tuple[Tier, ...]


class Window(NamedTuple):
    name: str
    zone: str
    start: int  # local minute of the day, inclusive
    end: int  # exclusive; end <= start wraps past midnight
    multiplier: float | None
    rates: tuple[tuple[str, float], ...]  # explicit rates replacing the chosen ones

    def holds(self, minute: int) -> bool:
        """Whether a local minute of the day is inside (a window with end <= start wraps past midnight)."""
        return self.start <= minute < self.end if self.start < self.end else minute >= self.start or minute < self.end


@lru_cache(maxsize=4096)
def written(value: float) -> Fraction:
    """The decimal a rate was written as: the shortest one that reads back as this float."""
    return Fraction(repr(value))


def _times(value: float, multiplier: float) -> float:
    return float(written(value) * written(multiplier))


def _scaled(rates: Rates, multiplier: float) -> Rates:
    return Rates(*(_times(rate, multiplier) for rate in rates))


def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


@dataclass(frozen=True, slots=True)
class ModelTiers:
    """What a v2 model adds to its base rates: the lookup's work once the version and model are known."""

    default: RateSet
    service_tiers: tuple[tuple[str, RateSet], ...]
    windows: tuple[Window, ...]

    @property
    def tiered(self) -> bool:
        """Whether the prompt size or the time of day can change the rates (the engine routes by them)."""
        return bool(self.windows) or bool(self.default.tiers) or any(s.tiers for _, s in self.service_tiers)

    def rate_set(self, service_tier: str | None) -> tuple[RateSet, str]:
        if service_tier is None or service_tier == DEFAULT_SERVICE_TIER:
            return self.default, ""
        for name, found in self.service_tiers:
            if name == service_tier:
                return found, name
        return self.default, UNKNOWN_SERVICE_TIER

    def window_at(self, ts: float) -> Window | None:
        for window in self.windows:
            local = datetime.fromtimestamp(ts, _zone(window.zone))
            if window.holds(local.hour * 60 + local.minute):
                return window
        return None

    def price(self, base: PricedModel, ts: float, service_tier: str | None, prompt_tokens: int) -> PricedModel:
        """The final rates and their provenance (the order of docs/prices.md)."""
        chosen, tier_name = self.rate_set(service_tier)
        rates, above = chosen.base, ""
        for tier in chosen.tiers:
            if prompt_tokens > tier.above:
                rates, above = tier.rates, f"above_{tier.above}"
        window = self.window_at(ts) if self.windows else None
        if window is not None:
            if window.multiplier is not None:
                rates = _scaled(rates, window.multiplier)
            if window.rates:
                rates = rates._replace(**dict(window.rates))
        return replace(base, input=rates.input, output=rates.output, cache_read=rates.cache_read,
                       cache_write_5m=rates.cache_write_5m, cache_write_1h=rates.cache_write_1h,
                       tier=above, service_tier=tier_name, window=window.name if window is not None else "")


def priced_as(table: PriceTable, base: PricedModel, ts: float, service_tier: str | None,
              prompt_tokens: int) -> PricedModel:
    """``base`` (a lookup's v1 rates) for this service tier, prompt size and time of day.

    A service tier the model does not list (nor ``default``) keeps the base rates with the provenance
    ``unknown`` (the engine flags it ``unknown_service_tier``): never silently the default.
    """
    tiers = table.tiers_of(base, ts)
    if tiers is None:
        if service_tier is None or service_tier == DEFAULT_SERVICE_TIER:
            return base
        found = replace(base, service_tier=UNKNOWN_SERVICE_TIER)
    else:
        found = tiers.price(base, ts, service_tier, prompt_tokens)
    # one frozen entry per distinct rate set: equal rates share one object, the engine's rate ids stay few
    cache = table.tier_cache
    return cache.setdefault(found, found) if len(cache) < 100_000 else found


def bill(usage: UsageTiers, rates: PricedModel | Rates) -> Fraction:
    """A request's dollars at ``rates``, exactly (Fractions of the written decimals)."""
    return (usage.fresh * written(rates.input) + usage.cache_read * written(rates.cache_read)
            + usage.cache_write_5m * written(rates.cache_write_5m)
            + usage.cache_write_1h * written(rates.cache_write_1h)
            + usage.output * written(rates.output)) / _MILLION


# ---------------------------------------------------------------------------
# loading


Path = tuple[str | int, ...]


def _fail(doc: Located, path: Path, message: str) -> PriceTableError:
    return PriceTableError(str(doc.error(path, message)))


def _explicit(doc: Located, path: Path, body: dict[str, Any], fallback: Rates) -> Rates:
    """Rates a body lists, the rest from ``fallback`` (a rate a tier omits keeps the base rate)."""
    return Rates(*(_number(doc, (*path, key), body[key]) if key in body else getattr(fallback, key)
                   for key in RATE_KEYS))


def _tiers(doc: Located, path: Path, raw: Any, base: Rates) -> tuple[Tier, ...]:
    if not isinstance(raw, list):
        raise _fail(doc, path, f"expected a list of tiers, got {type(raw).__name__}")
    tiers: list[Tier] = []
    for index, item in enumerate(raw):
        tpath = (*path, index)
        body = _mapping(doc, tpath, item, {"above", *RATE_KEYS})
        if "above" not in body:
            raise _fail(doc, tpath, "missing key 'above' (the prompt tokens a tier starts above)")
        above = body["above"]
        if isinstance(above, bool) or not isinstance(above, int) or above <= 0:
            raise _fail(doc, (*tpath, "above"), f"expected a positive whole number of tokens, got {above!r}")
        if tiers and above <= tiers[-1].above:
            raise _fail(doc, (*tpath, "above"), f"tiers must ascend: {above} is not above {tiers[-1].above}")
        if not any(key in body for key in RATE_KEYS):
            raise _fail(doc, tpath, f"a tier lists at least one rate ({', '.join(RATE_KEYS)})")
        tiers.append(Tier(above, _explicit(doc, tpath, body, base)))
    return tuple(tiers)


def _service_tier(doc: Located, path: Path, raw: Any, default: RateSet) -> RateSet:
    body = _mapping(doc, path, raw, {"multiplier", "tiers", *RATE_KEYS})
    if "multiplier" in body:
        if len(body) > 1:
            raise _fail(doc, path, "a service tier is either a multiplier or explicit rates, not both")
        m = _number(doc, (*path, "multiplier"), body["multiplier"], positive=True)
        return RateSet(_scaled(default.base, m), tuple(Tier(t.above, _scaled(t.rates, m)) for t in default.tiers))
    if not body:
        raise _fail(doc, path, "a service tier needs a multiplier or at least one rate")
    base = _explicit(doc, path, body, default.base)
    tiers = () if "tiers" not in body else _tiers(doc, (*path, "tiers"), body["tiers"], base)
    return RateSet(base, tiers)


def _clock(doc: Located, path: Path, value: Any) -> int:
    if not isinstance(value, str) or not _CLOCK.fullmatch(value):
        hint = " (quote it: YAML 1.1 reads an unquoted 16:30 as a number)" if isinstance(value, int) else ""
        raise _fail(doc, path, f"expected a local time \"HH:MM\", got {value!r}{hint}")
    hours, minutes = value.split(":")
    return int(hours) * 60 + int(minutes)


def _window(doc: Located, path: Path, raw: Any) -> Window:
    body = _mapping(doc, path, raw, {"name", "zone", "start", "end", "multiplier", *RATE_KEYS})
    for required in ("name", "zone", "start", "end"):
        if required not in body:
            raise _fail(doc, path, f"missing key {required!r}")
    name = body["name"]
    if not isinstance(name, str) or not _WINDOW_NAME.fullmatch(name):
        raise _fail(doc, (*path, "name"), f"expected a window name of [a-z0-9_], at most 32, got {name!r}")
    zone = body["zone"]
    try:
        if not isinstance(zone, str):
            raise ValueError
        _zone(zone)
    except (ValueError, ZoneInfoNotFoundError):
        raise _fail(doc, (*path, "zone"), f"expected an IANA time zone name (e.g. UTC), got {zone!r}") from None
    start, end = _clock(doc, (*path, "start"), body["start"]), _clock(doc, (*path, "end"), body["end"])
    if start == end:
        raise _fail(doc, (*path, "end"), "a window cannot start and end at the same time")
    multiplier = None
    if "multiplier" in body:
        multiplier = _number(doc, (*path, "multiplier"), body["multiplier"], positive=True)
    rates = tuple((key, _number(doc, (*path, key), body[key])) for key in RATE_KEYS if key in body)
    if multiplier is None and not rates:
        raise _fail(doc, path, "a window needs a multiplier or at least one rate")
    if multiplier is not None and rates:
        raise _fail(doc, path, "a window is either a multiplier or explicit rates, not both")
    return Window(name, zone, start, end, multiplier, rates)


def parse_model_tiers(doc: Located, path: Path, entry: dict[str, Any], base: PricedModel) -> ModelTiers | None:
    """A v2 model's tiers, service tiers and windows (None when it lists none: priced as in v1)."""
    if not any(key in entry for key in V2_MODEL_KEYS):
        return None
    rates = Rates(base.input, base.output, base.cache_read, base.cache_write_5m, base.cache_write_1h)
    raw_tiers = entry.get("tiers")
    default = RateSet(rates, () if raw_tiers is None else _tiers(doc, (*path, "tiers"), raw_tiers, rates))
    services: list[tuple[str, RateSet]] = []
    for name, raw in _mapping(doc, (*path, "service_tiers"), entry.get("service_tiers") or {}, None).items():
        spath = (*path, "service_tiers", name)
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise _fail(doc, spath, f"expected a service tier name of [a-z0-9_-], at most 32, got {name!r}")
        if name in (DEFAULT_SERVICE_TIER, UNKNOWN_SERVICE_TIER):
            raise _fail(doc, spath, f"{name!r} is reserved ({DEFAULT_SERVICE_TIER}: the base rates; "
                                    f"{UNKNOWN_SERVICE_TIER}: a tier the model does not list)")
        services.append((name, _service_tier(doc, spath, raw, default)))
    raw_windows = entry.get("time_windows") or []
    if not isinstance(raw_windows, list):
        raise _fail(doc, (*path, "time_windows"), f"expected a list of windows, got {type(raw_windows).__name__}")
    windows = tuple(_window(doc, (*path, "time_windows", i), raw) for i, raw in enumerate(raw_windows))
    names = [w.name for w in windows]
    for index, name in enumerate(names):
        if name in names[:index]:
            raise _fail(doc, (*path, "time_windows", index, "name"), f"window name {name!r} is not unique")
    return ModelTiers(default, tuple(services), windows)
