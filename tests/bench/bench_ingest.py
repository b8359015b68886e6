"""Ingest: ``replay --json`` against Debian's mtail and a bare JSON-decode loop.

    python -m tests.bench.bench_ingest [--records 1000000] [--rounds 3]

One deterministic file of canonical records with usage blocks
(``bench_replay.generate``, seed 1) is read, whole process by whole process,
by the commands run alternately ``--rounds`` times; medians are reported:

- ours: ``python -m exporter replay --json --prices <fixture table>``, the full
  arithmetic (parse, usage normalisation of four provider shapes, dedupe by
  request id, pricing by version, aggregation, month totals);
- mtail: ``mtail --one_shot`` with ``mtail/savings.mtail`` (below), summing
  tokens saved and requests per model;
- ceiling: a Python loop doing nothing but ``orjson.loads`` on every line;
- one process: ours with ``--jobs 1`` (the per-CPU-second comparisons below);
- typed: a loop doing nothing but the fast path's typed msgspec decode
  (``fastparse``'s struct, usage blocks included), the target's yardstick
  (replay >= 0.5 of it per CPU-second);
- required floor: the typed decode plus the least work replay's contract
  demands of a record (``REQUIRED_FLOOR``, what it includes and omits in
  ``REQUIRED_NOTE``), plain Python calling the real ledger and usage
  normaliser: if it is below 0.5 of the typed loop, so is any replay written
  in Python with this ledger and cell layout (hence the plain loop in C);
- one increment: the typed decode plus one dict increment per record (the
  model), the least any counter can do after decoding;
- python loop: ours with ``--jobs 1`` and the plain line's loop in Python
  (``exporter.engine._plain`` hidden, as on an install without a compiler):
  what the C loop gains, and its JSON must be the same.

What the mtail program does: one regexp per line picks ``"model":"..."`` and
then ``"tokens_before":N,"tokens_after":M`` in that order and adds
``before - after`` (when positive) to a counter per model. What it does not
do: real JSON parsing (it depends on key order and compact separators, and
would miss escaped quotes in a model name or keys in another order), usage
blocks, cache tiers, prices or dollars, dedupe by request id, month
boundaries, label caps, or rejection of bad records. So it does strictly
less work than ours; it is the cheapest log-to-counter path a peer tool
offers. Its per-model sums are checked against ours (they must agree).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from tests.bench import bench_replay
from tests.bench.benchlib import ROOT, Row, alternate, median_cpu, median_wall, verdict

PRICES = ROOT / "tests" / "fixtures" / "engine" / "prices_two_versions.yaml"
MTAIL = "/usr/bin/mtail"
TARGET_VS_MTAIL = 3.0

MTAIL_PROGRAM = r"""# Tokens saved and requests per model from canonical JSON lines (see bench_ingest.py).
counter llm_tokens_saved_total by model
counter llm_requests_total by model

/"model":"(?P<model>[^"\\]*)".*"tokens_before":(?P<before>\d+),"tokens_after":(?P<after>\d+)/ {
  llm_requests_total[$model]++
  $before > $after {
    llm_tokens_saved_total[$model] += $before - $after
  }
}
"""

BARE_LOOP = (
    "import sys, orjson\n"
    "loads = orjson.loads\n"
    "n = 0\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    for line in f:\n"
    "        loads(line)\n"
    "        n += 1\n"
    "print(n)\n"
)

# The fast path's own typed decode (fastparse's msgspec struct, usage blocks included) and nothing else, over the
# files named on its command line: the yardstick of replay's per-record path (target: replay >= 0.5 of it).
TYPED_LOOP = (
    "import sys\n"
    "from exporter.engine.fastparse import _DECODER\n"
    "decode = _DECODER.decode\n"
    "n = 0\n"
    "for path in sys.argv[1:]:\n"
    "    with open(path, 'rb') as f:\n"
    "        for line in f:\n"
    "            decode(line)\n"
    "            n += 1\n"
    "print(n)\n"
)
# The typed decode plus one dict increment per model: what a counter costs at the very least after decoding.
INCREMENT_LOOP = TYPED_LOOP.replace("            decode(line)\n", "            model = decode(line).model\n"
                                    "            counts[model] = counts.get(model, 0) + 1\n").replace(
    "n = 0\n", "n = 0\ncounts = {}\n")
# The required-work floor: the typed decode plus the least work replay's contract demands of a record, written as
# plainly as Python allows and calling the real product pieces where they are the work (see REQUIRED_NOTE).
# Reads every file named on its command line (bench_instructions counts it per record too).
REQUIRED_FLOOR = """\
import sys
from exporter.engine.cells import CELL_WIDTH
from exporter.engine.dedupe import DedupeLedger
from exporter.engine.fastparse import _DECODER, _SIXTY, fast_usage
from exporter.engine.months import MonthOf
from exporter.engine.records import parse_ts


