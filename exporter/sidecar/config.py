"""The sidecar's configuration: declared here once, with what each setting does.

Each setting is ``setting(default, doc)``; docs/configuration.md is generated
from these declarations (``scripts/gen_config_doc.py``, drift-tested).
Loaded from YAML (``run --config FILE``), validated at load: a bad value is
refused with a message naming file, line, key and value. Environment
variables override a few settings for containers (``ENV_OVERRIDES``). Every
setting below has a default; a config file only says what differs.
"""

from __future__ import annotations

import math
import os
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from exporter.sources.formats.registry import FORMATS
from exporter.yamlpos import Located, YamlError, load_located

SCHEMA = "llm-savings-config/v1"
T = TypeVar("T")


class ConfigError(YamlError):
    """A refused configuration; the message names file, line, key and value."""


def setting(default: T, doc: str, limits: tuple[int, int, str] | None = None) -> T:
    """A setting with its default, what it does and its (least, most, unit) when a number has ``limits``,
    declared once: the loader reads them all, docs/configuration.md (``scripts/gen_config_doc.py``) the doc."""
    return field(default=default, metadata={**about(doc), "limits": limits})


def about(doc: str) -> dict[str, str]:
    """The ``metadata`` of a nested section's ``field`` (``labels:``, ``otlp:``): documented like a setting."""
    return {"doc": doc}


def setting_doc(item: Field[Any]) -> str:
    """The documentation declared with a setting ("" for an undocumented internal field)."""
    return str(item.metadata.get("doc", ""))


@dataclass(frozen=True)
class SourceConfig:
    """One file source (an item of ``sources:``): JSON-lines files tailed exactly once through
    rotation, copytruncate, truncation and restarts."""

    name: str = setting("gateway", "Value of the `source` label of the health metrics; unique among the sources.")
    type: str = setting(
        "jsonl",
        "`jsonl`: tail JSON-lines files written by a gateway (read as `format` says); `otlp_file`: tail the "
        "OpenTelemetry Collector's file exporter output (one OTLP/JSON export request per line; `format` is not "
        "used).")
    paths: tuple[str, ...] = setting(
        (),
        "Files or glob patterns (a single string is one pattern); at least one. Files that appear later are "
        "picked up. Match the rotated names too (`*.jsonl*`): files are identified by device, inode and "
        "content, never by name, so a rotated file is never read twice.")
    format: str = setting(
        "canonical",
        "How a `jsonl` line is read: `canonical` (record v1), `litellm` (LiteLLM's standard logging payload), "
        "`mapping` (a YAML field mapping, see `mapping`) or `auto` (LiteLLM's payload or canonical, per line).")
    mapping: str | None = setting(None, "The YAML field mapping file (`llm-savings-mapping/v1`); required when "
                                        "`format` is `mapping`.")
    max_line_bytes: int = setting(1 << 20, "Longest line accepted, in bytes (default 1 MiB); a longer line is "
                                           "skipped and counted as rejected (`line_too_long`). At least 1.")
    poll_interval_seconds: float = setting(1.0, "Polling period in seconds; also the fallback when inotify is "
                                                "silent.")
    watch: bool = setting(True, "Watch the files with inotify; `false` = polling only (NFS and other network "
                                "file systems).")
    max_open_files: int = setting(
        256,
        "File descriptors the source may hold, never more than half of `RLIMIT_NOFILE`. Rotated files read "
        "to their end are closed above it and reopened (device and inode verified) when they change; the "
        "file being written stays open. At least 1.")


@dataclass(frozen=True)
class LabelConfig:
    """Label cardinality caps (``labels:``): past a cap a value becomes ``other``, counted in
    ``llm_savings_label_overflow_total``."""

    max_models: int = setting(500, "Distinct `model` label values before `other`.")
    max_tenants: int = setting(200, "Distinct `tenant` label values before `other`.")
    max_methods: int = setting(20, "Distinct `method` (count method) label values before `other`.")
    max_components: int = setting(50, "Distinct saving `component` label values before `other`.")
    tenant_allowlist: tuple[str, ...] = setting((), "When set, tenants not in the list become `other`.")
    model_allowlist: tuple[str, ...] = setting((), "When set, models not in the list become `other`.")


