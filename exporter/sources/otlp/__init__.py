"""OTLP trace sources: spans from OpenTelemetry instrumentations -> canonical records.

What this package promises:

The OTLP/HTTP receiver (``exporter.sources.otlp.http``, trace signal only)
accepts ``POST /v1/traces`` with ``application/x-protobuf`` or
``application/json`` bodies, ``Content-Encoding`` ``gzip``, ``deflate`` or
identity, and answers in the request's content type (protobuf
``ExportTraceServiceResponse`` / ``google.rpc.Status``, or their OTLP/JSON form):

- 200, with ``partial_success`` naming how many spans were rejected and why
  when some were (ignored non-model spans are not rejections);
- 400 undecodable body, bad framing or bad gzip (not retryable); 401 missing or
  wrong bearer token (constant-time compare); 404 other paths; 405 other
  methods on ``/v1/traces``; 411 neither ``Content-Length`` nor chunked;
  413 body over ``max_body_bytes`` - checked against ``Content-Length`` before
  reading and again while inflating, so a gzip bomb stops at the cap;
  415 other content types or encodings;
- 429 with ``Retry-After`` when the bounded queue to the pipeline thread is
  full; 503 with ``Retry-After`` while stopping, when the bytes in flight
  (bodies, inflated bodies, decode estimate) would pass ``max_inflight_bytes``
  (the body is drained unread), or at ``max_connections`` when no idle or slow
  connection can be evicted. Connections idle past ``idle_timeout`` and
  requests not in within ``request_timeout`` are closed (see
  ``exporter.sources.otlp.server``).

The collector's file exporter output (``exporter.sources.otlp.file``) goes
through the same mapping, so a span gives the same record and the same
request_id whichever way it arrives.

The mapping's output (``exporter.sources.otlp.mapping``): one model-call span
-> one record dict that ``exporter.engine.records.parse_object`` validates,
with the usage block in the OpenAI-compatible shape ``{"prompt_tokens",
"completion_tokens", "prompt_tokens_details": {"cached_tokens",
"cache_write_tokens"}}`` so there is one validation path, plus
``source_dialect``; a span that is not a model call is ignored (counted, not
rejected); a malformed one is rejected with a reason of
``exporter.engine.records.REJECTION_REASONS``. No span content (prompts,
completions) is decoded, kept or logged.

Modules: ``http`` (the receiver: ``server`` for HTTP and bodies, ``receiver``
for the queue and dispatch), ``file``, ``decode`` (bytes -> ``SpanView``),
``mapping`` (``SpanView`` -> record; ``plan`` makes its name-only decisions
once per span shape, ``blocks`` builds its usage block, ``correlate`` counts one
call once), ``dialects`` (one module per
instrumentation's attribute names), ``attributes`` (typed readers),
``spans`` (the values passed between them).
"""
