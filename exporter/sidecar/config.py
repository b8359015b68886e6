"""The sidecar's configuration: declared here once, with what each setting does.

Loaded from YAML (``run --config FILE``), validated at load: a bad value is
refused with a message naming file, line, key and value. Environment
variables override a few settings for containers (``ENV_OVERRIDES``). Every
setting below has a default; a config file only says what differs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from exporter.sources.formats.registry import FORMATS
from exporter.yamlpos import Located, YamlError, load_located

SCHEMA = "llm-savings-config/v1"


class ConfigError(YamlError):
    """A refused configuration; the message names file, line, key and value."""


@dataclass(frozen=True)
class SourceConfig:
    name: str = "gateway"  # the `source` label of the health metrics
    type: str = "jsonl"  # jsonl: tail JSON-lines files; otlp_file: the OTel collector's file exporter output
    paths: tuple[str, ...] = ()  # files or globs; files that appear later are picked up
    format: str = "canonical"  # canonical | litellm | mapping | auto (jsonl only)
    mapping: str | None = None  # YAML field mapping, when format is mapping
    max_line_bytes: int = 1 << 20  # longer lines are skipped and counted (line_too_long)
    poll_interval_seconds: float = 1.0  # polling period; also the fallback when inotify is silent
    watch: bool = True  # inotify via watchdog; false = polling only (network file systems)
    # Descriptors the source may hold. Rotated files read to their end are closed above it and
    # reopened (device+inode verified) when they change; the file being written stays open.
    max_open_files: int = 256


@dataclass(frozen=True)
class LabelConfig:
    max_models: int = 500  # distinct model label values before `other`
    max_tenants: int = 200  # distinct tenant label values before `other`
    max_methods: int = 20  # distinct count_method values before `other`
    max_components: int = 50  # distinct saving components before `other`
    tenant_allowlist: tuple[str, ...] = ()  # when set, other tenants become `other`
    model_allowlist: tuple[str, ...] = ()  # when set, other models become `other`


@dataclass(frozen=True)
class OtlpConfig:
    enabled: bool = False  # run the OTLP/HTTP receiver (POST /v1/traces)
    listen: str = "127.0.0.1:4318"  # its own port, apart from /metrics
    max_body_bytes: int = 16 << 20  # after decompression; larger bodies get 413
    queue_size: int = 64  # export requests waiting for the pipeline; full = 429 + Retry-After
    bearer_token_file: str | None = None  # when set, requests need `Authorization: Bearer <token>`
    # bytes all requests in flight may hold together: body + inflated body + decode working set (8x);
    # beyond it 503 + Retry-After, the body drained unread; 64 MiB keeps the chart's 512Mi limit
    max_inflight_bytes: int = 64 << 20
    max_connections: int = 64  # at the cap the longest-idle, else the slowest, connection is evicted; else 503
    request_timeout_seconds: float = 30.0  # headers + body must be in this long after the first byte
    idle_timeout_seconds: float = 15.0  # keep-alive idle limit; also the longest stall within a request


@dataclass(frozen=True)
class OtlpPushConfig:
    enabled: bool = False  # push the exporter's counters over OTLP metrics as well
    endpoint: str = "http://127.0.0.1:4318/v1/metrics"
    interval_seconds: float = 60.0


@dataclass(frozen=True)
class Config:
    listen: str = "127.0.0.1:9464"  # /metrics, /healthz, /readyz and the landing page
    state_dir: str = "./llm-savings-state"  # checkpoint directory; must be writable and persistent
    prices: str | None = None  # price table file; None = the bundled table; hot-reloaded on change
    timezone: str = "UTC"  # month boundaries are midnights of this zone
    dedupe_window_days: float = 40.0  # request ids remembered this long (by record time)
    dedupe_max_ids: int = 1_000_000  # memory bound of the ledger (~90 bytes/id); oldest evicted first, counted
    checkpoint_interval_seconds: float = 5.0  # how often offsets + aggregates + ledger are committed
    month_retention: int = 3  # months kept besides the current one; older records are refused
    future_skew_seconds: float = 600.0  # records dated further ahead of the clock are refused (future_ts)
    max_request_tokens: int = 10_000_000  # a request claiming more tokens (any tier) is refused (implausible_count)
    # /readyz answers 503 once this many checkpoints in a row have failed (unwritable or full state_dir);
    # default 3, at least 1. One success makes it ready again.
    readiness_checkpoint_failures: int = 3
    # ingestion holds the pipeline lock for at most this many lines at a time, then lets a scrape, the
    # OTLP dispatcher or a checkpoint in; default 2000 (~20 ms of parsing), at least 1
    ingest_slice_lines: int = 2000
    # a price table is loaded only if its size, mtime and inode are the same before the read and this long
    # after it (a file being written in place is retried, never applied half-written); default 0.05 s
    price_settle_seconds: float = 0.05
    labels: LabelConfig = field(default_factory=LabelConfig)
    sources: tuple[SourceConfig, ...] = ()
    otlp: OtlpConfig = field(default_factory=OtlpConfig)
    otlp_push: OtlpPushConfig = field(default_factory=OtlpPushConfig)
    log_level: str = "INFO"
    origin: str = "<defaults>"  # where this config came from, for messages


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


def parse_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


_SECTION_TYPES: dict[str, type] = {"labels": LabelConfig, "otlp": OtlpConfig, "otlp_push": OtlpPushConfig}


def _convert(doc: Located | None, path: tuple[str | int, ...], value: Any, kind: Any, origin: str) -> Any:
    def fail(message: str) -> ConfigError:
        if doc is not None:
            return ConfigError(str(doc.error(path, message)))
        return ConfigError(f"{origin}: {'.'.join(map(str, path))}: {message}")

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
        shown = repr(value) if len(str(value)) <= 40 else f"a value of {len(str(value))} characters"
        raise fail(f"expected a non-negative integer, got {shown}")
    if kind is float or text == "float":
        if not isinstance(value, bool) and isinstance(value, int | float) and value > 0:
            return float(value)
        raise fail(f"expected a positive number, got {value!r}")
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


def _build(cls: type, raw: Any, doc: Located | None, path: tuple[str | int, ...], origin: str) -> Any:
    if not isinstance(raw, dict):
        message = f"expected a mapping, got {type(raw).__name__}"
        raise ConfigError(str(doc.error(path, message)) if doc else f"{origin}: {message}")
    known = {f.name: f for f in fields(cls) if f.name != "origin"}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        kpath = (*path, key)
        if key == "schema" and not path:
            if value != SCHEMA:
                message = f"expected {SCHEMA!r}, got {value!r}"
                raise ConfigError(str(doc.error(kpath, message)) if doc else f"{origin}: schema: {message}")
            continue
        if key not in known:
            message = f"unknown setting {key!r} (known: {', '.join(sorted(known))})"
            raise ConfigError(str(doc.error(kpath, message)) if doc else f"{origin}: {message}")
        if key in _SECTION_TYPES and cls is Config:
            values[key] = _build(_SECTION_TYPES[key], value or {}, doc, kpath, origin)
        elif key == "sources" and cls is Config:
            if not isinstance(value, list):
                message = "expected a list of sources"
                raise ConfigError(str(doc.error(kpath, message)) if doc else f"{origin}: sources: {message}")
            values[key] = tuple(_build(SourceConfig, item, doc, (*kpath, i), origin) for i, item in enumerate(value))
        else:
            values[key] = _convert(doc, kpath, value, known[key].type, origin)
    built = cls(**values)
    _check(built, doc, path, origin)
    return built


def _check(obj: Any, doc: Located | None, path: tuple[str | int, ...], origin: str) -> None:
    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(str(doc.error((*path, key), message)) if doc else f"{origin}: {key}: {message}")

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
    return _with_origin(config, origin)


def _with_origin(config: Config, origin: str) -> Config:
    from dataclasses import replace

    return replace(config, origin=origin)


def apply_env(config: Config, environ: dict[str, str] | None = None) -> Config:
    """Apply ``ENV_OVERRIDES``; a bad value is refused naming the variable."""
    from dataclasses import replace

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
    return apply_env(_with_origin(config, str(file)), environ)
