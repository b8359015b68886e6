"""OTLP/HTTP trace receiver: ``POST /v1/traces`` -> canonical records -> a sink.

The entry point callers import; what it answers is the package's contract
(``exporter.sources.otlp``). The parts: ``receiver`` (``OtlpReceiver``, its
queue and dispatcher thread), ``server`` (the HTTP server and handler),
``body`` (framing and capped inflate).
"""

from __future__ import annotations

from exporter.sources.otlp.body import BadBody, BodyTooLarge, inflate_capped
from exporter.sources.otlp.receiver import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_PORT,
    OtlpReceiver,
    ReceiverStats,
)
from exporter.sources.otlp.server import CT_JSON, CT_PROTOBUF, TRACES_PATH

__all__ = [
    "CT_JSON",
    "CT_PROTOBUF",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_PORT",
    "TRACES_PATH",
    "BadBody",
    "BodyTooLarge",
    "OtlpReceiver",
    "ReceiverStats",
    "inflate_capped",
]
