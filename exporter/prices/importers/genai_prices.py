"""Convert pydantic's ``genai-prices`` data into a price table v2 (docs/prices.md).

genai-prices keeps, per provider, models with match rules, dated prices
(``ConditionalPrice`` with a ``StartDateConstraint``), time-of-day prices
(``TimeOfDateConstraint``, UTC), whole-request prompt tiers (``TieredPrices``:
crossing a threshold bills *every* token at the tier rate, as the v2 ``tiers``
do) and request-context variants (``price_variants``: ``service_tier`` and
``processing: batch``). This module turns it into our YAML, pure (the
provider objects in, text out); ``exporter.cli.prices`` does the I/O.

- Model names: ``<provider>/<model id>``, each with its genai-prices rule as
  ``match`` (``prices.match``), in genai-prices' order (providers, then their
  models, as listed: the first match wins), and a top-level ``providers`` with
  each provider's ``provider_match``, ``model_match`` and ``fallback``. Rules,
  not aliases: an open rule (``claude-sonnet-4-5-<any date>``) matches names
  nobody listed, and one rule per model reads better than hundreds of aliases.
  The importer checks its rules against genai-prices' own resolution over the
  literal names of every rule (and the caller's extra names).
- Versions: one per distinct start date (plus a base one before all of them,
  priced as genai-prices prices a request older than every date: its first
  price), each complete on its own.
- Rates: ``input_mtok``, ``output_mtok``, ``cache_read_mtok``,
  ``cache_write_mtok`` (our 5-minute write) and ``cache_write_1h_mtok``. What
  genai-prices does not list is written as it bills it: a missing cache-read or
  cache-write rate is the input rate, a missing 1h write the generic write rate,
  a missing output rate 0. Everything else is counted by reason.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, NamedTuple

from exporter.prices.importers.genai_rules import (
    Resolver,
    check_names,
    clause_of,
    clause_text,
    provider_rules,
    provider_text,
)
from exporter.prices.importers.yamltext import quoted
from exporter.prices.match import Clause

BASE_DATE = date(2000, 1, 1)
KEYS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
_USED = {"input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok", "cache_write_1h_mtok"}
_USAGE_ONLY = {"web_searches_kcount", "storage_searches_kcount"}  # priced per use our records never report


class GenaiPricesImportError(ValueError):
    """The input is not genai-prices provider data at all."""


class TierRates(NamedTuple):
    above: int
    rates: tuple[Decimal, ...]  # in KEYS order


class RateSet(NamedTuple):
    base: tuple[Decimal, ...]
    tiers: tuple[TierRates, ...]


class Window(NamedTuple):
    name: str
    start: str
    end: str
    rates: tuple[Decimal, ...]


class ModelState(NamedTuple):
    """One model on one day, as the v2 format writes it."""

    rates: RateSet
    service_tiers: tuple[tuple[str, RateSet], ...]
    windows: tuple[Window, ...]


@dataclass
class ImportResult:
    text: str
    models: int
    versions: int
    rules: int
    skipped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    notes: Counter[str] = field(default_factory=Counter)
    _seen: set[tuple[str, str]] = field(default_factory=set)

    def note(self, reason: str, name: str, skipped: bool = False) -> None:
        """Count ``reason`` once per model (a model is converted once per version)."""
        if (reason, name) in self._seen:
            return
        self._seen.add((reason, name))
        (self.skipped if skipped else self.notes)[reason] += 1
        bucket = self.examples.setdefault(reason, [])
        if len(bucket) < 3:
            bucket.append(name)

    def summary(self) -> str:
        """One line per reason, for the CLI's report."""
        lines = [f"converted {self.models} models in {self.versions} versions with {self.rules} match rules, "
                 f"skipped {sum(self.skipped.values())}"]
        for kind, counter in (("skipped", self.skipped), ("not represented", self.notes)):
            for reason, count in sorted(counter.items(), key=lambda item: (-item[1], item[0])):
                sample = ", ".join(self.examples.get(reason, []))
                lines.append(f"  {kind:<15} {count:5d}  {reason}" + (f"  (e.g. {sample})" if sample else ""))
        return "\n".join(lines)


# ---------------------------------------------------------------------------
# prices


def _at(price: Any, above: int | None) -> Decimal | None:
    """A genai-prices price (a Decimal or TieredPrices) for prompts strictly above ``above``."""
    if price is None or isinstance(price, Decimal):
        return price
    chosen = price.base
    if above is not None:
        for tier in price.tiers:
            if tier.start <= above:
                chosen = tier.price
    return Decimal(chosen)


