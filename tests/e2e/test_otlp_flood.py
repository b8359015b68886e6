"""16 concurrent ~15 MB OTLP bodies: the receiver's memory stays within its in-flight budget.

The receiver runs in its own process (a noop-counting sink) so its peak RSS
(``VmHWM``) is its own; 16 client threads here POST the same 15 MB protobuf
body at once and retry on 503/429 after ``Retry-After`` until each is
accepted. Asserted: every body is eventually accepted and counted, some were
refused for ``memory_budget`` with ``Retry-After``, and the receiver's peak
RSS grew far less than 16 bodies in flight would need (one 15 MB body costs
~125 MiB while decoded; measured before the budget: 1769 MiB, after: ~150 MiB).

Also a measurement script, for the before/after figure:
``python tests/e2e/test_otlp_flood.py [--root OTHER_CHECKOUT]`` prints the
peak RSS delta of the receiver of that checkout under the same flood.
"""

from __future__ import annotations

import http.client
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = 16
BODY_BYTES = 15_000_000
BUDGET = 64 << 20

_CHILD = r"""
import inspect, sys, threading
sys.path.insert(0, sys.argv[1])
from exporter.sources.otlp.http import OtlpReceiver
count = [0]
ids = set()
lock = threading.Lock()
def sink(records, source):
    with lock:
        count[0] += 1
        ids.update(r.get("request_id") for r in records)
kw = {"max_body_bytes": 16 << 20, "queue_size": 64, "retry_after": 1}
params = inspect.signature(OtlpReceiver).parameters
if "max_inflight_bytes" in params:
    kw["max_inflight_bytes"] = int(sys.argv[2])
if "max_threads" in params:
    kw["max_threads"] = 32
rx = OtlpReceiver(sink, "127.0.0.1", 0, **kw)
rx.start()
def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024
print(rx.port, rss("VmRSS:"), flush=True)
for line in sys.stdin:
    if line.strip() == "stats":
        s = rx.stats.snapshot()
        with lock:
            batches, distinct = count[0], len(ids)
        print(rss("VmHWM:"), batches, distinct, s.get("refused", {}).get("memory_budget", 0), flush=True)
    else:
        break
rx.stop()
"""


def _body() -> bytes:
    sys.path.insert(0, str(ROOT))
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from tests.fixtures.otlp.spans import make_spans

    one = encode_spans(list(make_spans().values()))
    request = ExportTraceServiceRequest()
    copies = BODY_BYTES // one.ByteSize() + 1
    for _ in range(copies):
        request.resource_spans.extend(one.resource_spans)
    return bytes(request.SerializeToString())


def _request_ids_of(body: bytes) -> set[str]:
    """The request ids one body maps to. How many records carry them depends on what the
    mapping's cross-request memory has seen (a span of a known call is handed that call's id
    rather than ignored), so delivery is checked by ids and batches, not by record counts."""
    from exporter.sources.otlp.mapping import MappingOptions, map_protobuf

    result, _ = map_protobuf(body, MappingOptions())
    return {str(record["request_id"]) for record in result.records}


def flood(root: Path, body: bytes, deadline_s: float = 240.0) -> dict[str, Any]:
    """Start ``root``'s receiver in a process, flood it, return peak RSS delta and outcomes."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(root), str(BUDGET)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        port_text, base_text = child.stdout.readline().split()
        port, base_rss = int(port_text), int(base_text)
        statuses: list[int] = []
        retry_afters: set[str] = set()
        lock = threading.Lock()
        go = threading.Barrier(CLIENTS)
        end = time.monotonic() + deadline_s

        def client() -> None:
            go.wait()
            while time.monotonic() < end:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                try:
                    conn.request(
                        "POST", "/v1/traces", body=body,
                        headers={"Content-Type": "application/x-protobuf"},
                    )
                    resp = conn.getresponse()
                    resp.read()
                    status, retry = resp.status, resp.getheader("Retry-After")
                except OSError:
                    status, retry = -1, None
                finally:
                    conn.close()
                with lock:
                    statuses.append(status)
                    if retry is not None:
                        retry_afters.add(retry)
                if status == 200:
                    return
                time.sleep(float(retry or 1))  # paces the retry like the SDK: Retry-After

        threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(deadline_s + 60)
        # a 200 means the batch is queued for the pipeline: poll until the dispatcher delivered them all
        settle = time.monotonic() + 60
        while True:
            child.stdin.write("stats\n")
            child.stdin.flush()
            hwm, batches, distinct_ids, memory_refusals = map(int, child.stdout.readline().split())
            if batches >= statuses.count(200) or time.monotonic() > settle:
                break
            time.sleep(0.1)  # poll interval, not a wait for an event
    finally:
        if child.stdin is not None:
            child.stdin.close()
        child.wait(30)
    return {
        "peak_rss_delta": hwm - base_rss,
        "accepted": statuses.count(200),
        "statuses": statuses,
        "retry_afters": retry_afters,
        "batches": batches,
        "distinct_ids": distinct_ids,
        "memory_refusals": memory_refusals,
    }


def test_sixteen_concurrent_15mb_bodies_stay_within_the_budget() -> None:
    body = _body()
    outcome = flood(ROOT, body)
    assert outcome["accepted"] == CLIENTS, outcome["statuses"]
    assert outcome["batches"] == CLIENTS  # every accepted body reached the pipeline, none twice
    assert outcome["distinct_ids"] == len(_request_ids_of(body))
    assert outcome["memory_refusals"] >= 1
    assert set(outcome["statuses"]) <= {200, 503}
    assert outcome["retry_afters"] == {"1"}
    # 16 bodies in flight need ~1.8 GB; the budget (64 MiB: one 15 MB body at a time, as
    # body + 8x decode estimate is over it) keeps the receiver's growth to a fraction of that.
    assert outcome["peak_rss_delta"] < 300 << 20, outcome["peak_rss_delta"]


def main() -> None:
    root = ROOT
    if "--root" in sys.argv:
        root = Path(sys.argv[sys.argv.index("--root") + 1]).resolve()
    body = _body()
    began = time.monotonic()
    outcome = flood(root, body)
    print(
        f"root={root} peak RSS delta={outcome['peak_rss_delta'] / 2**20:.0f} MiB "
        f"accepted={outcome['accepted']}/{CLIENTS} attempts={len(outcome['statuses'])} "
        f"memory_budget refusals={outcome['memory_refusals']} "
        f"wall={time.monotonic() - began:.1f}s"
    )


if __name__ == "__main__":
    main()
