"""An install without a C compiler maps every request as one with the C modules.

The three C modules (``_views``, ``_correlator``, ``_reads``) are optional:
without them the decoder reads upb's messages and the mapping and the
counted-once rules run in Python. A child interpreter with the modules hidden
maps the same requests (every captured request of the real instrumentations,
stacked ones reporting one call twice among them, and the SDK's spans of
every dialect, re-sent) as this one, and the outcomes must be equal, record
for record.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from exporter.sources.otlp.attributes import c_reads
from exporter.sources.otlp.correlator import NATIVE
from exporter.sources.otlp.decode import PROTOBUF_VIEWS
from tests.fixtures.otlp.spans import make_spans
from tests.live.spans import FIXTURES, request_bytes

REPO = Path(__file__).resolve().parents[3]
HIDDEN = ("_views", "_correlator", "_reads")

# Maps the bodies given on stdin (hex, one per line) with shared options; prints the outcomes and which
# implementation ran. With ``hide``, the C modules cannot be imported.
CHILD = f"""
import json, sys
if sys.argv[1] == "hide":
    class Hide:
        def find_spec(self, name, path=None, target=None):
            if name.rsplit(".", 1)[-1] in {set(HIDDEN)!r}:
                raise ImportError("hidden: " + name)
            return None
    sys.meta_path.insert(0, Hide())
from exporter.sources.otlp.attributes import c_reads
from exporter.sources.otlp.correlator import NATIVE
from exporter.sources.otlp.decode import PROTOBUF_VIEWS
from exporter.sources.otlp.mapping import map_protobuf
from exporter.sources.otlp.spans import MappingOptions
options = MappingOptions()
out = []
for line in sys.stdin:
    result, spans = map_protobuf(bytes.fromhex(line.strip()), options)
    out.append([spans, result.records, sorted(result.rejected.items()), sorted(result.ignored.items())])
print(json.dumps({{"c": [PROTOBUF_VIEWS, NATIVE, c_reads is not None], "out": out}}, sort_keys=True))
"""


def _bodies() -> list[bytes]:
    """The captured protobuf requests of every real instrumentation (tests/fixtures/dialects), then
    the SDK's spans of every dialect in two requests, all at once, and re-sent."""
    captured = [request_bytes(request) for path in sorted(FIXTURES.glob("*/*.json"))
                for request in json.loads(path.read_text()).get("requests", [])
                if request.get("content_type") == "application/x-protobuf"]
    spans = list(make_spans().values())
    whole = encode_spans(spans).SerializeToString()
    halves = [encode_spans(spans[: len(spans) // 2]).SerializeToString(),
              encode_spans(spans[len(spans) // 2:]).SerializeToString()]
    return [*captured, *halves, whole, whole]


def _run(mode: str, bodies: list[bytes]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", CHILD, mode], input="\n".join(b.hex() for b in bodies),
                          capture_output=True, text=True, cwd=REPO, check=True, timeout=120)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_the_python_only_install_maps_as_the_c_modules_do() -> None:
    assert (PROTOBUF_VIEWS, NATIVE, c_reads is not None) == ("c", True, True)  # built here: both are compared
    bodies = _bodies()
    with_c, without = _run("keep", bodies), _run("hide", bodies)
    assert with_c["c"] == ["c", True, True]
    assert without["c"] == ["python", False, False]
    assert with_c["out"] == without["out"]
    assert sum(len(records) for _, records, _, _ in with_c["out"]) > 50
    assert any(dict(ignored).get("same_call") for _, _, _, ignored in with_c["out"])  # the rules did something