def _flat(prices: dict[str, Any], above: int | None) -> tuple[Decimal, ...]:
    """Our five rates from a genai-prices price set, filled as calc_price bills the unlisted kinds."""
    inp = _at(prices.get("input_mtok"), above) or Decimal(0)
    out = _at(prices.get("output_mtok"), above)
    read = _at(prices.get("cache_read_mtok"), above)
    write = _at(prices.get("cache_write_mtok"), above)
    write_1h = _at(prices.get("cache_write_1h_mtok"), above)
    return (inp, Decimal(0) if out is None else out, inp if read is None else read,
            inp if write is None else write, (inp if write is None else write) if write_1h is None else write_1h)


def rate_set(prices: dict[str, Any]) -> RateSet:
    """Base rates and whole-request prompt tiers (the union of every kind's thresholds)."""
    thresholds = sorted({tier.start for key in _USED if hasattr(prices.get(key), "tiers")
                         for tier in prices[key].tiers})
    return RateSet(_flat(prices, None), tuple(TierRates(t, _flat(prices, t)) for t in thresholds))


def _prices_dict(model_price: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(model_price).items() if v is not None and not k.startswith("_")}


def _variant_tier(when: dict[str, str]) -> str | None:
    """The service tier a variant's context names, or None when the v2 format has no such field."""
    if when == {"processing": "batch"}:
        return "batch"
    if set(when) == {"service_tier"} and re.fullmatch(r"[a-z0-9_-]{1,32}", when["service_tier"]):
        return when["service_tier"]
    return None


def _clock(value: Any) -> str:
    moment = datetime.combine(date(2000, 1, 1), value)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%H:%M")


def state_at(model: Any, day: date, result: ImportResult, name: str) -> ModelState | None:
    """The model's prices on ``day`` (midnight UTC), as genai-prices' ``get_prices`` resolves them."""
    windows: list[Window] = []
    if isinstance(model.prices, list):
        standard = model.prices[0].prices
        for conditional in reversed(model.prices):
            constraint = conditional.constraint
            if constraint is None or (hasattr(constraint, "start_date") and constraint.start_date <= day):
                standard = conditional.prices
                break
            if hasattr(constraint, "start_time"):
                start, end = _clock(constraint.start_time), _clock(constraint.end_time)
                prices = _prices_dict(conditional.prices)
                window_set = rate_set(prices)
                if window_set.tiers:
                    result.note("time-of-day price with prompt tiers (v2 windows have no tiers)", name)
                    continue
                windows.append(Window(f"utc_{start.replace(':', '')}_{end.replace(':', '')}", start, end,
                                      window_set.base))
    else:
        standard = model.prices
    prices = _prices_dict(standard)
    if prices and "input_mtok" not in prices and "output_mtok" not in prices:
        return None  # priced only by audio seconds, pages, images...: not a token-priced model
    tiers: dict[str, dict[str, Any]] = {}
    for variant in model.price_variants or ():
        constraint = variant.constraint
        if constraint is not None and not (hasattr(constraint, "start_date") and constraint.start_date <= day):
            continue
        tier = _variant_tier(dict(variant.when))
        overrides = _prices_dict(variant.prices)
        if tier is None:
            result.note(f"price variant for {json.dumps(dict(variant.when), sort_keys=True)}", name)
            continue
        if tier == "default":
            if overrides:
                result.note("service_tier default with its own prices (default means base rates)", name)
            continue
        merged = tiers.setdefault(tier, {})
        for key, value in overrides.items():
            merged.setdefault(key, value)
    service = tuple((tier, rate_set({**prices, **over})) for tier, over in sorted(tiers.items()))
    if windows and service:
        result.note("service tiers during a time-of-day price (v2 applies the window's rates)", name)
    return ModelState(rate_set(prices), service, tuple(windows))


# ---------------------------------------------------------------------------
# text


