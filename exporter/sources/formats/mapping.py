"""A user-written field mapping (YAML, ``schema: llm-savings-mapping/v1``) from any JSON log line to record v1.

The format — fields, entries (``{path}``, ``{path, default}``, ``{value}``, the
``field: path`` shorthand), the path syntax (``choices[0].usage``,
``attrs["gen_ai.usage.input_tokens"]``) and what is refused at load — is
documented in docs/integrations.md ("Any gateway, by a YAML field mapping");
examples/mapping.yaml is a complete one.

What this module promises: the file is validated at load (messages name file,
line and key, via ``exporter.yamlpos``) and compiled once; ``Mapping.apply``
is pure and never raises: what it cannot find it leaves out, and
``records.parse_object`` rejects a record that lacks ``ts`` or ``model`` with
the usual reasons. The ``optimizer.*`` fields (``model``, ``provider``, ``service_tier``, ``usage``) build the
record's ``optimizer`` object (the optimizer's own spend); ``optimizer``
alone maps a whole object. Values are copied as they are (a string count stays a
string and is rejected by the record parser), so nothing is silently coerced.
"""

from __future__ import annotations

import re
from collections.abc import Mapping as AbcMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exporter.yamlpos import Located, YamlError, load_located

SCHEMA = "llm-savings-mapping/v1"

COUNT_FIELDS = frozenset({"tokens_before", "tokens_after", "would_have_saved"})
# ``service_tier``, ``requested_model`` and ``response_cache``: the gateway keys (docs/record-format.md)
LABEL_FIELDS = frozenset({"request_id", "model", "provider", "tenant", "count_method", "service_tier",
                          "requested_model", "response_cache"})
RESPONSE_CACHE_KINDS = ("exact", "semantic", "unspecified")
TEXT_FIELDS = frozenset({"text_before", "text_after"})
LIST_FIELDS = frozenset({"components", "messages_before", "messages_after"})
# the record's ``optimizer`` object, whole or by its keys (``optimizer.model`` -> optimizer["model"])
OPTIMIZER_LABELS = frozenset({"optimizer.model", "optimizer.provider", "optimizer.service_tier"})
OBJECT_FIELDS = frozenset({"usage", "optimizer", "optimizer.usage"})
FIELDS = frozenset({"ts", *OBJECT_FIELDS, *COUNT_FIELDS, *LABEL_FIELDS, *OPTIMIZER_LABELS, *TEXT_FIELDS,
                    *LIST_FIELDS})
_ENTRY_KEYS = frozenset({"path", "value", "default"})

Segment = str | int
_MISSING = object()

_TOKEN = re.compile(
    r"""
    (?P<name>[^.\[\]"']+)                       # a plain key
    | \[(?P<index>-?[0-9]+)\]                   # a list index
    | \["(?P<dq>(?:[^"\\]|\\.)*)"\]             # a quoted key
    | \['(?P<sq>(?:[^'\\]|\\.)*)'\]
    """,
    re.VERBOSE,
)


class MappingError(YamlError):
    """A refused mapping file; the message names file, line, key and value."""


def _fail(doc: Located, where: tuple[str | int, ...], message: str) -> MappingError:
    return MappingError(str(doc.error(where, message)))


class PathError(ValueError):
    """A path expression that does not parse."""


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def compile_path(text: str) -> tuple[Segment, ...]:
    """``a.b[0]["c.d"]`` -> ``("a", "b", 0, "c.d")``; raises ``PathError``."""
    if not isinstance(text, str) or not text:
        raise PathError("a path must be a non-empty string")
    segments: list[Segment] = []
    pos = 0
    expect_key = True  # at the start or after a dot a key must follow
    while pos < len(text):
        if not expect_key and text[pos] == ".":
            pos += 1
            expect_key = True
            if pos == len(text):
                raise PathError(f"path {text!r} ends with a dot")
            continue
        match = _TOKEN.match(text, pos)
        if match is None or (not expect_key and match.group("name") is not None):
            raise PathError(f"path {text!r}: cannot read it at character {pos + 1}")
        if expect_key and match.group("name") is None and segments and text[pos - 1] == ".":
            raise PathError(f"path {text!r}: a bracket cannot follow a dot (character {pos + 1})")
        if match.group("name") is not None:
            name = match.group("name")
            if name != name.strip() or not name:
                raise PathError(f"path {text!r}: a key has surrounding spaces")
            segments.append(name)
        elif match.group("index") is not None:
            segments.append(int(match.group("index")))
        else:
            quoted = match.group("dq") if match.group("dq") is not None else match.group("sq")
            segments.append(_unescape(quoted))
        pos = match.end()
        expect_key = False
    if not segments:
        raise PathError(f"path {text!r} is empty")
    return tuple(segments)


def resolve(obj: Any, path: tuple[Segment, ...]) -> Any:
    """The value at ``path`` inside ``obj``, or ``_MISSING``; never raises."""
    current = obj
    for segment in path:
        if isinstance(segment, int):
            if not isinstance(current, list) or not -len(current) <= segment < len(current):
                return _MISSING
            current = current[segment]
        else:
            if not isinstance(current, AbcMapping) or segment not in current:
                return _MISSING
            current = current[segment]
    return current


def lookup(obj: Any, path: str) -> Any:
    """``resolve(obj, compile_path(path))`` with None for absent: for tests and one-off use."""
    value = resolve(obj, compile_path(path))
    return None if value is _MISSING else value


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    path: tuple[Segment, ...] | None
    value: Any
    has_value: bool
    default: Any
    has_default: bool