def main(paths: list[str]) -> None:  # locals, not module globals: the cheapest Python there is
    decode, seen_before, month_of = _DECODER.decode, DedupeLedger(40.0, stable=False).seen_before, MonthOf("UTC")
    sixty, usage_of = _SIXTY, fast_usage
    cells = {}
    last_minute, last_start, slot_start, slot_end, month = '-', 0, 0.0, 0.0, ''
    n = duplicates = 0
    for path in paths:
        with open(path, 'rb') as f:
            for line in f:
                raw = decode(line)
                text = raw.ts
                if not text.startswith(last_minute):  # a new minute (replay's shortcut: the last line's)
                    last_minute = text[:17]
                    last_start = int(parse_ts(last_minute + '00Z'))
                ts = float(last_start + sixty[text[17:19]])
                if not slot_start <= ts < slot_end:  # a new 15 minutes (replay's: the last slot's bounds)
                    slot_start = ts // 900 * 900
                    slot_end, month = slot_start + 900, month_of(ts)
                n += 1
                if seen_before(raw.request_id, ts):
                    duplicates += 1
                    continue
                usage = usage_of(raw.usage)
                key = (month, raw.model, raw.provider, raw.tenant, raw.count_method)
                cell = cells.get(key)
                if cell is None:
                    cell = cells[key] = [0] * CELL_WIDTH
                cell[0] += 1
                cell[1] += usage.fresh_input
                cell[2] += usage.cache_read
                cell[3] += usage.cache_write_5m
                cell[4] += usage.cache_write_1h
                cell[5] += usage.output
                cell[8] += raw.tokens_before
                cell[10] += raw.tokens_after
    print(n, duplicates, sum(cell[0] for cell in cells.values()))


main(sys.argv[1:])
"""
# ``replay --json --jobs 1`` with the plain line's loop in Python: the C module hidden, as on an install
# without a compiler (argv: the replay command's own arguments).
PYTHON_LOOP = """\
import sys
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name == "exporter.engine._plain":
            raise ImportError("hidden")
        return None
