"""``OtlpReceiver``: the OTLP/HTTP trace receiver's lifecycle, bounded queue and dispatcher.

Threads: HTTP handlers (``exporter.sources.otlp.server``) decode and map; one
dispatcher thread calls ``sink(records, source)`` and ``reject(reason,
source, ts)`` so the pipeline sees a single caller. Binds 127.0.0.1 by
default; port 0 picks a free port (tests).

The receiver knows nothing of metrics: ``stats.snapshot()`` gives counters the
caller exports as self-metrics. No span content is logged.
"""

from __future__ import annotations

import inspect
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from exporter.sources.otlp.correlate import evicted_early
from exporter.sources.otlp.decode import PROTOBUF_VIEWS
from exporter.sources.otlp.mapping import MAPPING_LOOP, BatchResult, MappingOptions
from exporter.sources.otlp.server import REFUSAL_REASONS, TRACES_PATH, TraceServer

log = logging.getLogger(__name__)

DEFAULT_PORT = 4318
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_INFLIGHT_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_CONNECTIONS = 64
DEFAULT_IDLE_TIMEOUT = 15.0
DEFAULT_REQUEST_TIMEOUT = 30.0

Sink = Callable[[list[dict[str, Any]], str], None]
# (reason, source, ts) like Pipeline.reject; a two-argument (reason, source) callable works too
RejectSink = Callable[..., None]


@dataclass
class ReceiverStats:
    """Counters for self-metrics; every key is a bounded set."""

    requests: Counter[int] = field(default_factory=Counter)  # by HTTP status
    spans_accepted: int = 0
    spans_rejected: Counter[str] = field(default_factory=Counter)
    spans_ignored: Counter[str] = field(default_factory=Counter)
    bytes_received: int = 0  # request bodies as sent (compressed)
    bytes_decoded: int = 0  # after decompression
    queue_full: int = 0
    sink_errors: int = 0
    connections_refused: int = 0  # at max_connections with nothing to evict
    connections_reaped: int = 0  # request not in within request_timeout (or stalled)
    # requests refused and connections cut by the limits, by REFUSAL_REASONS
    refused: Counter[str] = field(default_factory=Counter)
    # live values (inflight_bytes, connections, correlation_evicted) read at snapshot time
    gauges: Callable[[], dict[str, int]] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requests": dict(self.requests),
                "spans_accepted": self.spans_accepted,
                "spans_rejected": dict(self.spans_rejected),
                "spans_ignored": dict(self.spans_ignored),
                "bytes_received": self.bytes_received,
                "bytes_decoded": self.bytes_decoded,
                "queue_full": self.queue_full,
                "sink_errors": self.sink_errors,
                "connections_refused": self.connections_refused,
                "connections_reaped": self.connections_reaped,
                "refused": {reason: self.refused[reason] for reason in REFUSAL_REASONS},
                "inflight_bytes": 0,
                "connections": 0,
                "correlation_evicted": 0,
            } | (self.gauges() if self.gauges is not None else {})

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + n)

    def refuse(self, reason: str) -> None:
        with self._lock:
            self.refused[reason] += 1
            if reason == "connections":
                self.connections_refused += 1
            elif reason == "slow_sender":
                self.connections_reaped += 1

    def status(self, code: int) -> None:
        with self._lock:
            self.requests[code] += 1


def _accepts_three_args(func: Callable[..., Any]) -> bool:
    """Whether ``func(reason, source, ts)`` is a valid call (else it is called with two)."""
    try:
        inspect.signature(func).bind("reason", "source", None)
    except TypeError:
        return False
    except ValueError:  # no signature (a builtin): assume the Pipeline.reject shape
        return True
    return True



