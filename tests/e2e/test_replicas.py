"""Several standalone replicas behind trace-id-affine routing count each request once, retries included.

Three real sidecar processes receive OTLP/HTTP from a router that routes the
way the OpenTelemetry Collector's loadbalancing exporter does with
``routing_key: traceID`` (``tests/support/otlp_router.py``, a stand-in: the
collector binary is not installable here). The real OTel SDK's OTLP/HTTP
exporter sends batches of GenAI spans from many traces; the router loses the
acknowledgement of one export after delivering it and refuses another
before delivery, and the SDK retries both with the same spans; the client
also re-sends a batch that had been acknowledged. Each replica keeps its own
dedupe ledger (keyed by ``gen_ai.response.id``): a retried span has the same
trace id, so it lands on the replica that already counted it. The sum of the
replicas' counters is each request once. The control, round-robin without
affinity, counts the retried spans again on other replicas.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.otlp_router import Failure, Mode, Router
from tests.support.prices import one_version
from tests.support.processes import Process, poll, samples, scrape, total

REPLICAS = 3
TRACES = 40
BATCH = 8
# export number -> what goes wrong: the 2nd is delivered but its 200 is lost, the 4th is refused
PLAN: dict[int, Failure] = {1: "after", 3: "before"}


def make_spans() -> list[ReadableSpan]:
    """TRACES traces; every fourth holds two model calls (an agent turn), each with its own response id."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "gateway"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("opentelemetry.instrumentation.openai_v2")
    for trace in range(TRACES):
        calls = 2 if trace % 4 == 0 else 1
        with tracer.start_as_current_span("agent turn" if calls == 2 else f"chat gpt-4o {trace}"):
            for call in range(calls):
                with tracer.start_as_current_span("chat gpt-4o") as span:
                    span.set_attributes({
                        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                        "gen_ai.request.model": "gpt-4o", "gen_ai.response.id": f"chatcmpl-{trace}-{call}",
                        "gen_ai.usage.input_tokens": 1000 + trace, "gen_ai.usage.output_tokens": 50 + call,
                    })
    provider.shutdown()
    return [span for span in memory.get_finished_spans() if span.attributes
            and "gen_ai.response.id" in span.attributes]


def start_replicas(tmp: Path, name: str) -> list[tuple[Process, str, int]]:
    (tmp / "prices.yaml").write_text(one_version("v1"))
    replicas = []
    for index in range(REPLICAS):
        home = tmp / f"{name}-{index}"
        home.mkdir()
        config = home / "config.yaml"
        config.write_text("\n".join([
            "schema: llm-savings-config/v1", 'listen: "127.0.0.1:0"', f'state_dir: "{home / "state"}"',
            f'prices: "{tmp / "prices.yaml"}"', "sources: []", "otlp:", "  enabled: true",
            '  listen: "127.0.0.1:0"']) + "\n")
        process = Process(config, home / "sidecar.log")
        port = process.port()
        match = poll(lambda p=process: re.search(r"OTLP/HTTP receiver listening on (\S+)", p.log()), 20,
                     "the OTLP receiver's address")
        replicas.append((process, match.group(1), port))
    return replicas


@pytest.fixture
def processes() -> Iterator[list[Process]]:
    started: list[Process] = []
    yield started
    for process in started:
        if process.proc.poll() is None:
            process.proc.terminate()
            process.wait()


def run(tmp: Path, mode: Mode, started: list[Process]) -> tuple[list[float], list[float], Router, int]:
    """Export every span through a router in ``mode``; returns requests and duplicates per replica."""
    replicas = start_replicas(tmp, mode)
    started.extend(process for process, _url, _port in replicas)
    spans = make_spans()
    batches = [spans[i:i + BATCH] for i in range(0, len(spans), BATCH)]
    with Router([url for _process, url, _port in replicas], mode, PLAN) as router:
        exporter = OTLPSpanExporter(endpoint=router.url, timeout=30)
        for batch in batches:
            assert exporter.export(batch) == SpanExportResult.SUCCESS  # the SDK retried the failed ones
        assert exporter.export(batches[0]) == SpanExportResult.SUCCESS  # an upstream re-sends a batch
        exporter.shutdown()
    expected = len({d.response_id for d in router.deliveries})
    # every distinct (replica, response id) pair is counted once on its replica
    counted_pairs = len({(d.endpoint, d.response_id) for d in router.deliveries})

    def settled() -> list[tuple[float, float]] | None:
        got = [(total(parsed, "llm_savings_requests_total"), total(parsed, "llm_savings_duplicates_total"))
               for parsed in (samples(scrape(port)) for _process, _url, port in replicas)]
        delivered = sum(requests + duplicates for requests, duplicates in got)
        return got if delivered == len(router.deliveries) and sum(r for r, _ in got) == counted_pairs else None

    counts = poll(settled, 30, "every delivered span counted or deduplicated")
    return [r for r, _ in counts], [d for _, d in counts], router, expected


def test_trace_id_affinity_counts_each_request_once_across_replicas(
        tmp_path: Path, processes: list[Process]) -> None:
    requests, duplicates, router, expected = run(tmp_path, "trace_id", processes)
    assert expected == len(make_spans()) == TRACES + TRACES // 4
    assert sum(requests) == expected  # each model call once, on one replica
    assert sum(duplicates) == len(router.deliveries) - expected > BATCH  # the retries, deduplicated
    assert all(r > 0 for r in requests)  # the work is spread over every replica
    # affinity: every delivery of a trace went to one replica, and that is the ring's choice
    owners: dict[bytes, set[str]] = {}
    for delivery in router.deliveries:
        owners.setdefault(delivery.trace_id, set()).add(delivery.endpoint)
    assert all(len(endpoints) == 1 for endpoints in owners.values())
    assert all(router.ring.endpoint_for(trace) in endpoints for trace, endpoints in owners.items())
    # one request per batch, one retry per planned failure, and the re-sent batch
    assert router.requests == len(range(0, expected, BATCH)) + len(PLAN) + 1


def test_round_robin_without_affinity_double_counts(tmp_path: Path, processes: list[Process]) -> None:
    requests, _duplicates, router, expected = run(tmp_path, "round_robin", processes)
    assert sum(requests) > expected  # a retry on another replica is counted again
    assert sum(requests) == len({(d.endpoint, d.response_id) for d in router.deliveries})
