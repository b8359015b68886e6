"""Decode captured fixtures into plain span dicts, for the drift test and the mapping tests.

    from tests.live.spans import load_case, decoded_spans
    case = load_case("anthropic_native", "create_cache_read")
    for span in case.spans: print(span.scope, span.name, span.attributes)

Needs ``opentelemetry-proto`` (the dev venv has it). ``python -m tests.live.spans FIXTURE.json``
prints the spans' usage-related attributes (not the prompt texts).
"""

from __future__ import annotations

import base64
import gzip
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dialects"
USAGE_PREFIXES = (
    "gen_ai.", "openinference.", "llm.", "langfuse.", "litellm.", "openai.", "anthropic.", "metadata.usage"
)
CONTENT_HINTS = (
    "prompts.", "completions.", ".content", "messages", "input.value", "output.value",
    "observation.input", "observation.output", "system_instructions", "llm.anthropic.system",
)


@dataclass(frozen=True)
class Span:
    scope: str
    scope_version: str
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    resource: dict[str, Any]


@dataclass(frozen=True)
class Case:
    dialect: str
    case: str
    doc: dict[str, Any]
    spans: list[Span]

    @property
    def calls(self) -> list[dict[str, Any]]:
        return list(self.doc["calls"])


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind)


def _attrs(kvs: Iterable[Any]) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


def request_bytes(request: dict[str, Any]) -> bytes:
    body = base64.b64decode(request["body_b64"])
    if request.get("content_encoding") == "gzip":
        body = gzip.decompress(body)
    return body


def decode_request(request: dict[str, Any]) -> list[Span]:
    """The spans of one captured OTLP/HTTP request (protobuf or JSON body)."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    msg = ExportTraceServiceRequest()
    body = request_bytes(request)
    if "json" in request.get("content_type", ""):
        json_format.Parse(body, msg)
    else:
        msg.ParseFromString(body)
    out = []
    for rs in msg.resource_spans:
        resource = _attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append(
                    Span(
                        scope=ss.scope.name,
                        scope_version=ss.scope.version,
                        name=s.name,
                        kind=s.kind,
                        trace_id=s.trace_id.hex(),
                        span_id=s.span_id.hex(),
                        parent_span_id=s.parent_span_id.hex(),
                        attributes=_attrs(s.attributes),
                        resource=resource,
                    )
                )
    return out


def decoded_spans(doc: dict[str, Any]) -> list[Span]:
    return [span for req in doc.get("requests", []) for span in decode_request(req)]


def load_case(dialect: str, case: str, root: Path = FIXTURES) -> Case:
    doc = json.loads((root / dialect / f"{case}.json").read_text())
    return Case(dialect, case, doc, decoded_spans(doc))


def cases(dialect: str, root: Path = FIXTURES) -> list[str]:
    return sorted(p.stem for p in (root / dialect).glob("*.json") if not p.name.endswith(".calls.json"))


def usage_attributes(span: Span) -> dict[str, Any]:
    """The span's attributes that can matter for usage counting, without message contents."""
    out = {}
    for key, value in span.attributes.items():
        if not key.startswith(USAGE_PREFIXES):
            continue
        low = key.lower()
        if any(h in low for h in CONTENT_HINTS):
            continue
        if isinstance(value, str) and len(value) > 300 and "usage" not in key:
            value = value[:300] + "..."
        out[key] = value
    return out


def main(argv: list[str]) -> int:
    for name in argv:
        doc = json.loads(Path(name).read_text())
        print(f"== {name}")
        print("calls:", json.dumps(doc["calls"]))
        for span in decoded_spans(doc):
            print(f"  [{span.scope} {span.scope_version}] {span.name} kind={span.kind}")
            for key, value in sorted(usage_attributes(span).items()):
                print(f"      {key} = {value!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