class OtlpReceiver:
    """OTLP/HTTP trace receiver feeding ``sink(records, source)`` from one dispatcher thread.

    ``reject(reason, source, ts)``, when given (``Pipeline.reject`` fits), is
    called once per rejected span (bounded reasons of
    ``exporter.engine.records.REJECTION_REASONS``; ``ts`` the span's end time when
    readable, else None) so the pipeline counts them with every other rejection.
    """

    def __init__(
        self,
        sink: Sink,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        queue_size: int = 64,
        bearer_token: str | None = None,
        reject: RejectSink | None = None,
        source: str = "otlp",
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_inflight_bytes: int = DEFAULT_MAX_INFLIGHT_BYTES,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        retry_after: int = 1,
        options: MappingOptions | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if min(max_body_bytes, queue_size, max_connections, max_inflight_bytes) <= 0:
            raise ValueError(
                "max_body_bytes, queue_size, max_connections and max_inflight_bytes must be positive"
            )
        if idle_timeout <= 0 or request_timeout <= 0:
            raise ValueError("idle_timeout and request_timeout must be positive")
        self.sink = sink
        self.reject = reject
        self._reject_takes_ts = reject is not None and _accepts_three_args(reject)
        self.host = host
        self._requested_port = port
        self.max_body_bytes = max_body_bytes
        self.bearer_token = bearer_token.encode("utf-8") if bearer_token else None
        self.source = source
        self.max_connections = max_connections
        self.max_inflight_bytes = max_inflight_bytes
        self.idle_timeout = idle_timeout
        self.request_timeout = request_timeout
        self.retry_after = retry_after
        self.options = options or MappingOptions()
        self.clock = clock
        self.stats = ReceiverStats(gauges=self._gauges)
        self._queue: queue.Queue[BatchResult | None] = queue.Queue(maxsize=queue_size)
        self._server: TraceServer | None = None
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._accepting = False
        self._accept_lock = threading.Lock()  # no batch can be queued behind stop()'s sentinel

    @property
    def port(self) -> int:
        if self._server is None:
            return self._requested_port
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{TRACES_PATH}"

    def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("receiver already started")
        self._stopping.clear()
        self._server = TraceServer(self, (self.host, self._requested_port))
        self._accepting = True
        self._threads = [
            threading.Thread(
                target=self._server.serve_forever, args=(0.2,), name="otlp-http", daemon=True
            ),
            threading.Thread(target=self._dispatch, name="otlp-dispatch", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        log.info("OTLP/HTTP receiver listening on %s (protobuf views: %s, mapping: %s)", self.url, PROTOBUF_VIEWS,
                 MAPPING_LOOP)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, deliver what is queued, then return."""
        server = self._server
        if server is None:
            return
        with self._accept_lock:
            self._accepting = False
        server.shutdown()
        server.server_close()
        self._stopping.set()
        try:
            self._queue.put(None, timeout=timeout)  # behind what is queued
        except queue.Full:
            log.warning("OTLP dispatcher did not drain its queue within %.1f s", timeout)
        for thread in self._threads:
            thread.join(timeout)
        self._server = None
        self._threads = []

    def enqueue(self, result: BatchResult) -> int:
        """Hand a mapped request to the dispatcher; the HTTP status to answer."""
        with self._accept_lock:
            if not self._accepting:
                return 503
            if result.records or result.rejected:
                try:
                    self._queue.put_nowait(result)
                except queue.Full:
                    self.stats.add("queue_full")
                    return 429
        with self.stats._lock:
            self.stats.spans_accepted += len(result.records)
            self.stats.spans_rejected.update(result.rejected)
            self.stats.spans_ignored.update(result.ignored)
        return 200

    def _dispatch(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                if item.records:
                    self.sink(item.records, self.source)
                if self.reject is not None:
                    for reason, ts in item.rejections:
                        if self._reject_takes_ts:
                            self.reject(reason, self.source, ts)
                        else:
                            self.reject(reason, self.source)
            except Exception:
                self.stats.add("sink_errors")
                log.exception("OTLP sink failed on a batch of %d records", len(item.records))

    def _gauges(self) -> dict[str, int]:
        # the correlation memory outlives the server (a counter never goes back after stop())
        live = {"correlation_evicted": evicted_early(self.options)}
        server = self._server
        if server is None:
            return live
        return live | {"inflight_bytes": server.budget.used, "connections": server.connections}


__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_INFLIGHT_BYTES",
    "DEFAULT_PORT",
    "DEFAULT_REQUEST_TIMEOUT",
    "OtlpReceiver",
    "ReceiverStats",
    "RejectSink",
    "Sink",
]
