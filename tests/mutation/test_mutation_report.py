"""scripts/mutation_report.py: which mutants are message-only, and the digests the sampled run relies on."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mutation_report.py"


@pytest.fixture(scope="module")
def report() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_report", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutation_report"] = module
    spec.loader.exec_module(module)
    return module


ORIGINAL = '''
def f(value, where):
    if value < 0:
        raise UsageError("invalid_count", f"{where} is negative: {value}")
    if value > 10:
        raise PriceTableError(str(doc.error(path, f"expected at most 10, got {value!r}")))
    return value + 1
'''


def fn(source: str) -> ast.FunctionDef:
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


@pytest.mark.parametrize(
    ("before", "after", "message_only"),
    [
        ('f"{where} is negative: {value}"', 'f"XX{where} is negative: {value}XX"', True),
        ('f"{where} is negative: {value}"', "None", True),
        ('f"expected at most 10, got {value!r}"', 'f"XXexpected at most 10, got {value!r}XX"', True),
        ('f"expected at most 10, got {value!r}"', 'f"expected at most 10, got {value!s}"', True),
        ('"invalid_count"', '"XXinvalid_countXX"', False),  # the reason is a label value
        ('"invalid_count"', "None", False),
        ("value < 0", "value <= 0", False),
        ("value + 1", "value - 1", False),
        ("doc.error(path, ", "doc.error(None, ", False),  # where the error points is not its text
    ],
)
def test_message_only_mutants(report: ModuleType, before: str, after: str, message_only: bool) -> None:
    assert before in ORIGINAL
    assert report.is_message_only(fn(ORIGINAL), fn(ORIGINAL.replace(before, after, 1))) is message_only


def test_an_unchanged_function_is_not_message_only(report: ModuleType) -> None:
    assert not report.is_message_only(fn(ORIGINAL), fn(ORIGINAL))


def test_a_dropped_message_argument_is_not_message_only(report: ModuleType) -> None:
    mutant = ORIGINAL.replace('raise UsageError("invalid_count", f"{where} is negative: {value}")',
                              'raise UsageError("invalid_count", )')
    assert not report.is_message_only(fn(ORIGINAL), fn(mutant))


def test_the_digest_ignores_name_and_position_but_not_code(report: ModuleType) -> None:
    renamed = fn("\n\n\n" + ORIGINAL.replace("def f(", "def x_f__mutmut_7("))
    assert report.digest(renamed) == report.digest(fn(ORIGINAL))
    assert report.digest(fn(ORIGINAL.replace("value + 1", "value + 2"))) != report.digest(fn(ORIGINAL))


def test_score_counts_timeouts_as_killed(report: ModuleType) -> None:
    assert report.score(Counter(killed=18, timeout=1, survived=1)) == 95.0
    assert report.score(Counter()) == 100.0
    assert report.score(Counter({"killed": 1, "no tests": 1})) == 50.0


def test_the_sample_is_fixed_by_its_seed(report: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    killed = tmp_path / "killed.json"
    killed.write_text(json.dumps({"killed": {f"m.x_f__mutmut_{n}": "d" for n in range(50)}}))
    monkeypatch.setattr(report, "KILLED", killed)
    first = report.pick(20, 10)
    assert first == report.pick(20, 10) and len(set(first)) == 10
    assert first != report.pick(21, 10)
    assert len(report.pick(20, 500)) == 50


def test_check_fails_on_a_killed_mutant_that_survives_and_skips_stale_ones(
    report: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed = tmp_path / "killed.json"
    killed.write_text(json.dumps({"killed": {"m.a": "1", "m.b": "2", "m.c": "3"}}))
    monkeypatch.setattr(report, "KILLED", killed)
    mutant = report.Mutant
    now = [mutant("m.a", "m.py", "killed", "1", False), mutant("m.b", "m.py", "killed", "changed", False),
           mutant("m.c", "m.py", "survived", "3", False)]
    assert report.check(["m.a", "m.b"], now) == 0  # m.b's function changed: stale, not a failure
    assert report.check(["m.a", "m.c"], now) == 1
    assert report.check(["m.gone"], now) == 0


def test_a_mutant_the_run_did_not_reach_keeps_its_earlier_verdict(report: ModuleType) -> None:
    mutant = report.Mutant
    now = [mutant("m.a", "m.py", "killed", "new", False), mutant("m.b", "m.py", "not checked", "2", False),
           mutant("m.c", "m.py", "survived", "3", False), mutant("m.d", "m.py", "not checked", "4", False),
           mutant("m.e", "m.py", "killed", "5", True)]
    previous = {"m.a": "old", "m.b": "2", "m.c": "3", "m.gone": "9"}
    # m.a: this run's digest; m.b: not reached, kept; m.c: survives now, dropped; m.d: never killed;
    # m.e: message-only; m.gone: no longer a mutant
    assert report.killed_set(now, previous) == {"m.a": "new", "m.b": "2"}


def test_mutants_not_run_are_out_of_the_score(
    report: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "MODULES", ("m.py",))
    for name, path in (("KILLED", "killed.json"), ("EQUIVALENT", "equivalent.json"), ("DOC", "mutation.md")):
        monkeypatch.setattr(report, name, tmp_path / path)
    monkeypatch.setattr(report, "ROOT", tmp_path)
    mutant = report.Mutant
    now = [mutant(f"m.x_f__mutmut_{n}", "m.py", "killed", str(n), False) for n in range(19)]
    now += [mutant("m.x_f__mutmut_19", "m.py", "survived", "19", False)]
    now += [mutant(f"m.x_g__mutmut_{n}", "m.py", "not checked", "g", False) for n in range(30)]
    assert report.write_full(now, "cmd") == 0
    assert "| `m.py` | 50 | 0 | 0 | 19 | 1 | 0 | 30 | **95.0%** | 95.0% |" in (tmp_path / "mutation.md").read_text()
    # a module none of whose mutants ran has no score rather than 100%
    assert report.write_full(now[-30:], "cmd") == 0
    assert "| 30 | not run | not run |" in (tmp_path / "mutation.md").read_text()
