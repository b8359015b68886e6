"""Instructions per replayed record, counted by callgrind: a figure that does not move with the load.

Run by hand (never collected; needs valgrind)::

    python -m tests.bench.bench_instructions [--records 20000]

Generates ``--records`` benchmark records (``bench_replay.generate``), then runs
under ``valgrind --tool=callgrind`` processes that read the file 0, 1 and 2
times: the difference between 1 and 0 divided by the records is what a fresh
record costs, start-up excluded; between 2 and 1, a duplicate (the second
reading's ids are all seen). The same for the typed msgspec decode loop and the
required-work floor of ``bench_ingest`` (``TYPED_LOOP``, ``REQUIRED_FLOOR``), so
their ratios to replay are per instruction. Wall-clock benchmarks on a shared
machine move by 10-20% between runs; this does not, so it is the figure to
compare two versions of the code with.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.bench import bench_ingest, bench_replay
from tests.bench.benchlib import ROOT

REPLAY = """
import sys
from exporter.sources.formats.registry import make_line_decoder
from exporter.prices.table import load_price_table
from exporter.replay.replay import replay_files, replay_pipeline
decoder = make_line_decoder("canonical")
pipeline = replay_pipeline(load_price_table(sys.argv[1]), decoder)
replay_files([sys.argv[2]] * int(sys.argv[3]), pipeline, decoder)
"""


# bench_ingest's loops read every file named on their command line
PROGRAMS = {"replay": REPLAY, "typed loop": bench_ingest.TYPED_LOOP, "required floor": bench_ingest.REQUIRED_FLOOR}


def instructions(program: str, data: Path, copies: int) -> int:
    """Instructions callgrind counts for ``program`` reading ``data`` ``copies`` times."""
    args = [str(bench_replay.PRICES), str(data), str(copies)] if program == "replay" else [str(data)] * copies
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c",
         PROGRAMS[program], *args],
        capture_output=True, text=True, check=True, timeout=1800, cwd=ROOT)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError("callgrind printed no total:\n" + done.stderr[-2000:])
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20_000)
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    fresh: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as directory:
        data = Path(directory) / "records.jsonl"
        bench_replay.generate(data, args.records)
        for program in PROGRAMS:
            counts = [instructions(program, data, copies) for copies in (0, 1, 2)]
            fresh[program] = (counts[1] - counts[0]) / args.records
            duplicate = (counts[2] - counts[1]) / args.records
            print(f"{program}: {fresh[program]:,.0f} instructions per fresh record, {duplicate:,.0f} per duplicate, "
                  f"{(counts[2] - counts[0]) / (2 * args.records):,.0f} over both ({args.records:,} records, "
                  f"callgrind)", flush=True)
    typed = fresh["typed loop"]
    print(f"per instruction, fresh records: replay {typed / fresh['replay']:.2f} of the typed loop, "
          f"the required floor {typed / fresh['required floor']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
