"""Model-name match rules of a price table v2 (docs/prices.md), with genai-prices' meaning. Pure: no I/O.

A model may carry ``match``: a clause tree of ``equals``, ``starts_with``,
``ends_with``, ``contains``, ``regex``, ``or`` and ``and``. A name is
lower-cased before it is matched (genai-prices lower-cases every model
reference); ``equals``/``starts_with``/``ends_with``/``contains`` compare with
the literal lower-cased too, ``regex`` is ``re.search`` of the pattern as
written on the lower-cased name. A name no rule matches is tried once more with
a compact date (``-20251211``) written with dashes (``-2025-12-11``).

The table's optional top-level ``providers`` (v2) says how a provider is
chosen, as genai-prices chooses it: a record's provider by id, else by the
first ``provider_match`` (in file order); a record without one by the first
``model_match``. The provider's own models are then tried in table order, then
those of each of its ``fallback`` providers (one step). Without ``providers``
the models of the record's provider (the model's ``provider`` key) are tried,
or every model when the record names none.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date
from functools import lru_cache
from typing import Any, NamedTuple

from exporter.prices.table import PriceTableError
from exporter.yamlpos import Located

Path = tuple[str | int, ...]
LITERAL_KINDS = ("equals", "starts_with", "ends_with", "contains")
LIST_KINDS = ("or", "and")
KINDS = (*LITERAL_KINDS, "regex", *LIST_KINDS)
PROVIDER_KEYS = {"provider_match", "model_match", "fallback"}
MAX_RULE_DEPTH = 16  # genai-prices' deepest rule is 3 levels; deeper is a mistake, not a name
_COMPACT_DATE = re.compile(r"(-)(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?=-|:|$)")


class Clause(NamedTuple):
    """One clause: ``kind`` with a literal (``text``) or sub-clauses (``parts``)."""

    kind: str
    text: str = ""
    parts: tuple[Clause, ...] = ()


class ProviderRules(NamedTuple):
    """How one provider is found (``provider_match``, ``model_match``) and whose models it falls back to."""

    provider_match: Clause | None
    model_match: Clause | None
    fallback: tuple[str, ...]


Test = Callable[[str], bool]


def _error(doc: Located, path: Path, message: str) -> PriceTableError:
    return PriceTableError(str(doc.error(path, message)))


def parse_clause(doc: Located, path: Path, raw: Any, depth: int = 0) -> Clause:
    """A clause tree from YAML; ``PriceTableError`` naming file:line, key path and what is wrong."""
    if depth > MAX_RULE_DEPTH:
        raise _error(doc, path, f"match rule nested more than {MAX_RULE_DEPTH} levels deep")
    if not isinstance(raw, dict) or len(raw) != 1:
        got = f"{len(raw)} keys" if isinstance(raw, dict) else type(raw).__name__
        raise _error(doc, path, f"expected a clause: a mapping with one of {', '.join(KINDS)}, got {got}")
    kind, value = next(iter(raw.items()))
    where = (*path, kind)
    if kind in LIST_KINDS:
        if not isinstance(value, list) or not value:
            raise _error(doc, where, f"expected a non-empty list of clauses, got {value!r}")
        return Clause(kind, "", tuple(parse_clause(doc, (*where, i), sub, depth + 1) for i, sub in enumerate(value)))
    if kind not in KINDS:
        raise _error(doc, where, f"unknown clause {kind!r} (allowed: {', '.join(KINDS)})")
    if not isinstance(value, str) or not value:
        raise _error(doc, where, f"expected a non-empty string, got {value!r}")
    if kind == "regex":
        try:
            re.compile(value)
        except re.error as exc:
            raise _error(doc, where, f"bad regex {value!r}: {exc}") from None
    return Clause(kind, value)


def parse_providers(doc: Located, raw: Any) -> dict[str, ProviderRules]:
    """The top-level ``providers`` mapping: id -> rules, in file order."""
    if not isinstance(raw, dict) or not raw:
        raise _error(doc, ("providers",), "expected a non-empty mapping of provider ids")
    out: dict[str, ProviderRules] = {}
    for pid, body in raw.items():
        path: Path = ("providers", pid)
        if pid != pid.strip().lower() or not pid:
            raise _error(doc, path, f"a provider id is lower-case without spaces, got {pid!r}")
        if not isinstance(body, dict):
            raise _error(doc, path, f"expected a mapping, got {type(body).__name__}")
        for key in body:
            if key not in PROVIDER_KEYS:
                raise _error(doc, (*path, key), f"unknown key {key!r} (allowed: {', '.join(sorted(PROVIDER_KEYS))})")
        fallback = body.get("fallback") or []
        if not isinstance(fallback, list) or not all(isinstance(f, str) and f for f in fallback):
            raise _error(doc, (*path, "fallback"), f"expected a list of provider ids, got {fallback!r}")
        clauses = {key: None if body.get(key) is None else parse_clause(doc, (*path, key), body[key])
                   for key in ("provider_match", "model_match")}
        out[pid] = ProviderRules(clauses["provider_match"], clauses["model_match"], tuple(fallback))
    for pid, rules in out.items():
        for index, other in enumerate(rules.fallback):
            if other not in out:
                raise _error(doc, ("providers", pid, "fallback", index), f"provider {other!r} is not listed under "
                                                                       "providers")
    return out


@lru_cache(maxsize=65536)
def compile_clause(clause: Clause) -> Test:
    """A test on a lower-cased name (versions repeat their models' rules: compiled once each)."""
    kind, text = clause.kind, clause.text.lower()
    if kind == "equals":
        return text.__eq__
    if kind == "starts_with":
        return lambda name: name.startswith(text)
    if kind == "ends_with":
        return lambda name: name.endswith(text)
    if kind == "contains":
        return lambda name: text in name
    if kind == "regex":
        search = re.compile(clause.text).search
        return lambda name: search(name) is not None
    tests = tuple(compile_clause(part) for part in clause.parts)
    if kind == "or":
        return lambda name: any(test(name) for test in tests)
    return lambda name: all(test(name) for test in tests)


def matches(clause: Clause, name: str) -> bool:
    """Whether ``name`` (any case) matches ``clause``."""
    return compile_clause(clause)(name.lower())


def dashed_date(name: str) -> str:
    """``gpt-5.2-20251211`` -> ``gpt-5.2-2025-12-11`` (real dates only), as genai-prices retries a name."""

    def replace(found: re.Match[str]) -> str:
        year, month, day = (int(found.group(i)) for i in range(2, 5))
        try:
            date(year, month, day)
        except ValueError:
            return found.group(0)
        return f"{found.group(1)}{year:04d}-{month:02d}-{day:02d}"

    return _COMPACT_DATE.sub(replace, name)


class Matcher:
    """The match rules of one price version, compiled: ``find(name, provider)`` -> model name or None."""

    def __init__(self, rules: Sequence[tuple[str, str, Clause]], providers: dict[str, ProviderRules] | None) -> None:
        """``rules``: (model, its provider, clause) in table order."""
        self._all = _Pool([(model, clause) for model, _, clause in rules])
        owners: dict[str, list[tuple[str, Clause]]] = {}
        for model, owner, clause in rules:
            owners.setdefault(owner, []).append((model, clause))
        self._by_provider = {owner: _Pool(entries) for owner, entries in owners.items()}
        # Without ``providers``: a record naming a provider (any case) tries that provider's rules and
        # the rules of models with no ``provider`` key, in table order; an unknown provider only the latter.
        self._unowned = _Pool([(model, clause) for model, owner, clause in rules if not owner])
        self._with_unowned = {
            key: _Pool([(model, clause) for model, owner, clause in rules if owner.lower() in (key, "")])
            for key in {owner.lower() for owner in owners if owner}}
        self._providers = providers
        self._tests = {pid: (None if r.provider_match is None else compile_clause(r.provider_match),
                             None if r.model_match is None else compile_clause(r.model_match))
                       for pid, r in (providers or {}).items()}

    def find_first(self, name: str, provider: str | None) -> str | None:
        """With ``providers``, rules come before exact names (genai-prices' resolution: ``openai/gpt-4o`` sent
        to OpenRouter is OpenRouter's model, not the table's ``openai/gpt-4o``)."""
        return self.find(name, provider) if self._providers is not None else None

    def find_last(self, name: str, provider: str | None) -> str | None:
        """Without ``providers``, rules come after exact names, aliases and ``<provider>/<name>``."""
        return self.find(name, provider) if self._providers is None else None

    def find(self, name: str, provider: str | None) -> str | None:
        ref = name.lower()
        if self._providers is None:
            pool = self._all if not provider else self._with_unowned.get(provider.lower().strip(), self._unowned)
            return self._search([pool], ref)
        chosen: str | None = None
        if provider:
            if provider.lower() == "litellm" and "/" in ref:  # LiteLLM's "<provider>/<model>" names
                head, rest = ref.split("/", 1)
                if head and self._provider_id(head):
                    provider, ref = head, rest
            chosen = self._provider_id(provider)
            if chosen is None and provider.lower() != "litellm":
                return None
        if chosen is None:
            chosen = next((pid for pid, (_, test) in self._tests.items() if test is not None and test(ref)), None)
            if chosen is None:
                return None
        own = self._by_provider.get(chosen, _EMPTY)
        return self._search([own, *(self._by_provider.get(f, _EMPTY) for f in self._providers[chosen].fallback)],
                            ref)

    def _provider_id(self, provider: str) -> str | None:
        wanted = provider.lower().strip()
        if wanted in self._tests:
            return wanted
        return next((pid for pid, (test, _) in self._tests.items() if test is not None and test(wanted)), None)

    def _search(self, pools: Sequence[_Pool], ref: str) -> str | None:
        """The first model of the first pool matching ``ref``, else its dashed-date form."""
        dashed = dashed_date(ref)
        for candidate in (ref, dashed) if dashed != ref else (ref,):
            for pool in pools:
                found = pool.first(candidate)
                if found is not None:
                    return found
        return None


def _literals(clause: Clause) -> list[str] | None:
    """The names a rule of only ``equals`` (or an ``or`` of them) matches, lower-cased; None for any other."""
    if clause.kind == "equals":
        return [clause.text.lower()]
    if clause.kind != "or":
        return None
    found: list[str] = []
    for part in clause.parts:
        sub = _literals(part)
        if sub is None:
            return None
        found += sub
    return found


class _Pool:
    """Models in order; the rules that only list names are a dict, so a name costs the open rules before it."""

    def __init__(self, entries: Sequence[tuple[str, Clause]]) -> None:
        self.models = [model for model, _ in entries]
        self.names: dict[str, int] = {}
        self.open: list[tuple[int, Test]] = []
        for position, (_, clause) in enumerate(entries):
            literals = _literals(clause)
            if literals is None:
                self.open.append((position, compile_clause(clause)))
            for literal in literals or ():
                self.names.setdefault(literal, position)

    def first(self, ref: str) -> str | None:
        listed = self.names.get(ref, len(self.models))
        for position, test in self.open:
            if position > listed:
                break
            if test(ref):
                return self.models[position]
        return self.models[listed] if listed < len(self.models) else None


_EMPTY = _Pool(())


def version_matcher(doc: Located, path: Path, models: dict[str, Any], owners: dict[str, str],
                    providers: dict[str, ProviderRules] | None) -> Matcher | None:
    """The compiled rules of one version's ``models`` (``owners``: each model's ``provider`` key)."""
    rules: list[tuple[str, str, Clause]] = []
    for name, entry in models.items():
        if not isinstance(entry, dict) or "match" not in entry:
            continue
        owner = owners.get(name, "")
        if providers is not None and owner not in providers:
            raise _error(doc, (*path, "models", name, "provider"),
                            f"a model with a match rule names a provider listed under providers, got {owner!r}")
        rules.append((name, owner, parse_clause(doc, (*path, "models", name, "match"), entry["match"])))
    return Matcher(rules, providers) if rules or providers else None
