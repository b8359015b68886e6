"""Generate the big files of the hostile corpus (too big to commit), with their expected outcomes.

    python tests/hostile/generate.py OUTDIR [--names 1000000]

Writes into OUTDIR:

* ``long_lines.jsonl``: a good line, a 10 MiB valid record (10 MiB tenant), a
  10 MiB line of garbage, a good line;
* ``nul_run_big.jsonl``: a good line, 4 MiB of NULs, a good line;
* ``no_newline_big.jsonl``: 2 MiB of JSON-ish bytes and no newline at all;
* ``million_names.jsonl``: ``--names`` records, each with its own model and tenant name.

and prints the expectations as JSON (``expected(names)`` gives the same in
Python): per file, the outcome of each line under ``replay`` (which applies
the tailer's line rules, so it agrees with the sidecar) and under the tailing sidecar (which skips
lines over ``max_line_bytes``, 1 MiB by default, as ``line_too_long``, skips
NUL runs at a line start, and waits for a newline that never comes).
The small files of the corpus are committed next to this script, with their
expectations in ``manifest.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

MIB = 1 << 20
TS = "2026-11-10T12:00:00Z"


def _good(request_id: str, **extra: Any) -> bytes:
    obj = {"ts": TS, "request_id": request_id, "model": "gpt-4o", "tenant": "team-a", "tokens_before": 1000,
           "tokens_after": 600, "count_method": "tiktoken:o200k_base"}
    obj.update(extra)
    return json.dumps(obj).encode()


def generate(out: Path, names: int = 1_000_000) -> dict[str, dict[str, Any]]:
    """Write the files; returns ``expected(names)``."""
    out.mkdir(parents=True, exist_ok=True)
    big_record = _good("big-1", tenant="t" * (10 * MIB))
    garbage = b'{"ts": 1, "model": "' + b"\xff\x00garbage" * (10 * MIB // 9)
    (out / "long_lines.jsonl").write_bytes(b"\n".join([_good("long-a"), big_record, garbage, _good("long-b")]) + b"\n")
    (out / "nul_run_big.jsonl").write_bytes(_good("nul-a") + b"\n" + b"\x00" * (4 * MIB) + _good("nul-b") + b"\n")
    (out / "no_newline_big.jsonl").write_bytes(b'{"ts": "' + b"9" * (2 * MIB))
    with open(out / "million_names.jsonl", "wb") as f:
        chunk = []
        for i in range(names):
            chunk.append(b'{"ts":"%s","request_id":"n-%d","model":"model-%d","tenant":"tenant-%d","tokens_before":3,'
                         b'"tokens_after":1}\n' % (TS.encode(), i, i, i))
            if len(chunk) == 10_000:
                f.write(b"".join(chunk))
                chunk.clear()
        f.write(b"".join(chunk))
    return expected(names)


def expected(names: int = 1_000_000) -> dict[str, dict[str, Any]]:
    """Per file: ``replay`` and ``sidecar`` outcomes by line ("ok", a rejection reason, or "skip")."""
    return {
        # replay applies the tailer's line rules (exporter.sources.tail.tailer.normalise_line):
        # lines over max_line_bytes are line_too_long, NUL runs before a record are skipped
        "long_lines.jsonl": {"replay": ["ok", "line_too_long", "line_too_long", "ok"],
                             "sidecar": ["ok", "line_too_long", "line_too_long", "ok"]},
        "nul_run_big.jsonl": {"replay": ["ok", "ok"], "sidecar": ["ok", "ok"]},
        # the unterminated 1 MiB+ line: over the cap for both (replay takes it as complete)
        "no_newline_big.jsonl": {"replay": ["line_too_long"], "sidecar": ["line_too_long"]},
        "million_names.jsonl": {"replay": ["ok"] * names, "sidecar": ["ok"] * names},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--names", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    result = generate(args.outdir, args.names)
    summary = {name: {k: (v if len(v) <= 10 else f"{len(v)} x {v[0]}") for k, v in exp.items()}
               for name, exp in result.items()}
    json.dump(summary, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
