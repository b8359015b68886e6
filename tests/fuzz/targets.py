"""Fuzz targets: every parser of untrusted input, as ``bytes -> None``.

One signature for every target so that the same function runs under
hypothesis (``tests/fuzz/test_fuzz_targets.py``, ``tests/fuzz/run.py``), under
atheris (``tests/fuzz/atheris_main.py``) and as a regression case (a file in
``tests/fuzz/regressions/`` named ``<target>-<anything>``). A target returns
normally when the input was handled as documented (accepted, or refused with
the parser's documented error type) and raises anything else: an
``AssertionError`` for a broken property, or the unexpected exception itself.

Documented error types, by target:

=================  ====================================================================
records_line       none: ``parse_line`` returns a Record, a Rejection or None
usage              ``UsageError`` (reason ``invalid_count``/``invalid_usage``/``inconsistent_usage``)
prices             ``PriceTableError`` whose message starts ``<file>:<line>: `` or ``<file>: ``
config             ``ConfigError`` whose message starts with the file name
checkpoint         ``ValueError`` from ``checkpoint.decode``; a verified body restores or ``CheckpointError``
checkpoint_state   ``CheckpointError`` from ``sidecar.restore_state`` (a verified body that does not restore)
otlp_protobuf      ``UndecodableRequest`` (HTTP 400)
otlp_json          ``UndecodableRequest`` (HTTP 400); the file-exporter line reader never raises
span_mapping       none: ``map_span`` returns Mapped, Ignored or Rejected
=================  ====================================================================
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from exporter.engine.fastparse import fast_parse
from exporter.engine.records import (
    MAX_EPOCH_SECONDS,
    REJECTION_REASONS,
    Record,
    Rejection,
    parse_line,
    parse_line_reference,
    parse_object,
    parse_ts,
)
from exporter.engine.usage import Usage, UsageError, normalise_usage
from exporter.prices.table import PriceTableError, parse_price_table
from exporter.sidecar import checkpoint
from exporter.sidecar.config import Config, ConfigError, load_config
from exporter.sidecar.state import restore_state
from exporter.sources.otlp.file import records_from_otlp_json_line
from exporter.sources.otlp.mapping import (
    IGNORE_REASONS,
    Ignored,
    Mapped,
    Rejected,
    SpanView,
    UndecodableRequest,
    map_json,
    map_protobuf,
    map_span,
)

Target = Callable[[bytes], None]
COUNT_REASONS = ("invalid_count", "invalid_usage", "inconsistent_usage")
# Both found by this fuzzer and the hostile corpus, both fixed in exporter/engine/fastparse.py: msgspec
# skipped the UTF-8 check of unknown keys, and raised RecursionError on deep nesting.


def _check_record(record: Record) -> None:
    assert math.isfinite(record.ts) and 0 <= record.ts <= MAX_EPOCH_SECONDS, record.ts
    assert isinstance(record.model, str) and record.model
    for value in (record.tokens_before, record.tokens_after, record.would_have_saved):
        assert value is None or (type(value) is int and value >= 0), value
    if record.usage is not None:
        _check_usage(record.usage)


def _check_usage(usage: Usage) -> None:
    for name in ("fresh_input", "cache_read", "cache_write_5m", "cache_write_1h", "output"):
        value = getattr(usage, name)
        assert type(value) is int and value >= 0, (name, value)


def records_line(data: bytes) -> None:
    """Both parsing paths: ``parse_line`` (fast path first) and the reference path."""
    result = parse_line(data)
    assert result is None or isinstance(result, Record | Rejection), type(result)
    if isinstance(result, Rejection):
        assert result.reason in REJECTION_REASONS, result.reason
        assert result.ts is None or 0 <= result.ts <= MAX_EPOCH_SECONDS
    elif isinstance(result, Record):
        _check_record(result)
    fast = fast_parse(data, Record, parse_ts, MAX_EPOCH_SECONDS)
    reference = parse_line_reference(data)
    if fast is not None:  # the fast path may only take lines the reference accepts identically
        assert fast == reference, (fast, reference)
    elif isinstance(reference, Rejection) and isinstance(result, Rejection):
        assert result.reason == reference.reason


def usage(data: bytes) -> None:
    """``normalise_usage`` on any JSON value."""
    try:
        block = orjson.loads(data)
    except orjson.JSONDecodeError:
        return
    try:
        normalised = normalise_usage(block)
    except UsageError as exc:
        assert exc.reason in COUNT_REASONS, exc.reason
        return
    if normalised is not None:
        _check_usage(normalised)


_PRICES_NAME = "fuzz-prices.yaml"
_LOCATED = re.compile(r"^fuzz-prices\.yaml(:\d+)?: ")  # a key may be "\r": echoed raw (reported)


def prices(data: bytes) -> None:
    """The price-table loader; every refusal names the file (and the line when there is one)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return  # load_price_table refuses non-UTF-8 before parsing (tests/e2e/test_hostile_corpus.py)
    try:
        table = parse_price_table(text, _PRICES_NAME)
    except PriceTableError as exc:
        assert _LOCATED.match(str(exc)), str(exc)
        return
    assert table.versions


