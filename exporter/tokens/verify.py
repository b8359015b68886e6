"""What ``count`` and ``verify`` compute: counts of one text, and a comparison of methods.

``count_report`` gives one text's exact counts next to the usual estimates.
``verify_report`` compares counting methods (chars/4, bytes/4, tiktoken cl100k_base
and o200k_base) on the packaged corpus in ``exporter/data/corpus/``: it is a
comparison of methods on fixed text, not a validation of stored totals nor of
any provider's tokenizer.

``verify --json`` (schema ``llm-savings-verify/v1``): ``scope``; ``status``
(``ok``, ``partial`` when one encoding is unavailable, ``unavailable`` when
both are); ``corpus`` (class names, sha256 of the texts); ``methods``;
``references``; ``classes.<class>`` and ``overall`` each with ``characters``,
``bytes``, ``counts.<method>`` (null when unavailable) and
``vs.<reference>.<method>`` = ``{diff_tokens, rel_diff}`` (signed: method −
reference, and that over reference); ``overall.mean_abs_rel_diff_over_classes``;
``unavailable.<method>`` = ``{reason, hint}``. Exit 0 unless ``--strict`` and
status is not ``ok``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import Any

from exporter.tokens.counter import TokenCounter
from exporter.tokens.encodings import (
    ESTIMATE_BYTES,
    ESTIMATE_CHARS,
    INSTALL_HINT,
    estimate_bytes4,
    estimate_chars4,
    method_for,
)

VERIFY_SCHEMA = "llm-savings-verify/v1"
VERIFY_SCOPE = (
    "a comparison of counting methods on a fixed corpus, not a validation of stored totals "
    "or of any provider's tokenizer"
)

CORPUS_CLASSES: tuple[str, ...] = ("prose", "structured", "code", "multilingual", "tool_output")
ENCODING_NAMES: tuple[str, ...] = ("o200k_base", "cl100k_base")
REFERENCES: tuple[str, ...] = tuple(method_for(e) for e in ENCODING_NAMES)
VERIFY_METHODS: tuple[str, ...] = (
    ESTIMATE_CHARS,
    ESTIMATE_BYTES,
    method_for("cl100k_base"),
    method_for("o200k_base"),
)


def _rel(value: int, reference: int) -> float | None:
    return None if reference == 0 else (value - reference) / reference


def exact_counts(
    counter: TokenCounter, text: str, encodings: Iterable[str]
) -> tuple[dict[str, int | None], dict[str, dict[str, str]]]:
    """Exact counts per encoding; an unloadable encoding gives None and an 'unavailable' entry."""
    counts: dict[str, int | None] = {}
    unavailable: dict[str, dict[str, str]] = {}
    for name in encodings:
        method = method_for(name)
        if counter.available(name):
            counts[method] = counter.count_encoding(text, name)[0]
        else:
            counts[method] = None
            unavailable[method] = {
                "reason": counter.encoding_errors.get(name, "unavailable"),
                "hint": INSTALL_HINT,
            }
    return counts, unavailable


def count_report(counter: TokenCounter, text: str, encodings: Iterable[str] = ENCODING_NAMES) -> dict[str, Any]:
    """``count``'s result: characters, bytes, exact counts per encoding then the estimates.

    An encoding that does not load counts None and is explained under ``unavailable``.
    """
    exact, unavailable = exact_counts(counter, text, encodings)
    counts: dict[str, int | None] = {
        **exact,
        ESTIMATE_CHARS: estimate_chars4(text),
        ESTIMATE_BYTES: estimate_bytes4(text),
    }
    result: dict[str, Any] = {
        "characters": len(text),
        "bytes": len(text.encode("utf-8", "surrogatepass")),
        "counts": counts,
    }
    if unavailable:
        result["unavailable"] = unavailable
    return result


def load_corpus() -> dict[str, str]:
    """The packaged verify corpus, class name -> text."""
    root = resources.files("exporter").joinpath("data", "corpus")
    return {
        name: root.joinpath(f"{name}.txt").read_text(encoding="utf-8") for name in CORPUS_CLASSES
    }


def _comparison(counts: Mapping[str, int | None]) -> dict[str, dict[str, dict[str, Any] | None]]:
    vs: dict[str, dict[str, dict[str, Any] | None]] = {}
    for ref in REFERENCES:
        ref_n = counts.get(ref)
        row: dict[str, dict[str, Any] | None] = {}
        for method in VERIFY_METHODS:
            if method == ref:
                continue
            n = counts.get(method)
            if ref_n is None or n is None:
                row[method] = None
            else:
                row[method] = {"diff_tokens": n - ref_n, "rel_diff": _rel(n, ref_n)}
        vs[ref] = row
    return vs


def verify_report(counter: TokenCounter, corpus: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Counts of every method per corpus class and overall, with differences to the references."""
    texts = load_corpus() if corpus is None else dict(corpus)
    classes: dict[str, Any] = {}
    totals: dict[str, int | None] = dict.fromkeys(VERIFY_METHODS, 0)
    unavailable: dict[str, dict[str, str]] = {}
    chars = nbytes = 0
    for name, text in texts.items():
        exact, missing = exact_counts(counter, text, ENCODING_NAMES)
        unavailable.update(missing)
        counts: dict[str, int | None] = {
            ESTIMATE_CHARS: estimate_chars4(text),
            ESTIMATE_BYTES: estimate_bytes4(text),
            **exact,
        }
        for method in VERIFY_METHODS:
            n, total = counts.get(method), totals[method]
            totals[method] = None if n is None or total is None else total + n
        b = len(text.encode("utf-8"))
        chars += len(text)
        nbytes += b
        classes[name] = {
            "characters": len(text),
            "bytes": b,
            "counts": {m: counts.get(m) for m in VERIFY_METHODS},
            "vs": _comparison(counts),
        }
    mean_abs: dict[str, dict[str, float | None]] = {}
    for ref in REFERENCES:
        mean_abs[ref] = {}
        for method in VERIFY_METHODS:
            if method == ref:
                continue
            rels = [classes[c]["vs"][ref][method] for c in classes]
            vals = [abs(r["rel_diff"]) for r in rels if r is not None and r["rel_diff"] is not None]
            mean_abs[ref][method] = (
                sum(vals) / len(vals) if vals and len(vals) == len(rels) else None
            )
    n_missing = len(unavailable)
    status = (
        "ok" if n_missing == 0 else ("unavailable" if n_missing == len(REFERENCES) else "partial")
    )
    digest = hashlib.sha256()
    for name in sorted(texts):
        digest.update(name.encode() + b"\0" + texts[name].encode("utf-8") + b"\0")
    return {
        "schema": VERIFY_SCHEMA,
        "scope": VERIFY_SCOPE,
        "status": status,
        "corpus": {"classes": list(texts), "sha256": digest.hexdigest()},
        "methods": list(VERIFY_METHODS),
        "references": list(REFERENCES),
        "classes": classes,
        "overall": {
            "characters": chars,
            "bytes": nbytes,
            "counts": totals,
            "vs": _comparison(totals),
            "mean_abs_rel_diff_over_classes": mean_abs,
        },
        "unavailable": unavailable,
    }
