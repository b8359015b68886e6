"""Versioned price table v1 and v2 (docs/prices.md; v2's tiers in ``prices.tiers``, rules in ``prices.match``).

A request is priced by the version whose ``effective_from`` is the latest one not after its ``ts``;
each version is complete on its own. A model unknown to that version is *unpriced*: no dollars are
invented. A missing cache-write rate falls back to its family's multiplier of the input rate, else
to the input rate (no invented premium); a missing cache-read rate to the input rate (no discount).
A model's optional ``tokenizer`` key groups models for ``calibrate``; pricing never reads it.
Validation errors name file, line, key and value (``exporter.yamlpos``). ``PricedModel`` (``prices.rates``) is
frozen and hashable: the aggregates keep the exact rates they counted with (a later table never reprices them).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exporter.prices.rates import PROVIDER_METHOD as PROVIDER_METHOD  # re-exported: its home is prices.rates
from exporter.prices.rates import PricedModel as PricedModel
from exporter.yamlpos import Located, YamlError, load_located

if TYPE_CHECKING:
    from exporter.prices.match import Matcher, ProviderRules
    from exporter.prices.memo import Key, Plan
    from exporter.prices.tiers import ModelTiers

SCHEMA = "llm-savings-prices/v1"
SCHEMA_V2 = "llm-savings-prices/v2"  # v1 + tiers, service_tiers, time_windows (prices.tiers), match (prices.match)
PER_MILLION = 1_000_000.0
BUNDLED_PRICES = Path(__file__).parent.parent / "data" / "prices.yaml"


class PriceTableError(YamlError):
    """A refused price table; the message names file, line, key and value."""


class PriceTableChanging(PriceTableError):
    """The file changed while (or just after) it was read: being written in place; try again later."""


@dataclass(frozen=True, slots=True)
class Family:
    cache_write_5m_multiplier: float | None = None
    cache_write_1h_multiplier: float | None = None
    billed_token_factor: tuple[tuple[str, float], ...] = ()


@dataclass(slots=True)
class PriceVersion:
    version: str
    effective_from: float
    effective_from_text: str
    source: str
    families: dict[str, Family]
    models: dict[str, PricedModel]
    aliases: dict[str, str]
    model_meta: dict[str, dict[str, str]] = field(default_factory=dict)
    tiers: dict[str, ModelTiers] = field(default_factory=dict)  # v2 models with tiers, by model name
    matcher: Matcher | None = None  # v2 models' match rules, compiled

    def resolve(self, model: str, provider: str | None = None) -> PricedModel | None:
        """Exact name, alias, ``<provider>/<name>``, match rules (prices.match: first, with ``providers``)."""
        matcher = self.matcher
        name = matcher.find_first(model, provider) if matcher is not None else None
        if name is None:
            name = model if model in self.models else self.aliases.get(model)
        if name is None and provider:
            qualified = f"{provider}/{model}"
            name = qualified if qualified in self.models else self.aliases.get(qualified)
        if name is None and matcher is not None:
            name = matcher.find_last(model, provider)
        return None if name is None else self.models[name]

    def tokenizer(self, model: str) -> str | None:  # the model's ``tokenizer`` key: models tokenizing alike share it
        return self.model_meta.get(model, {}).get("tokenizer")


class PriceTable:
    """All versions of one table file, ordered by ``effective_from``."""

    def __init__(self, versions: list[PriceVersion], sha256: str, path: str) -> None:
        self.versions = sorted(versions, key=lambda v: v.effective_from)
        self._starts = [v.effective_from for v in self.versions]
        # (start, end, index) of each version's window, index -1 before the first: lookup tests the last one
        # used before it bisects (consecutive requests mostly fall in one version), read and set as one tuple
        # so a lookup on another thread never pairs one window's bounds with another's index
        bounds = [-math.inf, *self._starts, math.inf]
        self._windows = [(bounds[i], bounds[i + 1], i - 1) for i in range(len(bounds) - 1)]
        self._window = self._windows[-1]
        self.sha256, self.path = sha256, path
        self._cache: dict[tuple[int, str, str | None], PricedModel | str] = {}
        self._memo: dict[Key, PricedModel | str | Plan] = {}  # lookup's results (prices.memo)
        self.tier_cache: dict[PricedModel, PricedModel] = {}  # prices.tiers.priced_as

    def version_at(self, ts: float) -> PriceVersion | None:
        index = bisect_right(self._starts, ts) - 1
        return self.versions[index] if index >= 0 else None

    def lookup(self, model: str, ts: float, provider: str | None = None, *, service_tier: str | None = None,
               prompt_tokens: int = 0) -> PricedModel | str:
        """The rates for ``model`` at ``ts`` (service tier, prompt size, time of day), or why unpriced (prices.memo)."""
        start, end, index = self._window
        if not start <= ts < end:  # another version's window (or NaN): the bisect, and its window kept
            index = bisect_right(self._starts, ts) - 1
            self._window = self._windows[index + 1]
        key = (index, model, provider, service_tier)
        hit = self._memo.get(key)
        if hit is None:
            from exporter.prices.memo import plan
            hit = plan(self, key, self._memo)
        if type(hit) is PricedModel or type(hit) is str:  # rates no prompt size or time of day changes; unpriced
            return hit
        # a Plan (not cast(): a call per request). Prompt tiers only, no time windows: its slot is the prompt
        # tier's (Plan.at's arithmetic without the call), once memoised
        if hit.prompt_only:  # type: ignore[union-attr]
            found = hit.slots[bisect_left(hit.aboves, prompt_tokens)]  # type: ignore[union-attr]
            if found is not None:
                return found
        return hit.at(ts, prompt_tokens)  # type: ignore[union-attr]

    def prompt_tier_thresholds(self, model: str, ts: float, provider: str | None,
                               service_tier: str | None) -> list[int] | None:
        """The prompt-size thresholds when only the prompt size changes these rates at ``ts`` (else None).

        Between two thresholds every ``lookup`` of these arguments in this version returns the same rates.
        """
        from exporter.prices.memo import Plan, plan

        key = (bisect_right(self._starts, ts) - 1, model, provider, service_tier)
        hit = self._memo.get(key)
        if hit is None:
            hit = plan(self, key, self._memo)
        return hit.aboves if type(hit) is Plan and hit.prompt_only else None

    def tiers_of(self, priced: PricedModel, ts: float) -> ModelTiers | None:  # None: priced as in v1
        version = self.version_at(ts)
        return version.tiers.get(priced.model) if version is not None else None

    def _lookup(self, model: str, ts: float, provider: str | None) -> PricedModel | str:
        index = bisect_right(self._starts, ts) - 1
        key = (index, model, provider)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        priced = self.versions[index].resolve(model, provider) if index >= 0 else None
        result: PricedModel | str = priced or ("unknown_model" if index >= 0 else "before_first_version")
        if len(self._cache) >= 100_000:  # unknown model names are unbounded: start again, never stop caching
            self._cache.clear()
        self._cache[key] = result
        return result

    @property
    def newest(self) -> PriceVersion:
        return self.versions[-1]


# ---------------------------------------------------------------------------
# loading and validation

_VERSION_KEYS = {"version", "effective_from", "source", "families", "models"}
_FAMILY_KEYS = {"cache_write_5m_multiplier", "cache_write_1h_multiplier", "billed_token_factor"}
_MODEL_RATE_KEYS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
_MODEL_KEYS = {"family", "aliases", "provider", "source", "retrieved", "tokenizer", *_MODEL_RATE_KEYS}
_MODEL_KEYS_V2 = {*_MODEL_KEYS, "tiers", "service_tiers", "time_windows", "match"}
# A tokenizer key names a tokenizer, not a text: short, no spaces (it keys calibrate's groups).
_TOKENIZER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/+-]{0,63}")


def _number(doc: Located, path: tuple[str | int, ...], value: Any, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        hint = ""
        if isinstance(value, str) and re.fullmatch(r"[0-9.]+e-?[0-9]+", value):
            hint = " (YAML 1.1 reads exponents without a dot as strings: write 1.0e-6)"
        raise PriceTableError(str(doc.error(path, f"expected a number, got {value!r}{hint}")))
    try:
        number = float(value)
    except OverflowError:  # an integer with hundreds of digits
        number = math.inf
    if not math.isfinite(number) or number < 0 or (positive and number == 0):
        raise PriceTableError(str(doc.error(path, f"expected a {'positive' if positive else 'non-negative'} "
                                                  f"finite number, got {value!r}")))
    return number


def _string(doc: Located, path: tuple[str | int, ...], value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise PriceTableError(str(doc.error(path, f"expected a non-empty string, got {value!r}")))
    return value


def _mapping(doc: Located, path: tuple[str | int, ...], value: Any, allowed: set[str] | None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PriceTableError(str(doc.error(path, f"expected a mapping, got {type(value).__name__}")))
    if allowed is not None:
        for key in value:
            if key not in allowed:
                raise PriceTableError(str(doc.error((*path, key),
                                                    f"unknown key {key!r} (allowed: {', '.join(sorted(allowed))})")))
    return value


def _timestamp(doc: Located, path: tuple[str | int, ...], value: Any) -> tuple[float, str]:
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return moment.timestamp(), moment.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        moment = datetime(value.year, value.month, value.day, tzinfo=UTC)
        return moment.timestamp(), moment.isoformat().replace("+00:00", "Z")
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise PriceTableError(str(doc.error(path, f"expected an RFC 3339 timestamp, got {value!r}"))) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp(), value
    raise PriceTableError(str(doc.error(path, f"expected an RFC 3339 timestamp, got {value!r}")))


def _family(doc: Located, path: tuple[str | int, ...], raw: Any) -> Family:
    body = _mapping(doc, path, raw, _FAMILY_KEYS)
    m5 = body.get("cache_write_5m_multiplier")
    m1 = body.get("cache_write_1h_multiplier")
    factors_raw = body.get("billed_token_factor") or {}
    factors_map = _mapping(doc, (*path, "billed_token_factor"), factors_raw, None)
    factors = tuple(
        sorted(
            (str(method), _number(doc, (*path, "billed_token_factor", method), value, positive=True))
            for method, value in factors_map.items()
        )
    )
    for method, _ in factors:
        if method == PROVIDER_METHOD:
            raise PriceTableError(str(doc.error((*path, "billed_token_factor", method),
                                                "the 'provider' method is exact by definition (factor 1)")))
    return Family(
        None if m5 is None else _number(doc, (*path, "cache_write_5m_multiplier"), m5, positive=True),
        None if m1 is None else _number(doc, (*path, "cache_write_1h_multiplier"), m1, positive=True),
        factors,
    )


def _version(doc: Located, index: int, raw: Any, v2: bool = False,
             providers: dict[str, ProviderRules] | None = None) -> PriceVersion:
    path: tuple[str | int, ...] = ("versions", index)
    body = _mapping(doc, path, raw, _VERSION_KEYS)
    for required in ("version", "effective_from", "models"):
        if required not in body:
            raise PriceTableError(str(doc.error(path, f"missing key {required!r}")))
    version = body["version"]
    if isinstance(version, date | int | float) and not isinstance(version, bool):
        version = str(version)  # an unquoted 2026-11-01 is read as a date; the label is its text
    version = _string(doc, (*path, "version"), version)
    effective, effective_text = _timestamp(doc, (*path, "effective_from"), body["effective_from"])
    source = body.get("source", "")
    if not isinstance(source, str):
        raise PriceTableError(str(doc.error((*path, "source"), f"expected a string, got {source!r}")))
    families = {str(name): _family(doc, (*path, "families", name), fam)
                for name, fam in _mapping(doc, (*path, "families"), body.get("families") or {}, None).items()}
    models: dict[str, PricedModel] = {}
    aliases: dict[str, str] = {}
    meta: dict[str, dict[str, str]] = {}
    for name, raw_model in _mapping(doc, (*path, "models"), body["models"], None).items():
        mpath = (*path, "models", name)
        entry = _mapping(doc, mpath, raw_model, _MODEL_KEYS_V2 if v2 else _MODEL_KEYS)
        for required in ("input", "output"):
            if required not in entry:
                raise PriceTableError(str(doc.error(mpath, f"missing key {required!r}")))
        family_name = entry.get("family", "")
        if family_name and not isinstance(family_name, str):
            raise PriceTableError(str(doc.error((*mpath, "family"), f"expected a string, got {family_name!r}")))
        if family_name and family_name not in families:
            # a typo here would silently drop the family's cache-write premium and factors
            raise PriceTableError(str(doc.error((*mpath, "family"), f"family {family_name!r} is not defined under "
                f"versions[{index}].families (defined: {', '.join(sorted(families)) or 'none'}); add "
                f"`{family_name}: {{}}` if it has no premium and no factors")))
        family = families[family_name] if family_name else Family()
        rates = {key: _number(doc, (*mpath, key), entry[key]) for key in _MODEL_RATE_KEYS if key in entry}
        base = rates["input"]
        if "cache_write_5m" not in rates:
            rates["cache_write_5m"] = base * (family.cache_write_5m_multiplier or 1.0)
        if "cache_write_1h" not in rates:
            rates["cache_write_1h"] = base * (family.cache_write_1h_multiplier or 1.0)
        rates.setdefault("cache_read", base)
        models[name] = PricedModel(
            version=version,
            model=name,
            family=family_name,
            input=rates["input"],
            output=rates["output"],
            cache_read=rates["cache_read"],
            cache_write_5m=rates["cache_write_5m"],
            cache_write_1h=rates["cache_write_1h"],
            factors=family.billed_token_factor,
        )
        if "tokenizer" in entry and not (isinstance(tok := entry["tokenizer"], str) and _TOKENIZER.fullmatch(tok)):
            raise PriceTableError(str(doc.error((*mpath, "tokenizer"), "expected a tokenizer name (letters, digits, "
                                                f". _ : / + -, at most 64 characters), got {tok!r}")))
        meta[name] = {k: str(entry[k]) for k in ("provider", "source", "retrieved", "tokenizer") if k in entry}
        alias_list = entry.get("aliases") or []
        if not isinstance(alias_list, list):
            raise PriceTableError(str(doc.error((*mpath, "aliases"), "expected a list of strings")))
        for alias_index, alias in enumerate(alias_list):
            alias = _string(doc, (*mpath, "aliases", alias_index), alias)
            if alias in aliases and aliases[alias] != name:
                raise PriceTableError(str(doc.error((*mpath, "aliases", alias_index),
                                                    f"alias {alias!r} already names {aliases[alias]!r}")))
            aliases[alias] = name
    for alias in aliases:
        if alias in models:
            raise PriceTableError(str(doc.error((*path, "models", alias),
                                                f"{alias!r} is both a model and an alias of {aliases[alias]!r}")))
    tiers: dict[str, ModelTiers] = {}
    matcher = None
    if v2:
        from exporter.prices.tiers import parse_model_tiers
        for name, raw_model in body["models"].items():
            found = parse_model_tiers(doc, (*path, "models", name), raw_model, models[name])
            if found is not None:
                tiers[name] = found
        from exporter.prices.match import version_matcher
        matcher = version_matcher(doc, path, body["models"], {n: m.get("provider", "") for n, m in meta.items()},
                                  providers)
    return PriceVersion(version, effective, effective_text, source, families, models, aliases, meta, tiers, matcher)


def parse_price_table(text: str, filename: str) -> PriceTable:
    """Validate a price table document; raises ``PriceTableError`` naming file, line, key, value."""
    try:
        doc = load_located(text, filename)
    except YamlError as exc:
        raise PriceTableError(str(exc)) from None
    top = _mapping(doc, (), doc.data, {"schema", "versions", "providers"})
    if top.get("schema") not in (SCHEMA, SCHEMA_V2):
        raise PriceTableError(str(doc.error(("schema",), f"expected {SCHEMA!r} or {SCHEMA_V2!r}, "
                                                         f"got {top.get('schema')!r}")))
    raw_versions = top.get("versions")
    if not isinstance(raw_versions, list) or not raw_versions:
        raise PriceTableError(str(doc.error(("versions",), "expected a non-empty list of versions")))
    v2 = top.get("schema") == SCHEMA_V2
    if "providers" in top and not v2:
        raise PriceTableError(str(doc.error(("providers",), f"providers is a {SCHEMA_V2!r} key")))
    from exporter.prices.match import parse_providers
    providers = parse_providers(doc, top["providers"]) if "providers" in top else None
    versions = [_version(doc, index, raw, v2, providers) for index, raw in enumerate(raw_versions)]
    seen: dict[str, int] = {}
    starts: dict[float, int] = {}
    for index, version in enumerate(versions):
        if version.version in seen:
            raise PriceTableError(str(doc.error(("versions", index, "version"),
                                                f"version {version.version!r} is not unique")))
        if version.effective_from in starts:
            raise PriceTableError(str(doc.error(("versions", index, "effective_from"),
                                                f"same effective_from as versions[{starts[version.effective_from]}]")))
        seen[version.version] = index
        starts[version.effective_from] = index
    return PriceTable(versions, hashlib.sha256(text.encode()).hexdigest(), filename)


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def load_price_table(path: str | Path | None = None, settle_seconds: float = 0.0,
                     sleep: Callable[[float], None] = time.sleep) -> PriceTable:
    """Load a table file (default: the bundled one).

    With ``settle_seconds`` > 0 the file must look the same (device, inode, size,
    mtime) before the read and ``settle_seconds`` after it, and the bytes read must
    be its whole size: a table being written in place raises ``PriceTableChanging``
    (even when the prefix read happens to parse) instead of loading a truncated one.
    """
    file = Path(path) if path is not None else BUNDLED_PRICES
    try:
        before = os.stat(file)
        raw = file.read_bytes()
        if settle_seconds > 0:
            sleep(settle_seconds)
        after = os.stat(file)
    except OSError as exc:
        raise PriceTableError(f"{file}: cannot read price table: {exc.strerror}") from None
    if settle_seconds > 0 and (_identity(before) != _identity(after) or len(raw) != after.st_size):
        raise PriceTableChanging(f"{file}: price table changed while being read ({before.st_size} -> "
                                 f"{after.st_size} bytes); it is being written, retrying")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PriceTableError(f"{file}: price table is not UTF-8") from None
    table = parse_price_table(text, str(file))
    table.sha256 = hashlib.sha256(raw).hexdigest()
    return table