class _ConfigFile:
    """One reusable file for the config target (load_config reads a path)."""

    path: Path | None = None

    @classmethod
    def get(cls) -> Path:
        if cls.path is None:
            directory = tempfile.mkdtemp(prefix="fuzz-config-")
            cls.path = Path(directory) / "config.yaml"
        return cls.path


def config(data: bytes) -> None:
    """``load_config`` on a file holding ``data``, with no environment overrides."""
    path = _ConfigFile.get()
    path.write_bytes(data)
    try:
        loaded = load_config(path, environ={})
    except ConfigError as exc:
        assert str(exc).startswith(str(path)), str(exc)
        return
    assert loaded.origin == str(path)


def _restore(data: bytes, body: dict[str, Any], blobs: dict[int, bytes]) -> None:
    """What ``Sidecar.__init__`` does with a verified checkpoint: restore, or CheckpointError."""
    loaded = checkpoint.Loaded(1, Path("fuzz.ckpt"), body, blobs, [])
    try:
        restore_state(loaded, 40.0, Config().dedupe_max_ids)
    except checkpoint.CheckpointError as exc:
        assert str(exc).startswith("fuzz.ckpt: "), str(exc)


def checkpoint_file(data: bytes) -> None:
    """``checkpoint.decode`` on any bytes (ValueError); a verified file restores or is refused.

    The sha256 stops random corruption; ``checkpoint_state`` re-signs mutated
    bodies to reach the restore code."""
    try:
        body, blobs = checkpoint.decode(data)
    except ValueError:
        return
    assert isinstance(body, dict)
    _restore(data, body, blobs)


def checkpoint_state(data: bytes) -> None:
    """A re-signed checkpoint whose ``aggregates`` is ``data``'s JSON: it restores or is refused.

    ``data`` is ``<json>\n<blob bytes>``; the blob becomes day 20000's ledger
    digests. This is a checkpoint written by another version or by hand, past
    the checksum: the sidecar must refuse it with ``CheckpointError`` naming the
    file, never die with a traceback."""
    head, _, blob = data.partition(b"\n")
    try:
        state = orjson.loads(head)
    except orjson.JSONDecodeError:
        return
    body = {"schema": "llm-savings-exporter/checkpoint/v1", "aggregates": state}
    decoded, blobs = checkpoint.decode(checkpoint.encode(body, {20000: blob}))
    _restore(data, decoded, blobs)


def _check_batch(result: Any, spans: int) -> None:
    assert len(result.records) + result.rejected_count + sum(result.ignored.values()) == spans
    assert set(result.ignored) <= set(IGNORE_REASONS), result.ignored
    assert set(result.rejected) <= set(REJECTION_REASONS), result.rejected
    for record in result.records:
        outcome = parse_object(record)
        assert isinstance(outcome, Record | Rejection)


