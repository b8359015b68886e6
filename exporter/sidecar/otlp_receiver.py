"""The sidecar's OTLP/HTTP receiver, built from its settings and feeding the pipeline under its lock.

The receiver module is imported only when ``otlp.enabled`` (a sidecar that tails
files never loads the protobuf decoders). The bearer token comes from
``otlp.bearer_token_file``, else from the environment (``ENV_BEARER_TOKEN``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from exporter.engine.pipeline import Pipeline
from exporter.sidecar.config import ENV_BEARER_TOKEN, OtlpConfig, parse_listen


def make_receiver(otlp: OtlpConfig, pipeline: Pipeline) -> Any:
    """An ``OtlpReceiver`` (not started) whose records and rejects go through ``pipeline``."""
    from exporter.sources.otlp.http import OtlpReceiver
    from exporter.sources.otlp.spans import MappingOptions

    token = os.environ.get(ENV_BEARER_TOKEN)
    if otlp.bearer_token_file:
        token = Path(otlp.bearer_token_file).read_text(encoding="utf-8").strip()
    host, port = parse_listen(otlp.listen)

    def sink(records: list[dict[str, Any]], source: str) -> None:
        with pipeline.lock:
            for record in records:
                pipeline.ingest_object(record, source)

    def reject(reason: str, source: str, ts: float | None = None) -> None:
        with pipeline.lock:
            pipeline.reject(reason, source, ts)

    return OtlpReceiver(sink, host, port, max_body_bytes=otlp.max_body_bytes,
                        queue_size=otlp.queue_size, bearer_token=token, reject=reject,
                        max_inflight_bytes=otlp.max_inflight_bytes,
                        max_connections=otlp.max_connections,
                        request_timeout=otlp.request_timeout_seconds,
                        idle_timeout=otlp.idle_timeout_seconds,
                        options=MappingOptions(correlation_max_entries=otlp.correlation_max_entries))


__all__ = ["make_receiver"]
