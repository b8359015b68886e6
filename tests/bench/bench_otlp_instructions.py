"""Instructions per span of the OTLP decode + map, in process and in the receiver, counted by valgrind.

This machine's CPU time per span swings by a third from one hour to the next,
and the receiver over loopback takes far more CPU per span than the same
decode + map run in process. An instruction count does not swing: valgrind
(``--tool=cachegrind --cache-sim=no``) counts every instruction the process
runs, so the same work gives the same count within a fraction of a percent.
Each figure is a difference, so start-up and imports cancel: the process
maps ``WARM`` requests (the shape plans and the correlation memory fill),
then ``FEW`` or ``MANY`` more, and (count(MANY) - count(FEW)) / ((MANY - FEW) *
spans per request) is the figure. The correlation memory is capped at
``CAP`` entries so it is full (evicting) before the measured requests, as in
a receiver that has run for a while.

- ``in process``: ``map_protobuf`` called in a loop, as ``bench_otlp``'s
  "decode + map, protobuf, as the receiver" row; and its parts (``PARTS``): upb's
  bare parse (the mapping bound's baseline), the span views alone, decode + map
  without the counted-once rules;
- ``receiver``: the same requests POSTed over loopback to an ``OtlpReceiver``
  by one client process that valgrind does not run (it is exec'd), so the
  count is the receiver's: HTTP parsing, the handler, the queue, the
  dispatcher and decode + map.

Run: ``python -m tests.bench.bench_otlp_instructions`` (about a minute; needs
valgrind, ``apt-get install valgrind``). ``bench_otlp --json`` includes its
figures when valgrind is there.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

WARM, FEW, MANY = 20, 10, 30  # requests: to fill the memory, then the two measured counts
CAP = 8192  # the correlation memory's cap in these runs (entries): full after about 6 requests of 512 spans
BATCH = 512


def _load(path: str) -> list[bytes]:
    with open(path, "rb") as handle:
        bodies: list[bytes] = pickle.load(handle)
    return bodies


# The parts of decode + map counted on their own, in process (``_in_process``'s ``part``): upb's bare
# parse (the baseline, not a step: the views are read without it), then the views, the views mapped
# without the counted-once rules, and all of it; from ``views`` on, each does the work of the one before
# and more, so their differences are the cost of each step (``breakdown``).
PARTS = ("bare", "views", "uncorrelated", "in_process")


def _in_process(path: str, measured: int, part: str = "in_process") -> None:
    """Decode + map of the requests (``in_process``), or a part of it: upb's parse alone (``bare``, the
    mapping bound's baseline), the span views alone (``views``), decode + map without the counted-once
    rules (``uncorrelated``)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from exporter.sources.otlp.decode import views_of_protobuf
    from exporter.sources.otlp.mapping import MappingOptions, map_protobuf

    bodies = _load(path)
    options = MappingOptions(correlation_max_entries=CAP, correlate=part != "uncorrelated")
    gc.freeze()
    gc.set_threshold(50_000, 10, 10)  # the sidecar's young threshold (gc_young_threshold)
    for body in bodies[: WARM + measured]:
        if part == "bare":
            ExportTraceServiceRequest.FromString(body)
        elif part == "views":
            views_of_protobuf(body, options)
        else:
            map_protobuf(body, options)


def _receiver(path: str, measured: int) -> None:
    from exporter.sources.otlp.receiver import OtlpReceiver
    from exporter.sources.otlp.spans import MappingOptions

    got = [0]
    lock = threading.Lock()

    def sink(records: list[dict[str, Any]], source: str) -> None:
        with lock:
            got[0] += len(records)

    receiver = OtlpReceiver(sink, "127.0.0.1", 0, queue_size=256, max_connections=4,
                            options=MappingOptions(correlation_max_entries=CAP))
    gc.freeze()
    gc.set_threshold(50_000, 10, 10)
    sys.setswitchinterval(0.02)  # the sidecar's (gil_switch_interval_ms)
    receiver.start()
    subprocess.run([sys.executable, "-m", "tests.bench.bench_otlp_instructions", "client",
                    str(receiver.port), path, str(WARM + measured)], cwd=ROOT, check=True)
    receiver.stop(timeout=120)  # delivers what is queued first
    if not got[0]:
        raise SystemExit("the receiver delivered no record")


def _client(port: int, path: str, count: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for body in _load(path)[:count]:
        connection.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"the receiver answered {response.status}")


def _count(mode: str, path: str, measured: int) -> int:
    """Instructions valgrind counted in one run of ``mode`` mapping ``WARM + measured`` requests."""
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, "-m", "tests.bench.bench_otlp_instructions", mode, path, str(measured)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
        # no .pyc written: else the first run compiles and writes what the second only loads, and the
        # difference loses the compile (one run of five read 81,000 instead of 99,000 that way)
        env={"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin:/bin"},
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"valgrind {mode} exited {done.returncode}: {done.stderr[-600:]}")
    return int(found.group(1).replace(",", ""))


def per_span(bodies: list[bytes]) -> dict[str, float] | None:
    """Instructions per span of each of ``PARTS`` in process and of the receiver; None without valgrind.

    ``bodies``: at least ``WARM + MANY`` requests of ``BATCH`` spans with new span ids each."""
    if shutil.which("valgrind") is None:
        return None
    if len(bodies) < WARM + MANY:
        raise ValueError(f"need {WARM + MANY} requests, got {len(bodies)}")
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "bodies.pickle")
        with open(path, "wb") as handle:
            pickle.dump(bodies[: WARM + MANY], handle)
        out: dict[str, float] = {}
        for mode in (*PARTS, "receiver"):
            few, many = _count(mode, path, FEW), _count(mode, path, MANY)
            out[mode] = (many - few) / ((MANY - FEW) * BATCH)
    return out


def breakdown(figures: dict[str, float]) -> str:
    """Where decode + map's instructions per span go, each step against upb's bare parse."""
    bare = figures["bare"]
    steps = (("the span views", figures["views"]),
             ("the mapping's rules", figures["uncorrelated"] - figures["views"]),
             ("the counted-once rules (correlation)", figures["in_process"] - figures["uncorrelated"]))
    parts = ", ".join(f"{name} {count:,.0f} ({count / bare:.1f}x)" for name, count in steps)
    return (f"decode + map {figures['in_process']:,.0f} = {figures['in_process'] / bare:.1f}x upb's bare parse "
            f"({bare:,.0f} per span): {parts}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="report", choices=["report", *PARTS, "receiver", "client"])
    parser.add_argument("args", nargs="*")
    args = parser.parse_args(argv)
    if args.mode in PARTS:
        _in_process(args.args[0], int(args.args[1]), args.mode)
    elif args.mode == "receiver":
        _receiver(args.args[0], int(args.args[1]))
    elif args.mode == "client":
        _client(int(args.args[0]), args.args[1], int(args.args[2]))
    else:
        from tests.bench.bench_otlp import build_batch

        figures = per_span([build_batch(seed)[0] for seed in range(WARM + MANY)])
        if figures is None:
            print("valgrind is not installed (apt-get install valgrind)")
            return 1
        print(f"decode + map, instructions per span: in process {figures['in_process']:,.0f}, "
              f"in the receiver over loopback {figures['receiver']:,.0f} "
              f"({figures['receiver'] / figures['in_process']:.3f}x)")
        print(breakdown(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