def otlp_protobuf(data: bytes) -> None:
    """An ``application/x-protobuf`` export request body."""
    try:
        result, spans = map_protobuf(data)
    except UndecodableRequest:
        return
    _check_batch(result, spans)


def otlp_json(data: bytes) -> None:
    """An OTLP/JSON export request body, and the same bytes as a collector file-exporter line."""
    try:
        result, spans = map_json(data)
    except UndecodableRequest:
        pass
    else:
        _check_batch(result, spans)
    records, reasons = records_from_otlp_json_line(data)
    assert set(reasons) <= set(REJECTION_REASONS), reasons
    for record in records:
        assert isinstance(parse_object(record), Record | Rejection)


def _special(value: Any) -> Any:
    """JSON cannot carry NaN/inf or bytes: {"$f": "nan"} / {"$b": "hex"} stand for them."""
    if isinstance(value, dict):
        if set(value) == {"$f"} and isinstance(value["$f"], str):
            try:
                return float(value["$f"])
            except ValueError:
                return value
        if set(value) == {"$b"} and isinstance(value["$b"], str):
            try:
                return bytes.fromhex(value["$b"])
            except ValueError:
                return value
        return {k: _special(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_special(v) for v in value]
    return value


def span_mapping(data: bytes) -> None:
    """``map_span`` on a span view: ``{"attrs": {...}, "resource": {...}, "scope": s, ...}``."""
    try:
        raw = _special(orjson.loads(data))
    except orjson.JSONDecodeError:
        return
    if not isinstance(raw, dict):
        return
    attrs, resource = raw.get("attrs"), raw.get("resource")
    start, end = raw.get("start_ns", 0), raw.get("end_ns", 0)
    if not (isinstance(attrs, dict) and isinstance(resource, dict)
            and type(start) is int and type(end) is int and 0 <= start < 2**64 and 0 <= end < 2**64):
        return  # not a shape the decoders produce (they read uint64 fields and string keys)
    view = SpanView(attrs=attrs, resource=resource, scope_name=str(raw.get("scope", "")),
                    trace_id=str(raw.get("trace_id", "")), span_id=str(raw.get("span_id", "")),
                    start_ns=start, end_ns=end)
    outcome = map_span(view)
    if isinstance(outcome, Mapped):
        assert isinstance(parse_object(outcome.record), Record | Rejection)
    elif isinstance(outcome, Ignored):
        assert outcome.reason in IGNORE_REASONS
    else:
        assert isinstance(outcome, Rejected) and outcome.reason in REJECTION_REASONS, outcome


TARGETS: dict[str, Target] = {
    "records_line": records_line,
    "usage": usage,
    "prices": prices,
    "config": config,
    "checkpoint": checkpoint_file,
    "checkpoint_state": checkpoint_state,
    "otlp_protobuf": otlp_protobuf,
    "otlp_json": otlp_json,
    "span_mapping": span_mapping,
}

REGRESSIONS = Path(__file__).parent / "regressions"


def regression_cases() -> list[Path]:
    """Kept crashers: ``regressions/<target>-<id>.bin`` (no dash in target names), replayed by the default run."""
    if not REGRESSIONS.is_dir():
        return []
    return sorted(p for p in REGRESSIONS.iterdir() if p.suffix == ".bin")


def target_of(case: Path) -> Target:
    name = case.name.split("-", 1)[0]
    return TARGETS[name]


def save_crasher(target: str, data: bytes) -> Path:
    """Write a crasher where the default run replays it."""
    import hashlib

    REGRESSIONS.mkdir(exist_ok=True)
    path = REGRESSIONS / f"{target}-{hashlib.sha1(data).hexdigest()[:12]}.bin"
    path.write_bytes(data)
    os.chmod(path, 0o644)
    return path
