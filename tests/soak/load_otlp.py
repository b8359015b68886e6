"""Load on the OTLP/HTTP receiver of a real sidecar: nothing accepted is lost, /metrics keeps answering.

    python tests/soak/load_otlp.py --seconds 120 [--clients 4 --slow-clients 3 --oversized-clients 2]

Loopback only; stops by itself after ``--seconds`` (plus a bounded drain).
Starts ``python -m exporter run`` with ``otlp: enabled: true`` on 127.0.0.1,
then runs concurrently:

* ``--clients`` exporters POSTing protobuf ``ExportTraceServiceRequest`` batches
  (``--batch`` GenAI spans, each with its own ``gen_ai.response.id``) over
  keep-alive ``http.client`` connections; 429/503 answers are retried with the
  same batch (the ids make the retry idempotent);
* slow-header clients sending a request's headers one byte at a time (the
  receiver must cut them off without starving the others);
* oversized clients: a ``Content-Length`` over the cap, and a gzip bomb
  (64 MiB of zeros in ~64 KiB) — both must get 413;
* a prober timing ``GET /metrics`` every 0.2 s.

The oracle is the set of span ids in batches answered 200 without a
``partial_success`` rejection. At the end the sidecar's
``llm_savings_requests_total`` must equal its size (exit status 1 if not, or
if a /metrics scrape took longer than ``--max-scrape-seconds``). Prints spans/s
and scrape latencies.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import socket
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.soak.common import SidecarProcess, scrape


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    accepted: set[str] = field(default_factory=set)
    sent_batches: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    slow_cut_off: int = 0
    oversized_413: int = 0
    oversized_other: list[str] = field(default_factory=list)
    scrape_seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def status(self, code: int) -> None:
        with self.lock:
            self.statuses[code] = self.statuses.get(code, 0) + 1


def batch(client: int, number: int, size: int) -> tuple[bytes, list[str]]:
    request = ExportTraceServiceRequest()
    resource = request.resource_spans.add()
    attr = resource.resource.attributes.add()
    attr.key, attr.value.string_value = "llm_savings.tenant", f"tenant-{client % 3}"
    scope = resource.scope_spans.add()
    scope.scope.name = "opentelemetry.instrumentation.openai_v2"
    now = time.time_ns()
    ids = []
    for i in range(size):
        span_id = f"load-{client}-{number}-{i}"
        ids.append(span_id)
        span = scope.spans.add()
        span.trace_id = (client * 1_000_003 + number).to_bytes(16, "big")
        span.span_id = (i + 1).to_bytes(8, "big")
        span.name = "chat gpt-4o"
        span.start_time_unix_nano = now - 1_000_000
        span.end_time_unix_nano = now
        for key, text in (("gen_ai.operation.name", "chat"), ("gen_ai.provider.name", "openai"),
                          ("gen_ai.request.model", "gpt-4o"), ("gen_ai.response.id", span_id)):
            kv = span.attributes.add()
            kv.key, kv.value.string_value = key, text
        for key, value in (("gen_ai.usage.input_tokens", 900 + i), ("gen_ai.usage.output_tokens", 40),
                           ("gen_ai.usage.cache_read.input_tokens", 100)):
            kv = span.attributes.add()
            kv.key, kv.value.int_value = key, value
    return request.SerializeToString(), ids


def exporter_client(port: int, client: int, size: int, stop: threading.Event, tally: Tally) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    number = 0
    while not stop.is_set():
        body, ids = batch(client, number, size)
        number += 1
        for _attempt in range(50):
            try:
                conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
                response = conn.getresponse()
                payload = response.read()
            except (OSError, http.client.HTTPException) as exc:
                tally.errors.append(f"client {client}: {type(exc).__name__}")
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                continue
            tally.status(response.status)
            if response.status == 200:
                parsed = ExportTraceServiceResponse.FromString(payload)
                if parsed.partial_success.rejected_spans == 0:
                    with tally.lock:
                        tally.accepted.update(ids)
                        tally.sent_batches += 1
                break
            if response.status in (429, 503):
                time.sleep(float(response.getheader("Retry-After") or 0.1) / 10)  # back off, then retry
                continue
            tally.errors.append(f"client {client}: HTTP {response.status}")
            break
    conn.close()


def slow_header_client(port: int, stop: threading.Event, tally: Tally) -> None:
    """Trickles a request's headers one byte every 0.5 s until the receiver hangs up."""
    head = (b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
            b"Content-Length: 10\r\n" + b"X-Padding: " + b"a" * 4096 + b"\r\n\r\n")
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
                for byte in head:
                    if stop.is_set():
                        return
                    sock.sendall(bytes([byte]))
                    if stop.wait(0.5):
                        return
        except OSError:  # reset or closed by the receiver's deadline
            with tally.lock:
                tally.slow_cut_off += 1


