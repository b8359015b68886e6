#!/usr/bin/env python3
"""Scores of a mutmut run of the arithmetic core, and the sampled check CI runs (scripts/mutation.sh).

    mutation_report.py full            # after a full `mutmut run`: docs/mutation.md, tests/mutation/killed.json
    mutation_report.py pick SEED N     # N killed mutants of the last full run, fixed by SEED, one a line
    mutation_report.py check NAME...   # after `mutmut run NAME...`: fails when one the full run killed survived
    mutation_report.py equivalent NAME REASON  # record a surviving mutant as equivalent, with its digest

A mutant is named by mutmut (``exporter.engine.usage.x_count_value__mutmut_5``) and numbered per
function, so a name means another mutation once its function is edited. Each killed mutant is
therefore stored with a digest of its mutated function's code; ``check`` only holds a mutant to
its old verdict while that digest still matches, and reports the others as stale.

A mutant is *message-only* when all it changes lies inside the text of an error message (see
``MESSAGE_ARGS``): such mutants are set aside from the scores, as the message is for people,
and no count, label or decision depends on it.
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "mutants"
KILLED = ROOT / "tests" / "mutation" / "killed.json"
EQUIVALENT = ROOT / "tests" / "mutation" / "equivalent.json"
DOC = ROOT / "docs" / "mutation.md"
MODULES = (
    "exporter/engine/usage.py",
    "exporter/engine/aggregate.py",
    "exporter/engine/cells.py",  # the cells' dollars, split out of aggregate.py
    "exporter/prices/table.py",
    "exporter/engine/dedupe.py",
    "exporter/engine/records.py",
    "exporter/prices/match.py",  # model-name match rules of a v2 table
    "exporter/prices/memo.py",  # the memo behind PriceTable.lookup
    "exporter/prices/tiers.py",  # prompt tiers, service tiers, time windows and the bill
    "exporter/prices/rates.py",  # PricedModel, the rates every priced record is keyed by
    "exporter/engine/plainpath.py",  # replay's per-record path for plain canonical lines
    "exporter/engine/gateway.py",  # response-cache hits and routing savings
)
TARGET = 95.0

# Calls whose argument at this position (or with this keyword) is message text: (callee name, index).
MESSAGE_ARGS: dict[str, tuple[int, str]] = {
    "_Invalid": (1, "detail"),
    "UsageError": (1, "detail"),
    "Rejection": (1, "detail"),
    "_inconsistent": (0, "detail"),
    "error": (1, "message"),  # doc.error(path, message): the located YAML error
    "PriceTableError": (0, "message"),
    "PriceTableChanging": (0, "message"),
    "ValueError": (0, "message"),
    "RuntimeError": (0, "message"),
}
# mutmut's exit codes, as its stats module names them
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped",
          36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout",
          37: "caught by type check", None: "not checked"}


class Mutant(NamedTuple):
    name: str  # mutmut's key
    module: str  # the source file, relative to the root
    status: str
    digest: str
    message_only: bool


# --- pure: comparing a mutant with its original -----------------------------------------------------


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _differences(a: ast.AST, b: ast.AST, in_message: bool, out: list[bool]) -> None:
    """Walk two trees side by side; append, for each differing subtree, whether it lies in a message."""
    if type(a) is not type(b):
        out.append(in_message)
        return
    message_fields: set[int | str] = set()
    if isinstance(a, ast.Call) and isinstance(b, ast.Call) and _callee(a) == _callee(b) in MESSAGE_ARGS:
        # only its message argument is text: where a located error points (file, line, key) is not
        message_fields = set(MESSAGE_ARGS[_callee(a)])
        in_message = False
    for field in a._fields:
        left, right = getattr(a, field, None), getattr(b, field, None)
        if isinstance(left, list) and isinstance(right, list):
            if len(left) != len(right):
                out.append(in_message)
                continue
            for index, (x, y) in enumerate(zip(left, right, strict=True)):
                inside = in_message or (field == "args" and index in message_fields)
                if isinstance(x, ast.keyword) and isinstance(y, ast.keyword):
                    inside = inside or (x.arg == y.arg and x.arg in message_fields)
                if isinstance(x, ast.AST) and isinstance(y, ast.AST):
                    _differences(x, y, inside, out)
                elif x != y:
                    out.append(inside)
        elif isinstance(left, ast.AST) and isinstance(right, ast.AST):
            _differences(left, right, in_message, out)
        elif left != right:
            out.append(in_message)  # a constant's value, an operator's kind


def is_message_only(original: ast.FunctionDef, mutant: ast.FunctionDef) -> bool:
    """Whether every change of ``mutant`` lies inside a message argument of ``MESSAGE_ARGS``."""
    found: list[bool] = []
    _differences(_body(original), _body(mutant), False, found)
    return bool(found) and all(found)


def _body(node: ast.FunctionDef) -> ast.Module:
    return ast.Module(body=node.body, type_ignores=[])


def digest(node: ast.FunctionDef) -> str:
    """A digest of the mutated function's code (not its name, not its position)."""
    return hashlib.sha256(ast.dump(_body(node), include_attributes=False).encode()).hexdigest()[:16]


def functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """Every function of a mutated module by name, methods included (mutmut's names are unique)."""
    found: dict[str, ast.FunctionDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
    return found


def score(counts: Counter[str]) -> float:
    """Killed (and timed out) over every mutant counted, in percent."""
    total = sum(counts.values())
    return 100.0 * (counts["killed"] + counts["timeout"]) / total if total else 100.0


# --- reading mutmut's results ------------------------------------------------------------------------


def load(root: Path = MUTANTS) -> list[Mutant]:
    """Every mutant of ``MODULES`` with its status, from mutmut's mutated sources and .meta files."""
    mutants = []
    for module in MODULES:
        meta = json.loads((root / (module + ".meta")).read_text())["exit_code_by_key"]
        defs = functions(ast.parse((root / module).read_text()))
        for name, code in meta.items():
            local = name.rsplit(".", 1)[1]  # x_count_value__mutmut_5, xǁUsageErrorǁ__init____mutmut_1
            node = defs[local]
            original = defs[local.rsplit("__mutmut_", 1)[0] + "__mutmut_orig"]
            mutants.append(Mutant(name, module, STATUS.get(code, "suspicious"), digest(node),
                                  is_message_only(original, node)))
    return mutants


def _equivalents() -> dict[str, dict[str, str]]:
    return json.loads(EQUIVALENT.read_text()) if EQUIVALENT.exists() else {}


def killed_set(mutants: list[Mutant], previous: dict[str, str]) -> dict[str, str]:
    """The killed mutants with their digests; a mutant this run did not reach keeps its earlier entry.

    A run limited by name, or stopped before the end, leaves mutants "not checked": their last verdict
    (and its digest, so ``check`` still reports them stale once their function changes) stays in the set.
    """
    killed = {m.name: m.digest for m in mutants if m.status in ("killed", "timeout") and not m.message_only}
    for m in mutants:
        if m.status == "not checked" and m.name in previous:
            killed[m.name] = previous[m.name]
    return killed


def write_full(mutants: list[Mutant], command: str) -> int:
    previous: dict[str, str] = json.loads(KILLED.read_text())["killed"] if KILLED.exists() else {}
    killed = killed_set(mutants, previous)
    KILLED.parent.mkdir(parents=True, exist_ok=True)
    KILLED.write_text(json.dumps({"mutmut": "3.8.1", "killed": dict(sorted(killed.items()))}, indent=1) + "\n")
    equivalent = _equivalents()
    rows, survivors, below = [], [], []
    for module in MODULES:
        mine = [m for m in mutants if m.module == module]
        counts = Counter(m.status for m in mine if not m.message_only)
        not_run = counts.pop("not checked", 0)  # not reached by this run: out of the score
        aside = sum(m.message_only for m in mine)
        kept_equivalent = sum(1 for m in mine if m.status == "survived" and not m.message_only
                              and equivalent.get(m.name, {}).get("digest") == m.digest)
        raw = score(counts)
        # the mutation score proper: equivalent mutants (no test can kill them) are set aside too
        final = score(counts - Counter({"survived": kept_equivalent}))
        caught = counts["killed"] + counts["timeout"]
        ran = sum(counts.values()) > 0  # a module none of whose mutants ran has no score
        scores = f"**{final:.1f}%** | {raw:.1f}%" if ran else "not run | not run"
        rows.append(f"| `{module}` | {len(mine)} | {aside} | {kept_equivalent} | {caught} "
                    f"| {counts['survived'] - kept_equivalent} | {counts['no tests']} | {not_run} "
                    f"| {scores} |")
        if ran and final < TARGET:
            below.append(module)
        for m in mine:
            if m.status not in ("killed", "timeout", "not checked") and not m.message_only:
                reason = equivalent.get(m.name, {})
                why = reason["reason"] if reason.get("digest") == m.digest else "**not equivalent: needs a test**"
                survivors.append(f"| `{m.name.split('.', 3)[-1]}` | {m.status} | {why} |")
    DOC.write_text(DOC_TEMPLATE.format(command=command, rows="\n".join(rows),
                                       survivors="\n".join(survivors) or "| (none) | | |"))
    print(f"wrote {DOC.relative_to(ROOT)} and {KILLED.relative_to(ROOT)} ({len(killed)} killed mutants)")
    if below:
        print(f"below {TARGET}%: {', '.join(below)}", file=sys.stderr)
    return 0


def pick(seed: int, count: int) -> list[str]:
    """``count`` killed mutants of the last full run, the same ones for the same seed and killed set."""
    killed = sorted(json.loads(KILLED.read_text())["killed"])
    return sorted(random.Random(seed).sample(killed, min(count, len(killed))))


def check(names: list[str], mutants: list[Mutant]) -> int:
    """Exit status 1 when a sampled mutant the full run killed now survives (or finds no test)."""
    before: dict[str, str] = json.loads(KILLED.read_text())["killed"]
    now = {m.name: m for m in mutants}
    stale, bad = [], []
    for name in names:
        found = now.get(name)
        if found is None or found.digest != before.get(name):
            stale.append(name)  # its function changed since the full run: not held to the old verdict
        elif found.status not in ("killed", "timeout"):
            bad.append(f"{name}: {found.status} (killed by the last full run; `mutmut show {name}` shows it)")
    print(f"sampled {len(names)} mutants: {len(names) - len(stale) - len(bad)} killed again, "
          f"{len(stale)} stale (function changed since the full run), {len(bad)} no longer killed")
    for line in bad:
        print("  " + line, file=sys.stderr)
    if len(stale) > len(names) // 2:
        print("more than half the sample is stale: run `scripts/mutation.sh full` to refresh the killed set")
    return 1 if bad else 0


def mark_equivalent(name: str, reason: str, mutants: list[Mutant]) -> int:
    """Keep a surviving mutant as equivalent: the reason holds while its mutated code stays the same."""
    found = {m.name: m for m in mutants}.get(name)
    if found is None:
        print(f"no mutant {name!r} in mutants/", file=sys.stderr)
        return 1
    equivalent = _equivalents()
    equivalent[name] = {"digest": found.digest, "reason": reason}
    EQUIVALENT.parent.mkdir(parents=True, exist_ok=True)
    EQUIVALENT.write_text(json.dumps(dict(sorted(equivalent.items())), indent=1, ensure_ascii=False) + "\n")
    return 0


DOC_TEMPLATE = """\
# Mutation testing of the arithmetic core

<!-- generated by scripts/mutation_report.py from the last full run: do not edit by hand -->

The modules that turn usage into dollars are mutation-tested with
[mutmut](https://pypi.org/project/mutmut/) 3.8.1: each mutant is a small change to one
function (an operator, a constant, a dropped argument), and the fast tests that reach the
function must fail on it. A mutant that survives is either a wrong number the suite would let
through, or an *equivalent* mutant that changes no behaviour (each one is listed below with the
reason).

Configuration: `[tool.mutmut]` in `pyproject.toml` (the modules below; each mutant runs
only the tests of `tests/engine/` and `tests/prices/` that reach its function).

## Scores of the last full run

Produced by:

```sh
{command}
```

| module | mutants | message-only | equivalent | killed | other survivors | no tests | not run | score | raw |
|---|---|---|---|---|---|---|---|---|---|
{rows}

The score is killed (timeouts included) over all mutants that are neither message-only nor
equivalent; *raw* counts the equivalent ones as survivors. *Not run* counts the mutants the run
did not reach (a run limited by name, or stopped before the end): they are left out of both
scores, and keep their entry of the previous killed set (`tests/mutation/killed.json`). The target is at least
{target:.0f}% per module, with no "no tests" mutant in code a record passes through.

**Message-only rule.** A mutant is set aside when every change it makes lies inside the text
of an error message: the detail argument of `_Invalid`, `UsageError`, `Rejection` (its second
argument; the first, the bounded `reason`, is a label value and is never set aside) and
`_inconsistent`, the message of `doc.error(path, message)`, or the message of `PriceTableError`,
`PriceTableChanging`, `ValueError` and `RuntimeError`. `scripts/mutation_report.py`
(`is_message_only`) decides it by comparing the mutant's syntax tree with the original's.

## Survivors

| mutant | status | why it is kept |
|---|---|---|
{survivors}

Equivalent mutants and their reasons are kept in `tests/mutation/equivalent.json`, each with
the digest of its mutated code: a reason no longer applies once the function changes.

## In CI: the sampled run

`scripts/test.sh` runs `scripts/mutation.sh sample` after the tests: a fixed-seed sample of
the mutants the last full run killed (listed in `tests/mutation/killed.json`, each with the
digest of its code) is run again, and the step fails when one of them survives. A sampled
mutant whose function has changed since the full run is reported as stale, not held to the
old verdict; run the full mode again to refresh the set:

Measured on 2026-12-01 on the two-core machine (load about 1, `MUTATION_JOBS=2`): the default
sample of 150 mutants takes 68 s from an empty `mutants/` (generation, test stats and the clean
run included). On 2026-12-02, with the twelve modules and 3,347 killed mutants (before the last
98 ran): 259 s at load 2.2 to 1.4, the fast test suite running beside it for its first three
minutes; 95 killed again, 55 stale, none no longer killed. On 2026-12-01, with
`tests/engine/test_dedupe.py` and `test_dedupe_pinned.py` moved away, the same sample failed,
naming the 6 dedupe mutants it held that were no longer killed.

```sh
scripts/mutation.sh full      # all mutants; rewrites this page and tests/mutation/killed.json
scripts/mutation.sh sample    # MUTATION_SEED (default 20) and MUTATION_SAMPLE (default 150) choose the sample
```
""".replace("{target:.0f}", f"{TARGET:.0f}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["full"]:
        return write_full(load(), " ".join(argv[1:]) or "scripts/mutation.sh full")
    if argv[:1] == ["pick"] and len(argv) == 3:
        print("\n".join(pick(int(argv[1]), int(argv[2]))))
        return 0
    if argv[:1] == ["check"]:
        return check(argv[1:], load())
    if argv[:1] == ["equivalent"] and len(argv) == 3:
        return mark_equivalent(argv[1], argv[2], load())
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