sys.meta_path.insert(0, Hide())
from exporter.cli.main import main
sys.exit(main(sys.argv[1:]))
"""

REQUIRED_NOTE = ("the typed decode; the timestamp to epoch seconds (the last line's minute, else the reference "
                 "parser, then a dict of seconds, as replay does it); the month (the last 15 minutes' bounds, as "
                 "replay's); replay's dedupe ledger (DedupeLedger.seen_before, keyed by the process's own string "
                 "hash); fastparse.fast_usage (the four provider shapes to the tiers); one dict lookup of the (month, "
                 "model, provider, tenant, method) cell and eight integer additions into it (a list of the real "
                 "width: requests, fresh, cache read, writes 5m and 1h, output, tokens before and after). It omits "
                 "every check (line shape, labels, future or expired timestamp, implausible count), the price "
                 "version, route flags, label caps, unpriced, component and divergence counts, and the block "
                 "reading (it iterates the file like the typed loop)")
TARGET_VS_TYPED = 0.5

_MTAIL_SAMPLE = re.compile(rb'^llm_tokens_saved_total\{model="([^"]*)",prog="savings.mtail"\} (\S+)$', re.M)


def mtail_sums(exposition: bytes) -> dict[str, int]:
    return {m.decode(): int(float(v)) for m, v in _MTAIL_SAMPLE.findall(exposition)}


def run(records: int = 1_000_000, rounds: int = 3) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as directory:
        work = Path(directory)
        data = work / "records.jsonl"
        size = bench_replay.generate(data, records)
        print(f"  ingest: {records:,} records, {size / 1e6:.0f} MB, seed 1", flush=True)
        empty = work / "empty.jsonl"
        empty.touch()
        progs = work / "progs"
        progs.mkdir()
        (progs / "savings.mtail").write_text(MTAIL_PROGRAM, encoding="utf-8")
        cmds = {
            "ours": [sys.executable, "-m", "exporter", "replay", "--json", "--prices", str(PRICES), str(data)],
            "ceiling": [sys.executable, "-c", BARE_LOOP, str(data)],
            "one process": [sys.executable, "-m", "exporter", "replay", "--json", "--jobs", "1", "--prices",
                            str(PRICES), str(data)],
            "typed": [sys.executable, "-c", TYPED_LOOP, str(data)],
            "python loop": [sys.executable, "-c", PYTHON_LOOP, "replay", "--json", "--jobs", "1", "--prices",
                            str(PRICES), str(data)],
            # the fixed cost of each (interpreter, imports, price table, JSON out) on an empty file
            "start ours": [sys.executable, "-m", "exporter", "replay", "--json", "--jobs", "1", "--prices",
                           str(PRICES), str(empty)],
            "start typed": [sys.executable, "-c", TYPED_LOOP, str(empty)],
            "required floor": [sys.executable, "-c", REQUIRED_FLOOR, str(data)],
            "start floor": [sys.executable, "-c", REQUIRED_FLOOR, str(empty)],
            "one increment": [sys.executable, "-c", INCREMENT_LOOP, str(data)],
        }
        have_mtail = Path(MTAIL).exists()
        if have_mtail:
            cmds["mtail"] = [MTAIL, "--one_shot", "--one_shot_format=prometheus", "--progs", str(progs),
                             "--logs", str(data), "--logtostderr", "--port", "0"]
        results = alternate(cmds, rounds)

    ours = json.loads(results["ours"][0].stdout)
    month = next(iter(ours["months"].values()))
    assert month["requests"] == records, "every record must count"
    rows: list[Row] = []
    ours_wall = median_wall(results["ours"])
    ours_rate = records / ours_wall
    ceiling_wall = median_wall(results["ceiling"])
    cpu_note = (f"CPU-s medians: ours {median_cpu(results['ours']):.1f}, "
                f"ceiling {median_cpu(results['ceiling']):.1f}")
    if have_mtail:
        sums = mtail_sums(results["mtail"][0].stdout)
        agree = sum(sums.values()) == month["tokens_saved"]
        mtail_wall = median_wall(results["mtail"])
        ratio = mtail_wall / ours_wall
        cpu_ratio = median_cpu(results["mtail"]) / median_cpu(results["ours"])
        rows.append(Row(
            f"ingest records/s ({records:,}, wall, median of {rounds}) vs mtail",
            f"{ours_rate:,.0f}/s", f"{records / mtail_wall:,.0f}/s (mtail)", f"{ratio:.2f}x",
            f">= {TARGET_VS_MTAIL:.0f}x", verdict(ratio >= TARGET_VS_MTAIL, f"{ratio / TARGET_VS_MTAIL:.0%} of target"),
            [f"mtail tokens-saved sum {'equals' if agree else 'DIFFERS FROM'} ours ({sum(sums.values()):,} vs "
             f"{month['tokens_saved']:,})",
             f"CPU ratio mtail/ours {cpu_ratio:.2f}x (mtail {median_cpu(results['mtail']):.1f} CPU-s, "
             f"ours {median_cpu(results['ours']):.1f} CPU-s; mtail is multi-threaded Go)",
             f"the bare orjson.loads loop alone runs at {mtail_wall / ceiling_wall:.2f}x mtail: a 3x lead would "
             f"need all of ours after decoding to cost {max(0.0, 1 / TARGET_VS_MTAIL - ceiling_wall / mtail_wall):.0%}"
             f" of mtail's time or less ({max(0.0, mtail_wall / TARGET_VS_MTAIL - ceiling_wall):.1f} s wall; "
             f"ours spends {ours_wall - ceiling_wall:.1f} s after decoding)"],
        ))
    else:
        rows.append(Row("ingest vs mtail", f"{ours_rate:,.0f}/s", "mtail absent", "-", ">= 3x",
                        "skipped (apt-get install mtail)"))
    assert json.loads(results["one process"][0].stdout) == ours, "one process and parts must agree"
    assert json.loads(results["python loop"][0].stdout) == ours, "the C loop and the Python loop must agree"
    floor_out = results["required floor"][0].stdout.split()
    assert floor_out == [str(records).encode(), b"0", str(records).encode()], "the floor counts every record once"
    ours_cpu, typed_cpu, floor_cpu, increment_cpu, python_cpu = (median_cpu(results[name]) for name in (
        "one process", "typed", "required floor", "one increment", "python loop"))
    per_record_us = 1e6 / records
    typed_ratio = typed_cpu / ours_cpu  # records per CPU-second, ours over the typed loop's
    floor_ratio = typed_cpu / floor_cpu
    ours_net = ours_cpu - median_cpu(results["start ours"])
    typed_net = typed_cpu - median_cpu(results["start typed"])
    floor_net = floor_cpu - median_cpu(results["start floor"])
    rows.append(Row(
        f"replay / msgspec typed loop per CPU-second (one process, {records:,} records)",
        f"{records / ours_cpu:,.0f}/CPU-s", f"{records / typed_cpu:,.0f}/CPU-s (typed decode)", f"{typed_ratio:.2f}",
        f">= {TARGET_VS_TYPED}",
        verdict(typed_ratio >= TARGET_VS_TYPED, f"{typed_ratio / TARGET_VS_TYPED:.0%} of target"),
        [f"the plain line's loop in C (exporter/engine/_plain.c); the same replay with it in Python (the C "
         f"module hidden, as without a compiler): {typed_cpu / python_cpu:.2f} of the typed loop, "
         f"{python_cpu * per_record_us:.2f} us per record, the same JSON",
         f"the required-work floor written in Python (next row): {floor_ratio:.2f} of the typed loop; replay is "
         f"{floor_cpu / ours_cpu:.2f}x the floor's records per CPU-second",
         f"per record: typed decode {typed_cpu * per_record_us:.2f} us, required floor "
         f"{floor_cpu * per_record_us:.2f} us, replay {ours_cpu * per_record_us:.2f} us CPU (process start, price "
         f"table and JSON output included)",
         f"without each process's fixed cost (the same command on an empty file): {typed_net / ours_net:.2f} "
         f"({typed_net * per_record_us:.2f} us against {ours_net * per_record_us:.2f} us per record); the floor "
         f"{typed_net / floor_net:.2f} ({floor_net * per_record_us:.2f} us)"],
    ))
    rows.append(Row(
        "required-work floor in Python / msgspec typed loop per CPU-second (what bounds a replay in Python)",
        f"{records / floor_cpu:,.0f}/CPU-s", f"{records / typed_cpu:,.0f}/CPU-s (typed decode)", f"{floor_ratio:.2f}",
        f">= {TARGET_VS_TYPED} for the target to be reachable",
        "n/a" if floor_ratio >= TARGET_VS_TYPED else f"below {TARGET_VS_TYPED}: out of reach for a replay written in "
        "Python, hence the loop in C",
        [f"the floor is {REQUIRED_NOTE}",
         f"the typed decode plus one dict increment per record (the least any counter can do): "
         f"{typed_cpu / increment_cpu:.2f} of the typed loop, {increment_cpu * per_record_us:.2f} us per record"],
    ))
    rows.append(Row(
        "ingest vs bare orjson.loads loop (ceiling)",
        f"{ours_rate:,.0f}/s", f"{records / ceiling_wall:,.0f}/s", f"{ceiling_wall / ours_wall:.2f}",
        "(ceiling = 1.0)", "n/a", [cpu_note],
    ))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    for row in run(args.records, args.rounds):
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
