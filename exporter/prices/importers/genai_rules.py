"""genai-prices' match rules as a price table's (``prices.match``), and the check that they resolve alike.

genai-prices resolves a name by rules: the provider (by id or ``provider_match``,
else the first ``model_match``), then its models in order, then its fallback
providers'. The converter writes the same rules; ``check_names`` resolves the
literal names of every rule (and the caller's extra names) both ways and notes
every name that comes out differently. Pure: provider objects in, values out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from exporter.prices.importers.yamltext import quoted
from exporter.prices.match import Clause, Matcher, ProviderRules

Resolver = Callable[[str, str | None], str | None]  # (name, provider id) -> "<provider>/<model>" or None
_DATED = re.compile(r"-(20\d\d)-(\d\d)-(\d\d)(?=-|:|$)")



def clause_literals(clause: Any) -> Iterable[str]:
    """Every literal string in a match rule (candidates: genai-prices' matcher decides what they match)."""
    for attr in ("equals", "starts_with", "ends_with", "contains"):
        if isinstance(getattr(clause, attr, None), str):
            yield getattr(clause, attr)
    for sub in (*(getattr(clause, "or_", None) or ()), *(getattr(clause, "and_", None) or ())):
        yield from clause_literals(sub)


def candidates(providers: Sequence[Any], extra: Iterable[str]) -> list[str]:
    """Names to check: rule literals, model ids, extra names, and compact-date forms of dated ones."""
    names = {n.lower() for n in extra if n.strip()}
    for provider in providers:
        for model in provider.models:
            names.add(model.id.lower())
            names.update(n.lower() for n in clause_literals(model.match))
    names.update([_DATED.sub(r"-\1\2\3", n) for n in names])
    return sorted(n for n in names if n and len(n) < 200)


def clause_of(rule: Any) -> Clause:
    """A genai-prices clause as ours (``prices.match``: the same kinds, the same meaning)."""
    for kind in ("equals", "starts_with", "ends_with", "contains", "regex"):
        if isinstance(getattr(rule, kind, None), str):
            return Clause(kind, getattr(rule, kind))
    for kind, attr in (("or", "or_"), ("and", "and_")):
        if getattr(rule, attr, None) is not None:
            return Clause(kind, "", tuple(clause_of(sub) for sub in getattr(rule, attr)))
    raise ValueError(f"unknown genai-prices match clause {type(rule).__name__}")


def clause_text(clause: Clause) -> str:
    """A clause as a YAML flow mapping (JSON strings: a regex's backslashes survive)."""
    if clause.parts:
        return f"{{{clause.kind}: [{', '.join(clause_text(part) for part in clause.parts)}]}}"
    return f"{{{clause.kind}: {quoted(clause.text)}}}"


def provider_rules(providers: Sequence[Any]) -> dict[str, ProviderRules]:
    """Each provider's rules; fallbacks to providers not imported are left out (their models are not here)."""
    ids = {p.id for p in providers}
    return {p.id: ProviderRules(None if p.provider_match is None else clause_of(p.provider_match),
                                None if p.model_match is None else clause_of(p.model_match),
                                tuple(f for f in p.fallback_model_providers or () if f in ids))
            for p in providers}


def check_names(providers: Sequence[Any], resolve: Resolver, extra: Sequence[str], rules: dict[str, Clause],
                owner: dict[str, str], note: Callable[[str, str], None]) -> None:
    """Our rules resolve every checked name as genai-prices does; a name that does not is noted."""
    matcher = Matcher([(name, owner[name], clause) for name, clause in rules.items()], provider_rules(providers))
    by_id = {p.id: p for p in providers}
    pools: list[tuple[str | None, list[str]]] = [(None, candidates(providers, extra))]
    for p in providers:  # a provider's names: its own and its fallbacks' literals
        pools.append((p.id, candidates([p, *(by_id[f] for f in p.fallback_model_providers or () if f in by_id)],
                                       extra)))
    for provider_id, names in pools:
        for name in names:
            theirs = resolve(name, provider_id)
            ours = matcher.find(name, provider_id)
            if ours != (theirs if theirs in rules else None):
                note("a name our rules resolve otherwise than genai-prices",
                            f"{provider_id or '-'}:{name} -> {ours} (genai-prices: {theirs})")


def provider_text(rules: ProviderRules) -> str:
    """A provider's rules as the inside of a YAML flow mapping."""
    parts = [f"{key}: {clause_text(clause)}" for key, clause in
             (("provider_match", rules.provider_match), ("model_match", rules.model_match)) if clause]
    parts += [f"fallback: [{', '.join(quoted(f) for f in rules.fallback)}]"] if rules.fallback else []
    return ", ".join(parts)
