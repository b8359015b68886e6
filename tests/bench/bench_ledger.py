"""The dedupe ledger against the set-based one it replaced, each in a fresh process, alternated.

    python -m tests.bench.bench_ledger [--ids 1000000] [--rounds 2]

Per implementation (``packed``: exporter.engine.dedupe; ``set``: tests/bench/ledger_set.py, a
``set`` of int digests plus hourly arrays) and per round, a child process records ``--ids``
unique ids (one per 2 s of record time, all inside the 40-day window) and reports:

- bytes per id: the growth of tracemalloc's traced memory (a second child, traced, so the timing
  of the first is not slowed by the tracing) and of VmRSS;
- CPU per ``seen_before`` (new ids, then the same ids again as duplicates);
- checkpoint: the size of the encoded checkpoint file (``exporter.sidecar.checkpoint.encode``)
  and the time to decode it and restore the ledger from it (``from_state``).

The two write the same checkpoint bytes (the layout did not change), which the run checks, and
each restores the other's: old checkpoints load as they are. Target: <= 40 bytes per id.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from typing import Any

from tests.bench.benchlib import ROOT, Row, rss_mb, verdict

TARGET_BYTES = 40.0
START = 1_793_491_200


def _ledger_class(which: str) -> Any:
    if which == "packed":
        from exporter.engine.dedupe import DedupeLedger
        return DedupeLedger
    from tests.bench.ledger_set import SetLedger
    return SetLedger


def case(which: str, ids: int, traced: bool) -> dict[str, Any]:
    """One implementation in this (fresh) process."""
    import hashlib

    from exporter.sidecar.checkpoint import decode, encode

    cls = _ledger_class(which)
    names = [f"req-{i:08d}" for i in range(ids)]
    if traced:
        tracemalloc.start()
    base_traced = tracemalloc.get_traced_memory()[0] if traced else 0
    base_rss = rss_mb()
    ledger = cls(40.0)
    cpu = time.process_time()
    for i, name in enumerate(names):
        ledger.seen_before(name, START + i * 2)
    insert_cpu = time.process_time() - cpu
    assert len(ledger) == ids
    out: dict[str, Any] = {"which": which, "ids": ids}
    if traced:
        out["traced_bytes"] = tracemalloc.get_traced_memory()[0] - base_traced
        tracemalloc.stop()
        return out
    out["rss_bytes"] = (rss_mb() - base_rss) * 1e6
    cpu = time.process_time()
    for i, name in enumerate(names):
        assert ledger.seen_before(name, START + i * 2)
    out["dup_ns"] = (time.process_time() - cpu) / ids * 1e9
    out["insert_ns"] = insert_cpu / ids * 1e9
    blobs = ledger.to_state()
    data = encode({"schema": "bench"}, blobs)
    out["checkpoint_bytes"] = len(data)
    out["checkpoint_sha"] = hashlib.sha256(data).hexdigest()
    del ledger
    cpu = time.process_time()
    _body, loaded = decode(data)
    restored = cls.from_state(40.0, loaded)
    out["restore_s"] = time.process_time() - cpu
    assert len(restored) == ids
    other = _ledger_class("set" if which == "packed" else "packed").from_state(40.0, restored.to_state())
    assert len(other) == ids and other.seen_before(names[0], START) and other.seen_before(names[-1], START)
    return out


def _child(which: str, ids: int, traced: bool) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "tests.bench.bench_ledger", "--case", which, "--ids", str(ids)]
    out = subprocess.run([*cmd, *(["--traced"] if traced else [])], cwd=ROOT, check=True,
                         stdout=subprocess.PIPE).stdout
    result: dict[str, Any] = json.loads(out.splitlines()[-1])
    return result


def run(ids: int = 1_000_000, rounds: int = 2) -> list[Row]:
    got: dict[str, list[dict[str, Any]]] = {"packed": [], "set": []}
    traced: dict[str, int] = {}
    for r in range(rounds):
        for which in (("packed", "set") if r % 2 == 0 else ("set", "packed")):
            got[which].append(_child(which, ids, traced=False))
            g = got[which][-1]
            print(f"    round {r + 1} {which:<6} {g['rss_bytes'] / ids:5.1f} B/id RSS  insert {g['insert_ns']:5.0f} ns"
                  f"  duplicate {g['dup_ns']:5.0f} ns  restore {g['restore_s']:.2f} s", flush=True)
    for which in got:
        traced[which] = _child(which, ids, traced=True)["traced_bytes"]

    def med(which: str, key: str) -> float:
        return statistics.median(g[key] for g in got[which])

    assert got["packed"][0]["checkpoint_sha"] == got["set"][0]["checkpoint_sha"], "checkpoint bytes differ"
    per_id = traced["packed"] / ids
    old_per_id = traced["set"] / ids
    size = got["packed"][0]["checkpoint_bytes"]
    return [Row(
        f"Dedupe ledger bytes per id ({ids:,} ids, tracemalloc), vs the set-based ledger",
        f"{per_id:.1f} B/id", f"{old_per_id:.1f} B/id", f"{per_id / old_per_id:.2f}x",
        f"<= {TARGET_BYTES:.0f} B/id", verdict(per_id <= TARGET_BYTES, f"{per_id - TARGET_BYTES:.0f} B over"),
        [f"RSS growth {med('packed', 'rss_bytes') / ids:.1f} vs {med('set', 'rss_bytes') / ids:.1f} B/id; "
         f"CPU per new id {med('packed', 'insert_ns'):.0f} vs {med('set', 'insert_ns'):.0f} ns "
         f"({med('packed', 'insert_ns') / med('set', 'insert_ns'):.2f}x), per duplicate "
         f"{med('packed', 'dup_ns'):.0f} vs {med('set', 'dup_ns'):.0f} ns; medians of {rounds} alternated runs",
         f"checkpoint of {ids:,} ids {size / 1e6:.1f} MB, byte for byte the same file for both (the layout is "
         f"unchanged: old checkpoints load as they are); decode + restore {med('packed', 'restore_s'):.2f} s vs "
         f"{med('set', 'restore_s'):.2f} s ({med('packed', 'restore_s') / med('set', 'restore_s'):.1f}x)"],
    )]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", choices=("packed", "set"), help="run one implementation here, print its JSON")
    parser.add_argument("--ids", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--traced", action="store_true", help="case: measure with tracemalloc (not timed)")
    args = parser.parse_args(argv)
    if args.case:
        print(json.dumps(case(args.case, args.ids, args.traced)))
    else:
        for row in run(args.ids, args.rounds):
            print(row)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