# otlp.correlation_max_entries at most: about 2 GB at ~480 bytes an entry; a typo, not a deployment, asks more
MAX_CORRELATION_ENTRIES = 1 << 22


@dataclass(frozen=True)
class OtlpConfig:
    """The OTLP/HTTP receiver for OpenTelemetry GenAI spans (``otlp:``): ``POST /v1/traces``,
    protobuf or JSON, optionally gzip."""

    enabled: bool = setting(False, "Run the receiver.")
    listen: str = setting("127.0.0.1:4318", "`HOST:PORT` of the receiver, apart from `/metrics`; `0.0.0.0` "
                                            "accepts other hosts.")
    max_body_bytes: int = setting(16 << 20, "Largest request body after decompression, in bytes (default "
                                            "16 MiB); larger bodies get 413.")
    queue_size: int = setting(64, "Export requests waiting for the pipeline; when full the receiver answers "
                                  "429 with `Retry-After` (`queue_full`).")
    bearer_token_file: str | None = setting(
        None,
        "A file holding the token requests must present as `Authorization: Bearer <token>` (surrounding "
        "whitespace stripped). The token may come from the environment instead (`LLM_SAVINGS_OTLP_BEARER_TOKEN`); "
        "when both are set, this file wins. No token: no authentication.")
    max_inflight_bytes: int = setting(
        64 << 20,
        "Bytes all requests in flight may hold together (body, inflated body and 8x the decoded size as a "
        "decode estimate), reserved before reading; beyond it 503 with `Retry-After`, the body drained unread "
        "(`memory_budget`). A request alone is always admitted. Default 64 MiB, which keeps the chart's 512Mi "
        "memory limit.")
    max_connections: int = setting(
        64,
        "Open connections, one thread each; at the cap a new connection evicts the longest-idle one, else the "
        "slowest request still arriving after 1 s, else gets 503 with `Retry-After`.")
    request_timeout_seconds: float = setting(
        30.0, "Seconds from a request's first byte to its complete body (headers included), checked on every "
              "read so trickling bytes do not extend it (`slow_sender`).")
    idle_timeout_seconds: float = setting(
        15.0, "Seconds an idle keep-alive connection stays open (`idle_timeout`); also the longest silence "
              "within a request.")
    correlation_max_entries: int = setting(
        65536,
        "Entries the memory of recent spans holds at most (the memory that counts one call reported by two "
        "instrumentations in different export requests once; 120 s by arrival). An export request adds about "
        "one entry per span plus one per model call; when the cap forgets entries still inside the 120 s, "
        "`llm_savings_otlp_correlation_evicted_total` counts them. About 480 bytes an entry; 1 to 4,194,304 "
        "([telemetry.md](telemetry.md#the-memory-and-its-cap) sizes it).", (1, MAX_CORRELATION_ENTRIES, "entries"))


@dataclass(frozen=True)
class OtlpPushConfig:
    """Pushing the exporter's metrics over OTLP (``otlp_push:``) besides serving ``/metrics``; needs
    the ``otlp-push`` extra (``pip install llm-savings-exporter[otlp-push]``)."""

    enabled: bool = setting(False, "Push the exporter's counters over OTLP/HTTP metrics as well.")
    endpoint: str = setting("http://127.0.0.1:4318/v1/metrics", "OTLP/HTTP metrics endpoint.")
    interval_seconds: float = setting(60.0, "Seconds between two pushes.")


