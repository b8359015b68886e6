"""Instructions per replayed record, counted by callgrind: a figure that does not move with the load.

Run by hand (never collected; needs valgrind)::

    python tests/bench/bench_instructions.py [--records 20000]

Generates ``--records`` benchmark records (``bench_replay.generate``), then runs
one process that replays them twice and one that replays nothing, both under
``valgrind --tool=callgrind``; the difference divided by twice the records is
what one record costs, start-up excluded. Wall-clock benchmarks on a shared
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

from tests.bench import bench_replay

REPLAY = """
import sys
from exporter.sources.formats.registry import make_line_decoder
from exporter.prices.table import load_price_table
from exporter.replay.replay import replay_files, replay_pipeline
decoder = make_line_decoder("canonical")
pipeline = replay_pipeline(load_price_table(sys.argv[1]), decoder)
replay_files([sys.argv[2]] * int(sys.argv[3]), pipeline, decoder)
"""


def instructions(data: Path, copies: int) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", REPLAY,
         str(bench_replay.PRICES), str(data), str(copies)],
        capture_output=True, text=True, check=True, timeout=1800)
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
    with tempfile.TemporaryDirectory() as directory:
        data = Path(directory) / "records.jsonl"
        bench_replay.generate(data, args.records)
        per_record = (instructions(data, 2) - instructions(data, 0)) / (2 * args.records)
    print(f"replay: {per_record:,.0f} instructions per record ({args.records:,} records, callgrind)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