def oversized_client(port: int, stop: threading.Event, tally: Tally, max_body: int) -> None:
    bomb = gzip.compress(b"\x00" * (64 << 20))
    while not stop.is_set():
        for headers, body in (({"Content-Length": str(max_body + 1)}, b""),
                              ({"Content-Encoding": "gzip", "Content-Length": str(len(bomb))}, bomb)):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                conn.putrequest("POST", "/v1/traces")
                conn.putheader("Content-Type", "application/x-protobuf")
                for key, value in headers.items():
                    conn.putheader(key, value)
                conn.endheaders()
                if body:
                    conn.send(body)
                status = conn.getresponse().status
            except (OSError, http.client.HTTPException) as exc:
                status = -1
                tally.oversized_other.append(type(exc).__name__)
            finally:
                conn.close()
            with tally.lock:
                if status == 413:
                    tally.oversized_413 += 1
                elif status != -1:
                    tally.oversized_other.append(str(status))
        stop.wait(0.5)


def prober(port: int, stop: threading.Event, tally: Tally) -> None:
    while not stop.wait(0.2):
        try:
            _, seconds = scrape(port, timeout=30)
        except OSError as exc:
            tally.errors.append(f"scrape: {exc}")
            continue
        tally.scrape_seconds.append(seconds)


def run(seconds: float, clients: int = 4, slow: int = 3, oversized: int = 2, size: int = 50,
        max_body: int = 1 << 20, max_scrape_seconds: float = 2.0, workdir: Path | None = None) -> dict[str, object]:
    """One load run; returns the figures (``ok`` says whether every check held)."""
    work = workdir or Path(tempfile.mkdtemp(prefix="load-otlp-"))
    config = work / "config.yaml"
    config.write_text(f'listen: "127.0.0.1:0"\nstate_dir: {work / "state"}\ncheckpoint_interval_seconds: 1\n'
                      f'otlp:\n  enabled: true\n  listen: "127.0.0.1:0"\n  max_body_bytes: {max_body}\n'
                      "  queue_size: 64\n")
    sidecar = SidecarProcess(config, work / "stderr.log")
    tally = Tally()
    try:
        mport, oport = sidecar.metrics_port(), sidecar.otlp_port()
        stop = threading.Event()
        threads = [threading.Thread(target=exporter_client, args=(oport, c, size, stop, tally), daemon=True)
                   for c in range(clients)]
        threads += [threading.Thread(target=slow_header_client, args=(oport, stop, tally), daemon=True)
                    for _ in range(slow)]
        threads += [threading.Thread(target=oversized_client, args=(oport, stop, tally, max_body), daemon=True)
                    for _ in range(oversized)]
        probe = threading.Thread(target=prober, args=(mport, stop, tally), daemon=True)
        rss_start = sidecar.rss_kib()
        started = time.monotonic()
        for thread in [*threads, probe]:
            thread.start()
        stop.wait(seconds)
        stop.set()
        for thread in threads:
            thread.join(40)
        elapsed = time.monotonic() - started
        probe.join(40)
        expected = len(tally.accepted)
        deadline = time.monotonic() + 60
        counted = -1.0
        while time.monotonic() < deadline:
            sums, _ = scrape(mport)
            counted = sums.get("llm_savings_requests_total", 0.0)
            if counted >= expected:
                break
            time.sleep(0.2)  # pacing while the dispatcher drains its queue
        rss_end = sidecar.rss_kib()
        code = sidecar.stop()
    except BaseException:
        if sidecar.proc.poll() is None:
            sidecar.stop(kill=True)
        raise
    latencies = sorted(tally.scrape_seconds)
    figures: dict[str, object] = {
        "seconds": round(elapsed, 1),
        "spans_accepted": expected,
        "spans_counted": int(counted),
        "spans_per_second": round(expected / elapsed, 1) if elapsed else 0.0,
        "batches": tally.sent_batches,
        "statuses": dict(sorted(tally.statuses.items())),
        "slow_clients_cut_off": tally.slow_cut_off,
        "oversized_413": tally.oversized_413,
        "oversized_other": sorted(set(tally.oversized_other)),
        "scrapes": len(latencies),
        "scrape_p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "scrape_max_ms": round(latencies[-1] * 1000, 1) if latencies else None,
        "rss_kib_start_end": (rss_start, rss_end),
        "exit_code": code,
        "errors": tally.errors[:10],
    }
    figures["ok"] = bool(
        counted == expected and expected > 0 and code == 0 and latencies
        and latencies[-1] <= max_scrape_seconds and tally.oversized_413 > 0
        and not [o for o in tally.oversized_other if o not in ("413", "ConnectionResetError", "BrokenPipeError")]
    )
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--slow-clients", type=int, default=3)
    parser.add_argument("--oversized-clients", type=int, default=2)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--max-scrape-seconds", type=float, default=2.0)
    args = parser.parse_args(argv)
    figures = run(args.seconds, args.clients, args.slow_clients, args.oversized_clients, args.batch,
                  max_scrape_seconds=args.max_scrape_seconds)
    for key, value in figures.items():
        print(f"{key:22} {value}")
    return 0 if figures["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
