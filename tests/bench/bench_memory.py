"""Memory: resident set (VmRSS) of the exporter's state, each case in a fresh process.

    python -m tests.bench.bench_memory [--hour-lines 3600000]

Case ``ledger``: 1,000,000 request ids in the dedupe ledger (one per 2 s of
record time: 23 days, all inside the 40-day window) plus aggregates exposing
10,000 series, rendered once (so the exposition's caches are full).

Case ``hour``: an hour-equivalent of input through a real ``Sidecar``
(bundled prices, inotify off, driven by ``ingest_once()`` by hand):
``--hour-lines`` lines (default 3,600,000 = one hour at 1,000 lines/s; the
record timestamps span that hour) of unique request ids over 7 tenants x 3
models, appended in 20,000-line chunks, the file rotated every 500,000
lines, a checkpoint every 500,000 lines and a scrape every chunk. RSS is
sampled every 10 % of the input. All ids stay in the dedupe window (40
days), so the ledger is expected to grow with the ids; everything else must
stay flat, which the control run shows: the same input without request ids
(so nothing enters the ledger). Target: <= 200 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.bench.benchlib import ROOT, Row, rss_mb, verdict

TARGET_MB = 200.0


def case_ledger() -> dict[str, Any]:
    from exporter.engine.dedupe import DedupeLedger
    from exporter.engine.pipeline import MonthOf
    from exporter.exposition.render import Exposition
    from tests.bench.bench_scrape import cells_for, fill

    base = rss_mb()
    ledger = DedupeLedger(40.0)
    start = 1_793_491_200
    for i in range(1_000_000):
        ledger.seen_before(f"req-{i:08d}", start + i * 2)
    assert len(ledger) == 1_000_000
    after_ledger = rss_mb()
    agg = fill(cells_for(10_000))
    text = Exposition(MonthOf().start).render(agg, ())
    series = sum(1 for line in text.split(b"\n") if line and not line.startswith(b"#"))
    return {"base": base, "ledger": after_ledger, "total": rss_mb(), "series": series, "ids": len(ledger)}


_LINE = ('{{"ts":{ts:.3f},{rid}"model":"{m}","provider":"anthropic",'
         '"tenant":"team-{t}","tokens_before":{b},"tokens_after":2500,"count_method":"provider",'
         '"usage":{{"input_tokens":2500,"cache_read_input_tokens":{c},"cache_creation_input_tokens":0,'
         '"output_tokens":321}}}}\n')
_MODELS = ("claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-5")


def case_hour(lines: int, ids: bool = True) -> dict[str, Any]:
    """``ids=False``: the same input without request ids (nothing enters the ledger) - the control."""
    from exporter.sidecar.config import Config, SourceConfig
    from exporter.sidecar.sidecar import Sidecar

    samples: list[tuple[int, float, int]] = []
    with tempfile.TemporaryDirectory(prefix="bench-mem-") as directory:
        log = Path(directory) / "gateway.log"
        log.touch()
        config = Config(listen="127.0.0.1:0", state_dir=str(Path(directory) / "state"),
                        sources=(SourceConfig(name="gateway", paths=(str(log) + "*",), watch=False),))
        sidecar = Sidecar(config)
        samples.append((0, rss_mb(), 0))
        first_ts = time.time() - 3600.0
        step = 3600.0 / lines
        chunk = 20_000
        written = consumed = 0
        rotations = 0
        started = time.perf_counter()
        every = max(chunk, lines // 10 // chunk * chunk)
        while written < lines:
            n = min(chunk, lines - written)
            with log.open("a", encoding="ascii") as out:
                out.write("".join(_LINE.format(ts=first_ts + j * step, m=_MODELS[j % 3], t=j % 7,
                                               rid=f'"request_id":"hour-{j:09d}",' if ids else "",
                                               b=4000 + j % 500, c=j % 900) for j in range(written, written + n)))
            written += n
            while consumed < written:
                consumed += sidecar.ingest_once()
            sidecar.metrics(None)
            if written % 500_000 == 0:
                sidecar.checkpoint()
                rotations += 1
                log.rename(f"{log}.{rotations}")
                log.touch()
                for old in Path(directory).glob("gateway.log.*"):  # a logrotate keeping one file
                    if old.name != f"gateway.log.{rotations}":
                        old.unlink()
            if written % every == 0 or written == lines:
                samples.append((written, rss_mb(), len(sidecar.pipeline.ledger)))
                print(f"    {written:>9,} lines  RSS {samples[-1][1]:6.1f} MB  ledger {samples[-1][2]:,} ids  "
                      f"{written / (time.perf_counter() - started):,.0f} lines/s", file=sys.stderr, flush=True)
        summary = sidecar.summary()
        sidecar.checkpoint()
        sidecar.close()
    return {"samples": samples, "requests": summary.get("requests"), "lines": lines,
            "seconds": time.perf_counter() - started, "rotations": rotations}


def _child(case: str, *extra: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "tests.bench.bench_memory", "--case", case, *extra],
                         cwd=ROOT, check=True, stdout=subprocess.PIPE).stdout
    result: dict[str, Any] = json.loads(out.splitlines()[-1])
    return result


def _hour_row(h: dict[str, Any], label: str, what_grows: str) -> Row:
    samples = h["samples"]
    peak = max(s[1] for s in samples)
    first, last = samples[1], samples[-1]
    shown = ", ".join(f"{s[0] / 1e6:.2f}M:{s[1]:.0f}" for s in samples)
    complete = h["requests"] == h["lines"]
    growth = (last[1] - first[1]) / max(1, (last[0] - first[0]) / 1e6)
    return Row(
        f"RSS after an hour-equivalent ({h['lines']:,} lines at 1,000/s) through the sidecar, {label}",
        f"{last[1]:.0f} MB (peak {peak:.0f})", "-", "-", f"<= {TARGET_MB:.0f} MB",
        verdict(peak <= TARGET_MB, f"{peak - TARGET_MB:.0f} MB over"),
        [f"RSS samples (lines:MB) {shown}",
         f"growth after the first sample {growth:.1f} MB per million lines ({what_grows}); every line counted: "
         f"{complete}; {h['rotations']} rotations; {h['lines'] / h['seconds']:,.0f} lines/s wall "
         f"(the hour of input took {h['seconds']:.0f} s)"],
    )


def run(hour_lines: int = 3_600_000) -> list[Row]:
    from tests.bench import bench_ledger

    rows: list[Row] = bench_ledger.run()
    r = _child("ledger")
    print(f"  memory: base {r['base']:.1f} MB, +1M ids {r['ledger']:.1f} MB, +{r['series']:,} series "
          f"{r['total']:.1f} MB", flush=True)
    rows.append(Row(
        f"RSS with {r['ids']:,} dedupe ids + {r['series']:,} series", f"{r['total']:.0f} MB", "-", "-",
        f"<= {TARGET_MB:.0f} MB", verdict(r["total"] <= TARGET_MB, f"{r['total'] - TARGET_MB:.0f} MB over"),
        [f"after imports {r['base']:.0f} MB; ledger of 1M ids adds {r['ledger'] - r['base']:.0f} MB "
         f"({(r['ledger'] - r['base']) * 1e6 / r['ids']:.0f} bytes/id); "
         f"the series add {r['total'] - r['ledger']:.0f} MB"],
    ))
    h = _child("hour", "--hour-lines", str(hour_lines))
    rows.append(_hour_row(h, "unique request ids", "the dedupe ledger: every id is kept for the 40-day window"))
    h = _child("hour", "--hour-lines", str(hour_lines), "--no-ids")
    rows.append(_hour_row(h, "no request ids (control: nothing enters the ledger)", "everything but the ledger"))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", choices=("ledger", "hour"), help="run one case here and print its JSON")
    parser.add_argument("--hour-lines", type=int, default=3_600_000)
    parser.add_argument("--no-ids", action="store_true", help="case hour: records without request ids")
    args = parser.parse_args(argv)
    if args.case == "ledger":
        print(json.dumps(case_ledger()))
    elif args.case == "hour":
        print(json.dumps(case_hour(args.hour_lines, ids=not args.no_ids)))
    else:
        for row in run(args.hour_lines):
            print(row)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