@dataclass(frozen=True)
class Config:
    """The sidecar's settings (the top level of the file)."""

    listen: str = setting("127.0.0.1:9464", "`HOST:PORT` of `/metrics`, `/healthz`, `/readyz` and the landing "
                                            "page `/`; `0.0.0.0:9464` to be scraped from other hosts.")
    state_dir: str = setting(
        "./llm-savings-state",
        "Checkpoint directory (file offsets, month-to-date aggregates and the dedupe ledger, committed "
        "atomically) and the process lock; must be writable and persistent. One process per directory.")
    prices: str | None = setting(
        None,
        "Price table file (`llm-savings-prices/v1`); `null` = the table bundled with the package. Reloaded "
        "when the file changes and on `SIGHUP`; a bad table is refused and the old one stays.")
    timezone: str = setting("UTC", "IANA time zone whose midnights bound the months (`Europe/Berlin`).")
    dedupe_window_days: float = setting(40.0, "Days (of record time) a `request_id` is remembered: seen again "
                                              "within them, a record is a duplicate, counted once.")
    dedupe_max_ids: int = setting(
        1_000_000,
        "Memory bound of the dedupe ledger (about 20 bytes per id); past it the oldest ids are forgotten "
        "first, counted in `llm_savings_dedupe_evicted_ids_total`. Size it from your request rate times the "
        "window.")
    checkpoint_interval_seconds: float = setting(
        5.0, "Seconds between two checkpoints of offsets, aggregates and ledger (at most one extra per second "
             "after a rotation, a truncation or while a backlog is read).")
    month_retention: int = setting(3, "Months kept besides the current one; records of older months are "
                                      "refused (`expired_month`).")
    future_skew_seconds: float = setting(
        600.0, "Records dated more than this many seconds ahead of the clock are refused (`future_ts`): they "
               "never open a month nor move the dedupe window.")
    max_request_tokens: int = setting(
        10_000_000, "A request claiming more tokens than this in any count (input tiers, output, savings) is "
                    "refused (`implausible_count`), never priced.")
    readiness_checkpoint_failures: int = setting(
        3, "`/readyz` answers 503 once this many checkpoints in a row have failed (an unwritable or full "
           "`state_dir`); one success makes it ready again. At least 1.")
    ingest_slice_lines: int = setting(
        2000, "Lines ingested per hold of the pipeline lock (about 20 ms of parsing) before a scrape, the "
              "OTLP dispatcher or a checkpoint gets in. At least 1.")
    gc_young_threshold: int = setting(
        50_000, "Container allocations Python's garbage collector lets pass between two young collections "
                "(Python's own default is 700): an export request's or a block of lines' short-lived objects "
                "are then freed before a collection scans them, about 2 us less CPU per protobuf span and "
                "5 us per OTLP/JSON span; only garbage cycles, which the state never makes, wait longer. "
                "`0` keeps Python's default. At most 1,000,000.", (0, 1_000_000, "allocations"))
    gil_switch_interval_ms: int = setting(
        20, "Milliseconds a thread holds the interpreter lock before Python makes it hand over to a waiting "
            "one (Python's own is 5): the OTLP receiver's connections then map their requests with fewer forced "
            "hand-overs, 7-17% less CPU per span; a scrape waits at most this long. `0` keeps Python's "
            "default. At most 1,000.", (0, 1000, "ms"))
    price_settle_seconds: float = setting(
        0.05, "A price table is applied only if its size, mtime and inode are the same before the read and "
              "this long after it: a file being written in place is retried, never applied half-written.")
    labels: LabelConfig = field(default_factory=LabelConfig, metadata=about("Label cardinality caps."))
    sources: tuple[SourceConfig, ...] = setting((), "The file sources, a list (see `sources[]`); none is "
                                                    "needed when spans arrive over OTLP.")
    otlp: OtlpConfig = field(default_factory=OtlpConfig, metadata=about("The OTLP/HTTP span receiver."))
    otlp_push: OtlpPushConfig = field(default_factory=OtlpPushConfig, metadata=about("OTLP metrics push."))
    log_level: str = setting("INFO", "`DEBUG`, `INFO`, `WARNING` or `ERROR` (case-insensitive); log lines go to "
                                     "stderr with UTC timestamps.")
    origin: str = "<defaults>"  # where this config came from, for messages (not a setting)


