"""A stand-in for the OpenTelemetry Collector's loadbalancing exporter, for tests of replicas.

The collector (``otelcol-contrib``) is not installable here (no Debian, PyPI or
npm package ships it), so this router does what its ``loadbalancing`` exporter
does with ``routing_key: traceID``: every span of an OTLP/HTTP export goes to
the backend that owns its trace id on a consistent-hash ring, each backend
getting one request with its share (resource and scope kept). The ring is
built as that exporter builds it (``consistent_hashing.go``): 100 points per
endpoint at ``crc32(endpoint + byte(i)) % 36000``, a point already taken kept
by the first endpoint, sorted; a trace goes to the first point at or after
``crc32(trace_id) % 36000``, wrapping round. ``round_robin`` mode sends whole
requests to the backends in turn, as a plain Service would: the control that
double counts.

``plan`` injects failures by request number: ``"before"`` answers 503 without
forwarding, ``"after"`` forwards and then answers 503 (the acknowledgement is
lost, so the client retries spans that were already delivered).
"""

from __future__ import annotations

import gzip
import threading
import urllib.request
import zlib
from bisect import bisect_left
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal, NamedTuple

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

MAX_POSITIONS = 36_000
POINTS_PER_ENDPOINT = 100
RESPONSE_ID = "gen_ai.response.id"
Mode = Literal["trace_id", "round_robin"]
Failure = Literal["before", "after"]


class HashRing:
    """The loadbalancing exporter's ring: which endpoint owns a trace id."""

    def __init__(self, endpoints: list[str]) -> None:
        owners: dict[int, str] = {}
        for endpoint in endpoints:
            for point in range(POINTS_PER_ENDPOINT):
                position = zlib.crc32(endpoint.encode() + bytes([point])) % MAX_POSITIONS
                owners.setdefault(position, endpoint)  # taken: the first endpoint keeps it
        self.positions = sorted(owners)
        self.owners = [owners[p] for p in self.positions]

    def endpoint_for(self, trace_id: bytes) -> str:
        index = bisect_left(self.positions, zlib.crc32(trace_id) % MAX_POSITIONS)
        return self.owners[index % len(self.owners)]


class Delivery(NamedTuple):
    """One span handed to a backend that answered 200."""

    endpoint: str
    trace_id: bytes
    response_id: str


class Router:
    """An OTLP/HTTP endpoint in front of several sidecars (see the module docstring)."""

    def __init__(self, endpoints: list[str], mode: Mode, plan: Mapping[int, Failure] | None = None) -> None:
        self.endpoints = endpoints
        self.mode = mode
        self.ring = HashRing(endpoints)
        self.plan = dict(plan or {})
        self.requests = 0
        self.deliveries: list[Delivery] = []
        self._next = 0
        self._lock = threading.Lock()
        router = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                status = router.handle(body)
                self.send_response(status)
                if status != 200:
                    self.send_header("Retry-After", "0")
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:  # quiet: no access log
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def __enter__(self) -> Router:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def handle(self, body: bytes) -> int:
        with self._lock:  # one export at a time: request numbers and round-robin turns are exact
            number = self.requests
            self.requests += 1
            failure = self.plan.get(number)
            if failure == "before":
                return 503
            request = ExportTraceServiceRequest.FromString(body)
            shares = self._split(request)
            delivered = all(self._forward(endpoint, share) for endpoint, share in shares.items())
            return 503 if failure == "after" or not delivered else 200

    def _split(self, request: ExportTraceServiceRequest) -> dict[str, ExportTraceServiceRequest]:
        if self.mode == "round_robin":
            endpoint = self.endpoints[self._next % len(self.endpoints)]
            self._next += 1
            return {endpoint: request}
        shares: dict[str, ExportTraceServiceRequest] = {}
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    share = shares.setdefault(self.ring.endpoint_for(span.trace_id), ExportTraceServiceRequest())
                    target = _same_resource(share, resource_spans)
                    scope = _same_scope(target, scope_spans)
                    scope.spans.append(span)
        return shares

    def _forward(self, endpoint: str, share: ExportTraceServiceRequest) -> bool:
        forward = urllib.request.Request(endpoint, data=share.SerializeToString(), method="POST",
                                         headers={"Content-Type": "application/x-protobuf"})
        try:
            with urllib.request.urlopen(forward, timeout=10) as response:
                ok = response.status == 200
        except OSError:
            return False
        if ok:
            for resource_spans in share.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.deliveries.append(Delivery(endpoint, bytes(span.trace_id), _response_id(span)))
        return ok


def _same_resource(share: ExportTraceServiceRequest, source: ResourceSpans) -> ResourceSpans:
    """The share's ResourceSpans for ``source``'s resource (one per source, in order)."""
    for existing in share.resource_spans:
        if existing.resource == source.resource and existing.schema_url == source.schema_url:
            return existing
    added = share.resource_spans.add()
    added.resource.CopyFrom(source.resource)
    added.schema_url = source.schema_url
    return added


def _same_scope(target: ResourceSpans, source: ScopeSpans) -> ScopeSpans:
    for existing in target.scope_spans:
        if existing.scope == source.scope:
            return existing
    added = target.scope_spans.add()
    added.scope.CopyFrom(source.scope)
    added.schema_url = source.schema_url
    return added


def _response_id(span: Span) -> str:
    for attribute in span.attributes:
        if attribute.key == RESPONSE_ID:
            return str(attribute.value.string_value)
    return ""
