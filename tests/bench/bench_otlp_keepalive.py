"""Keep-alive latency of the OTLP receiver with the real SDK exporter. Run:
``python tests/bench/bench_otlp_keepalive.py [--root OTHER_CHECKOUT] [--n 50]``.

One ``OTLPSpanExporter`` (its requests.Session keeps the connection alive)
exports the same small batch N times against an in-process receiver of the
given checkout; prints the median and p90 per-export latency. Two writes per
response plus Nagle and the client's delayed ACK showed as ~40 ms stalls per
request; one write on a TCP_NODELAY socket removes them.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    root = ROOT
    if "--root" in sys.argv:
        root = Path(sys.argv[sys.argv.index("--root") + 1]).resolve()
    n = int(sys.argv[sys.argv.index("--n") + 1]) if "--n" in sys.argv else 50
    sys.path.insert(0, str(ROOT))  # the fixtures
    from tests.fixtures.otlp.spans import make_spans

    sys.path.insert(0, str(root))  # the receiver under test
    for name in [m for m in sys.modules if m == "exporter" or m.startswith("exporter.")]:
        del sys.modules[name]
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    import exporter
    from exporter.sources.otlp.http import OtlpReceiver

    rx = OtlpReceiver(lambda records, source: None, "127.0.0.1", 0)
    rx.start()
    spans = make_spans()
    batches = {  # an all-accepted batch has an empty protobuf response body; partial success does not
        "accepted": list(spans.values()),
        "partial_success": [*spans.values(), _invalid_span()],
    }
    print(f"receiver from {Path(exporter.__file__).parent.parent}")
    try:
        for label, batch in batches.items():
            client = OTLPSpanExporter(endpoint=rx.url, timeout=10)
            assert client.export(batch) == SpanExportResult.SUCCESS  # connect + warm up
            latencies = []
            for _ in range(n):
                began = time.perf_counter()
                assert client.export(batch) == SpanExportResult.SUCCESS
                latencies.append((time.perf_counter() - began) * 1000)
            client.shutdown()
            latencies.sort()
            print(
                f"  {label:<16} keep-alive exports={n} median={statistics.median(latencies):.2f} ms "
                f"p90={latencies[int(n * 0.9) - 1]:.2f} ms max={latencies[-1]:.2f} ms "
                f"over 30 ms: {sum(x > 30 for x in latencies)}"
            )
    finally:
        rx.stop()


def _invalid_span() -> object:
    """A model-call span with negative input tokens: rejected, so the response has a body."""
    from opentelemetry.sdk.trace import TracerProvider

    tracer = TracerProvider().get_tracer("bench")
    span = tracer.start_span("chat gpt-4o")
    span.set_attribute("gen_ai.request.model", "gpt-4o")
    span.set_attribute("gen_ai.usage.input_tokens", -1)
    span.end()
    return span


if __name__ == "__main__":
    main()