# Environment variable -> (dotted setting, type); applied after the file.
ENV_OVERRIDES: dict[str, tuple[str, type]] = {
    "LLM_SAVINGS_LISTEN": ("listen", str),
    "LLM_SAVINGS_STATE_DIR": ("state_dir", str),
    "LLM_SAVINGS_PRICES": ("prices", str),
    "LLM_SAVINGS_TIMEZONE": ("timezone", str),
    "LLM_SAVINGS_OTLP_ENABLED": ("otlp.enabled", bool),
    "LLM_SAVINGS_OTLP_LISTEN": ("otlp.listen", str),
    "LLM_SAVINGS_OTLP_BEARER_TOKEN_FILE": ("otlp.bearer_token_file", str),
    "LLM_SAVINGS_LOG_LEVEL": ("log_level", str),
}
# The token itself may come from the environment (a Kubernetes Secret); never from the file.
ENV_BEARER_TOKEN = "LLM_SAVINGS_OTLP_BEARER_TOKEN"
ENV_BEARER_TOKEN_DOC = ("The OTLP receiver's bearer token itself (e.g. from a Kubernetes Secret), used unless "
                        "`otlp.bearer_token_file` is set; the token is never a setting of the file.")


def parse_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


_SECTION_TYPES: dict[str, type] = {"labels": LabelConfig, "otlp": OtlpConfig, "otlp_push": OtlpPushConfig}


def _convert(doc: Located | None, path: tuple[str | int, ...], value: Any, kind: Any, origin: str) -> Any:
    def fail(message: str) -> ConfigError:
        return _refused(doc, path, message, origin)

    text = str(kind)
    if kind is bool or text == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise fail(f"expected true or false, got {value!r}")
    if kind is int or text == "int":
        if type(value) is int and 0 <= value < 2**63:
            return value
        # ascii and short: int() refuses 5000 digits and '²' with ValueError (found by tests/hostile)
        if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 18:
            return int(value)
        raise fail(f"expected a non-negative integer, got {_shown(value)}")
    if kind is float or text == "float":
        if not isinstance(value, bool) and isinstance(value, int | float) and value > 0:
            try:
                number = float(value)  # an int of 309 digits or more overflows (found by tests/fuzz)
            except OverflowError:
                number = math.inf
            if math.isfinite(number):  # YAML's .inf is a float too: no setting means "forever"
                return number
        raise fail(f"expected a positive finite number, got {_shown(value)}")
    if text in ("str", "<class 'str'>"):
        if isinstance(value, str) and value:
            return value
        raise fail(f"expected a non-empty string, got {value!r}")
    if text == "str | None":
        if value is None or (isinstance(value, str) and value):
            return value
        raise fail(f"expected a string or null, got {value!r}")
    if text == "tuple[str, ...]":
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
            return tuple(value)
        raise fail(f"expected a list of strings, got {value!r}")
    raise fail(f"unsupported setting type {text}")  # pragma: no cover - a programming error