def _num(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text if "." in text else text + ".0"


def _rates_text(rates: tuple[Decimal, ...]) -> str:
    return ", ".join(f"{key}: {_num(value)}" for key, value in zip(KEYS, rates, strict=True))


def _set_text(rates: RateSet) -> str:
    text = _rates_text(rates.base)
    if rates.tiers:
        text += ", tiers: [" + ", ".join(f"{{above: {t.above}, {_rates_text(t.rates)}}}" for t in rates.tiers) + "]"
    return text


def model_line(name: str, provider: str, state: ModelState, aliases: Sequence[str] = (), match: str = "") -> str:
    """One model as a one-line flow mapping (the versions repeat every model: keep them compact)."""
    parts = [f"family: {quoted(provider)}", f"provider: {quoted(provider)}"]
    if aliases:
        parts.append("aliases: [" + ", ".join(quoted(a) for a in aliases) + "]")
    if match:
        parts.append(f"match: {match}")
    parts.append(_set_text(state.rates))
    if state.service_tiers:
        parts.append("service_tiers: {" + ", ".join(f"{quoted(t)}: {{{_set_text(r)}}}"
                                                   for t, r in state.service_tiers) + "}")
    if state.windows:
        parts.append("time_windows: [" + ", ".join(
            f"{{name: {w.name}, zone: UTC, start: {quoted(w.start)}, end: {quoted(w.end)}, {_rates_text(w.rates)}}}"
            for w in state.windows) + "]")
    return f"      {quoted(name)}: {{{', '.join(parts)}}}"


# ---------------------------------------------------------------------------
# the table



def _dates(providers: Sequence[Any]) -> list[date]:
    days = {BASE_DATE}
    for provider in providers:
        for model in provider.models:
            constraints = [c.constraint for c in model.prices] if isinstance(model.prices, list) else []
            constraints += [v.constraint for v in model.price_variants or ()]
            days.update(c.start_date for c in constraints if hasattr(c, "start_date"))
    return sorted(days)


def convert(providers: Sequence[Any], resolve: Resolver, *, source: str, extra_names: Sequence[str] = (),
            since: date | None = None) -> ImportResult:
    """genai-prices providers -> the text of a price table v2, every price change a version.

    With ``since``, only the versions from that day: the first holds the prices in force then
    (older traffic is unpriced, ``before_first_version``), so a table of every provider fits.
    """
    if not isinstance(providers, list | tuple) or not all(hasattr(p, "models") for p in providers):
        raise GenaiPricesImportError("expected genai-prices' list of providers")
    result = ImportResult(text="", models=0, versions=0, rules=0)
    days = _dates(providers)
    if since is not None:
        days = sorted({since, *(d for d in days if d > since)})
    states: dict[str, list[ModelState]] = {}
    owner: dict[str, str] = {}
    rules: dict[str, Clause] = {}
    for provider in providers:
        for model in provider.models:
            name = f"{provider.id}/{model.id}"
            found = [state_at(model, day, result, name) for day in days]
            if any(s is None for s in found):
                result.note("no token price (input_mtok/output_mtok) in some version", name, skipped=True)
                continue
            states[name] = [s for s in found if s is not None]
            owner[name] = provider.id
            rules[name] = clause_of(model.match)
            listed = (c.prices for c in model.prices) if isinstance(model.prices, list) else (model.prices,)
            keys = {k for mp in (*listed, *(v.prices for v in model.price_variants or ())) for k in _prices_dict(mp)}
            for key in sorted(keys - _USED):
                why = ("a per-request fee: bill prices tokens only" if key == "requests_kcount"
                       else "per-use price of a tool our records do not report" if key in _USAGE_ONLY
                       else "a usage kind our records do not carry")
                result.note(f"{key} ({why})", name)
    check_names(providers, resolve, extra_names, rules, owner, result.note)
    texts = {name: clause_text(rule) for name, rule in rules.items()}
    out = [
        f"# Converted from {source} by `llm-savings-exporter prices import-genai-prices`.",
        "# USD per million tokens; tiers bill the whole request above their threshold, as genai-prices does.",
        "# A name resolves by the first model whose `match` rule it matches, as genai-prices resolves it.",
        "schema: llm-savings-prices/v2",
        "providers:",
    ]
    out += [f"  {quoted(pid)}: {{{provider_text(found)}}}" for pid, found in provider_rules(providers).items()]
    out.append("versions:")
    families = sorted(set(owner.values()))
    for index, day in enumerate(days):
        label = "genai-prices-base" if day == BASE_DATE else f"genai-prices-{day.isoformat()}"
        out.append(f"  - version: {quoted(label)}")
        out.append(f"    effective_from: \"{day.isoformat()}T00:00:00Z\"")
        why = "prices before every dated change" if day == BASE_DATE else f"prices from {day.isoformat()}"
        out.append(f"    source: {quoted(f'{source}: {why}')}")
        out.append("    families: {" + ", ".join(f"{quoted(f)}: {{}}" for f in families) + "}")
        out.append("    models:")
        for name in states:  # genai-prices' order: the first model whose rule matches wins
            out.append(model_line(name, owner[name], states[name][index], match=texts[name]))
    result.text = "\n".join(out) + "\n"
    result.models = len(states)
    result.versions = len(days)
    result.rules = len(rules)
    return result


def genai_resolver(snapshot: Any) -> Resolver:
    """genai-prices' own name resolution (``find_provider_model``), naming the model's owner.

    A provider may price another's model (its fallback providers): the name is the owner's.
    """
    owners = {id(model): f"{provider.id}/{model.id}" for provider in snapshot.providers for model in provider.models}

    def resolve(name: str, provider_id: str | None) -> str | None:
        try:
            _, model = snapshot.find_provider_model(name, None, provider_id, None)
        except (LookupError, ValueError):
            return None
        return owners.get(id(model))

    return resolve
