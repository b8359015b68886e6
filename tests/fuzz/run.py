"""The long fuzz run: every target in turn under hypothesis until the time is up.

    python -m tests.fuzz.run --seconds 600 [--target NAME ...]

Hypothesis runs each target in rounds of ``fuzz-long``'s examples (or
``HYPOTHESIS_PROFILE``'s) with a fresh seed per round, round-robin, until the
budget is spent; examples that fail are shrunk and written to
``tests/fuzz/regressions/<target>-<sha1>.bin``, which the default test run
replays. Prints examples run per target. Exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable

from hypothesis import given, seed, settings

from tests.fuzz import targets
from tests.fuzz.profiles import PROFILES
from tests.fuzz.strategies import strategies


def _counted(name: str, counts: Counter[str], last: list[bytes]) -> Callable[[bytes], None]:
    """The target, counting examples and remembering the input that failed last."""
    target = targets.TARGETS[name]

    def run(data: bytes) -> None:
        counts[name] += 1
        try:
            target(data)
        except BaseException:
            last[:] = [data]  # the final call after shrinking is the minimal example
            raise

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--target", action="append", choices=sorted(targets.TARGETS))
    parser.add_argument("--round-examples", type=int, default=None, help="examples per round (default: profile's)")
    args = parser.parse_args(argv)
    names = list(args.target or sorted(targets.TARGETS))
    requested = list(names)
    profile = os.environ.get("HYPOTHESIS_PROFILE", "fuzz-long")
    base = settings.get_profile(profile if profile in PROFILES else "fuzz-long")
    examples = args.round_examples or min(base.max_examples, 200)  # small rounds: every target gets its turn
    strats = strategies()
    counts: Counter[str] = Counter()
    failures: list[str] = []
    deadline = time.monotonic() + args.seconds
    rng = random.Random()
    while time.monotonic() < deadline:
        for name in names:
            if time.monotonic() >= deadline:
                break
            last: list[bytes] = []
            test = seed(rng.getrandbits(64))(settings(base, max_examples=examples, database=None)(
                given(strats[name])(_counted(name, counts, last))))
            try:
                test()
            except Exception as exc:  # report, keep the crasher, go on with the others
                path = targets.save_crasher(name, last[0]) if last else None
                failures.append(f"{name}: {type(exc).__name__}: {str(exc)[:300]} -> {path}")
                print(f"FAIL {failures[-1]}", flush=True)
                names.remove(name)  # one crasher per target and run: fix it, then run again
        if not names:
            break
    total = sum(counts.values())
    print(f"fuzz: {total} examples in {args.seconds:.0f} s ({profile} rounds of {examples})")
    for name in requested:
        print(f"  {name:18} {counts[name]:>9}")
    for failure in failures:
        print(f"  FAILED {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