class Mapping:
    """A compiled mapping: ``apply(obj)`` builds the canonical record dict."""

    def __init__(self, fields: list[_Field], source: str) -> None:
        self._fields = tuple(fields)
        self.source = source

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self._fields)

    def apply(self, obj: Any) -> Any:
        """Canonical record dict for ``obj``; a non-object is handed on for the parser to reject."""
        if not isinstance(obj, dict):
            return obj
        out: dict[str, Any] = {"source_dialect": "mapping"}
        parts: dict[str, Any] = {}
        for f in self._fields:
            if f.has_value:
                found = f.value
            else:
                assert f.path is not None
                found = resolve(obj, f.path)
                if found is _MISSING or found is None:
                    if not f.has_default:
                        continue
                    found = f.default
            if f.name.startswith("optimizer."):
                parts[f.name[len("optimizer."):]] = found
            else:
                out[f.name] = found
        if parts:  # beside a whole optimizer object the keys win; the input's own object is not changed
            whole = out.get("optimizer")
            out["optimizer"] = {**whole, **parts} if isinstance(whole, dict) else parts
        return out


def _check_constant(doc: Located, where: tuple[str | int, ...], name: str, value: Any) -> None:
    """Constants and defaults are checked at load: a wrong type would reject every line."""
    ok: bool
    if name == "response_cache":
        ok = value in RESPONSE_CACHE_KINDS
        expected = "one of " + ", ".join(RESPONSE_CACHE_KINDS)
    elif name in COUNT_FIELDS:
        ok = type(value) is int and value >= 0
        expected = "a non-negative integer"
    elif name in LABEL_FIELDS or name in OPTIMIZER_LABELS or name in TEXT_FIELDS:
        ok = isinstance(value, str) and (bool(value) or name in TEXT_FIELDS)
        expected = "a non-empty string" if name not in TEXT_FIELDS else "a string"
    elif name == "ts":
        ok = (isinstance(value, str) and bool(value)) or (
            isinstance(value, int | float) and not isinstance(value, bool) and value >= 0)
        expected = "an RFC 3339 string or epoch number"
    elif name in OBJECT_FIELDS:
        ok = isinstance(value, dict)
        expected = "an object"
    else:
        ok = isinstance(value, list)
        expected = "a list"
    if not ok:
        raise _fail(doc, where, f"expected {expected} for {name!r}, got {value!r}")


def parse_mapping(text: str, filename: str) -> Mapping:
    """Validate and compile a mapping document; raises ``MappingError``."""
    try:
        doc = load_located(text, filename)
    except YamlError as exc:
        raise MappingError(str(exc)) from None
    top = doc.data
    if not isinstance(top, dict):
        raise _fail(doc, (), f"expected a mapping, got {type(top).__name__}")
    for key in top:
        if key not in ("schema", "fields"):
            raise _fail(doc, (key,), f"unknown key {key!r} (allowed: fields, schema)")
    if top.get("schema") != SCHEMA:
        raise _fail(doc, ("schema",), f"expected {SCHEMA!r}, got {top.get('schema')!r}")
    raw_fields = top.get("fields")
    if not isinstance(raw_fields, dict) or not raw_fields:
        raise _fail(doc, ("fields",), "expected a non-empty mapping of fields")
    fields: list[_Field] = []
    for name, entry in raw_fields.items():
        where: tuple[str | int, ...] = ("fields", name)
        if name not in FIELDS:
            known = ", ".join(sorted(FIELDS))
            raise _fail(doc, where, f"unknown field {name!r} (record v1 fields: {known})")
        path_at: tuple[str | int, ...] = (*where, "path")
        if isinstance(entry, str):  # the shorthand `field: path`
            entry = {"path": entry}
            path_at = where
        if not isinstance(entry, dict):
            raise _fail(doc, where,
                        f"expected {{path: ...}}, {{value: ...}} or a path string, got {entry!r}")
        for key in entry:
            if key not in _ENTRY_KEYS:
                raise _fail(doc, (*where, key),
                            f"unknown key {key!r} (allowed: default, path, value)")
        has_path, has_value = "path" in entry, "value" in entry
        if has_path == has_value:
            raise _fail(doc, where, "give exactly one of 'path' and 'value'")
        if has_value:
            if "default" in entry:
                raise _fail(doc, (*where, "default"), "'default' only goes with 'path'")
            _check_constant(doc, (*where, "value"), name, entry["value"])
            fields.append(_Field(name, None, entry["value"], True, None, False))
            continue
        raw_path = entry["path"]
        if not isinstance(raw_path, str):
            raise _fail(doc, (*where, "path"), f"expected a string, got {raw_path!r}")
        try:
            path = compile_path(raw_path)
        except PathError as exc:
            raise _fail(doc, path_at, str(exc)) from None
        has_default = "default" in entry
        if has_default:
            _check_constant(doc, (*where, "default"), name, entry["default"])
        fields.append(_Field(name, path, None, False, entry.get("default"), has_default))
    for required in ("ts", "model"):
        if required not in raw_fields:
            raise _fail(doc, ("fields",), f"missing field {required!r} (a record needs it)")
    return Mapping(fields, filename)


def load_mapping(path: str | Path) -> Mapping:
    """Load and compile a mapping file; raises ``MappingError`` naming file, line and key."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise MappingError(f"{file}: cannot read mapping file: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise MappingError(f"{file}: mapping file is not UTF-8") from None
    return parse_mapping(text, str(file))


__all__ = ["SCHEMA", "Mapping", "MappingError", "PathError", "compile_path", "load_mapping",
           "lookup", "parse_mapping", "resolve"]