def _shown(value: Any) -> str:
    """A refused value as the error shows it: long ones by their length (an int past 4,300 digits has no repr)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = repr(value)
    return text if len(text) <= 40 else f"a value of {len(str(value))} characters"


def _refused(doc: Located | None, path: tuple[str | int, ...], message: str, origin: str) -> ConfigError:
    """The error naming the file, line and key when the YAML is at hand, else the origin and the key."""
    if doc is not None:
        return ConfigError(str(doc.error(path, message)))
    return ConfigError(f"{origin}: {'.'.join(map(str, path))}: {message}" if path else f"{origin}: {message}")


def _build(cls: type, raw: Any, doc: Located | None, path: tuple[str | int, ...], origin: str) -> Any:
    if not isinstance(raw, dict):
        raise _refused(doc, path, f"expected a mapping, got {type(raw).__name__}", origin)
    known = {f.name: f for f in fields(cls) if f.name != "origin"}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        kpath = (*path, key)
        if key == "schema" and not path:
            if value != SCHEMA:
                raise _refused(doc, kpath, f"expected {SCHEMA!r}, got {value!r}", origin)
            continue
        if key not in known:
            raise _refused(doc, kpath, f"unknown setting {key!r} (known: {', '.join(sorted(known))})", origin)
        if key in _SECTION_TYPES and cls is Config:
            values[key] = _build(_SECTION_TYPES[key], value or {}, doc, kpath, origin)
        elif key == "sources" and cls is Config:
            if not isinstance(value, list):
                raise _refused(doc, kpath, "expected a list of sources", origin)
            values[key] = tuple(_build(SourceConfig, item, doc, (*kpath, i), origin) for i, item in enumerate(value))
        else:
            values[key] = _convert(doc, kpath, value, known[key].type, origin)
    built = cls(**values)
    _check(built, doc, path, origin)
    return built


def _check(obj: Any, doc: Located | None, path: tuple[str | int, ...], origin: str) -> None:
    def fail(key: str, message: str) -> ConfigError:
        return _refused(doc, (*path, key), message, origin)

    if isinstance(obj, SourceConfig):
        if obj.type not in ("jsonl", "otlp_file"):
            raise fail("type", f"expected jsonl or otlp_file, got {obj.type!r}")
        if obj.format not in FORMATS:
            raise fail("format", f"expected one of {', '.join(FORMATS)}, got {obj.format!r}")
        if obj.format == "mapping" and not obj.mapping:
            raise fail("mapping", "format mapping needs a mapping file")
        if not obj.paths:
            raise fail("paths", "a source needs at least one path or glob")
        if obj.max_line_bytes < 1:
            raise fail("max_line_bytes", f"expected a positive number of bytes, got {obj.max_line_bytes}")
        if obj.max_open_files < 1:
            raise fail("max_open_files", f"expected a positive number of files, got {obj.max_open_files}")
    for item in fields(obj):
        limits, value = item.metadata.get("limits"), getattr(obj, item.name)
        if limits is not None and not limits[0] <= value <= limits[1]:
            raise fail(item.name, f"expected {limits[0]} to {limits[1]} {limits[2]}, got {value}")
    if isinstance(obj, Config | OtlpConfig):
        try:
            parse_listen(obj.listen)
        except ValueError as exc:
            raise fail("listen", str(exc)) from None
    if isinstance(obj, Config):
        try:
            ZoneInfo(obj.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise fail("timezone", f"unknown time zone {obj.timezone!r}") from None
        names = [s.name for s in obj.sources]
        if len(set(names)) != len(names):
            raise fail("sources", "source names must be unique")
        if obj.readiness_checkpoint_failures < 1:
            raise fail("readiness_checkpoint_failures", "expected at least 1")
        if obj.ingest_slice_lines < 1:
            raise fail("ingest_slice_lines", "expected at least 1")
        if obj.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise fail("log_level", f"expected DEBUG, INFO, WARNING or ERROR, got {obj.log_level!r}")


def config_from_dict(raw: dict[str, Any], origin: str = "<dict>") -> Config:
    config: Config = _build(Config, raw, None, (), origin)
    return replace(config, origin=origin)


def apply_env(config: Config, environ: dict[str, str] | None = None) -> Config:
    """Apply ``ENV_OVERRIDES``; a bad value is refused naming the variable."""
    env = os.environ if environ is None else environ
    for variable, (dotted, kind) in ENV_OVERRIDES.items():
        if variable not in env:
            continue
        section, _, key = dotted.rpartition(".")
        value = _convert(None, (variable,), env[variable], kind, "environment")
        changes: dict[str, Any] = {key: value}
        if section:
            changes = {section: replace(getattr(config, section), **changes)}
        config = replace(config, **changes)
        _check(config, None, (), f"environment {variable}")
    return config


def load_config(path: str | Path, environ: dict[str, str] | None = None) -> Config:
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: cannot read config: {exc}") from None
    try:
        doc = load_located(text, str(file))
    except YamlError as exc:
        raise ConfigError(str(exc)) from None
    config: Config = _build(Config, doc.data or {}, doc, (), str(file))
    return apply_env(replace(config, origin=str(file)), environ)
