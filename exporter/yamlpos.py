"""YAML loading that remembers where every value came from.

Config and price-table errors must name file, line, key and value; PyYAML's
plain ``safe_load`` forgets positions, so we compose the node tree, build the
Python value ourselves and keep a map from key path to line number.
"""

from __future__ import annotations

from typing import Any

import yaml

Path = tuple[str | int, ...]


class YamlError(ValueError):
    """A message that already names file, line, key and value."""


def format_path(path: Path) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            # a key with control characters is quoted: an error message must not forge log lines
            out += ("." if out else "") + (part if part.isprintable() and part.strip() == part else repr(part))
    return out or "(top level)"


class Located:
    """A loaded YAML document plus the line of every key path in it."""

    def __init__(self, filename: str, data: Any, lines: dict[Path, int]) -> None:
        self.filename = filename
        self.data = data
        self.lines = lines

    def line(self, path: Path) -> int:
        """Line of ``path``, or of its nearest ancestor that has one (1-based)."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), 1)

    def error(self, path: Path, message: str) -> YamlError:
        return YamlError(f"{self.filename}:{self.line(path)}: {format_path(path)}: {message}")


# Values reached through an alias are counted apart from the values the text writes itself: aliases can
# expand a small file exponentially ("billion laughs"), and no table needs more than a few of them.
MAX_NODES = 200_000
# The values the text writes cost their bytes; this bounds the memory of a huge file (a value's key path
# and line take ~200 bytes). A full genai-prices import (every provider, all history, 21 MB) has ~0.9M.
MAX_VALUES = 1_500_000


class _Budget:
    """Values built so far, those built beneath a reused (aliased) collection, and the collections built."""

    __slots__ = ("built", "expanded", "reused", "values")

    def __init__(self) -> None:
        self.values = 0
        self.expanded = 0
        self.reused = 0  # > 0 while building a collection that was built before: an alias's expansion
        self.built: set[int] = set()

    def count(self, node: yaml.Node, filename: str) -> None:
        self.values += 1
        if self.reused:
            self.expanded += 1
            if self.expanded > MAX_NODES:
                raise YamlError(f"{filename}:{node.start_mark.line + 1}: document expands to more than "
                                f"{MAX_NODES} values through aliases (alias expansion?)")
        if self.values > MAX_VALUES:
            raise YamlError(f"{filename}:{node.start_mark.line + 1}: document has more than {MAX_VALUES} values")


def _build(node: yaml.Node, path: Path, lines: dict[Path, int], filename: str,
           active: set[int] | None = None, budget: _Budget | None = None) -> Any:
    lines[path] = node.start_mark.line + 1
    budget = _Budget() if budget is None else budget
    budget.count(node, filename)
    if isinstance(node, yaml.MappingNode | yaml.SequenceNode):
        active = set() if active is None else active
        if id(node) in active:
            raise YamlError(f"{filename}:{node.start_mark.line + 1}: {format_path(path)}: "
                            "recursive alias")
        active.add(id(node))
        again = id(node) in budget.built
        budget.built.add(id(node))
        budget.reused += again
        try:
            return _build_collection(node, path, lines, filename, active, budget)
        finally:
            active.discard(id(node))
            budget.reused -= again
    return _scalar(node)


def _build_collection(node: yaml.MappingNode | yaml.SequenceNode, path: Path,
                      lines: dict[Path, int], filename: str, active: set[int], budget: _Budget) -> Any:
    if isinstance(node, yaml.MappingNode):
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise YamlError(f"{filename}:{key_node.start_mark.line + 1}: {format_path(path)}: "
                                "keys must be plain strings")
            key = str(_scalar(key_node))
            if key in result:
                raise YamlError(f"{filename}:{key_node.start_mark.line + 1}: {format_path((*path, key))}: "
                                "duplicate key")
            result[key] = _build(value_node, (*path, key), lines, filename, active, budget)
            lines[(*path, key)] = key_node.start_mark.line + 1
        return result
    return [_build(item, (*path, index), lines, filename, active, budget)
            for index, item in enumerate(node.value)]


_CONSTRUCTOR = yaml.constructor.SafeConstructor()


def _scalar(node: yaml.Node) -> Any:
    """A scalar as safe_load would build it (ints, floats, bools, dates, null)."""
    if node.tag == "tag:yaml.org,2002:str":
        return node.value
    try:
        return _CONSTRUCTOR.construct_object(node, deep=True)
    except (yaml.constructor.ConstructorError, ValueError, TypeError, OverflowError):
        return node.value  # e.g. 2026-02-30 or `!!float x`: the text, for the validator to refuse


MAX_DEPTH = 100  # collections nested deeper than this are refused before composing
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _check_depth(text: str, filename: str) -> None:
    """Refuse deep nesting before libyaml composes it (found by tests/fuzz).

    libyaml's composer recurses in C: ~30k nested ``[`` overflow the stack
    (SIGSEGV, no Python exception), and its scanner is quadratic in the flow
    depth (100k ``[`` take minutes). The event stream is iterative and lazy, so
    walking it and stopping past ``MAX_DEPTH`` costs little. Skipped when the
    text cannot nest deeply: block levels need a column each, flow levels a bracket.
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH and len(text) <= 16 * 1024:  # <= 8k levels: safe in C
        return
    depth = 0
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1 if event.start_mark is not None else 1
                raise YamlError(f"{filename}:{line}: invalid YAML: nested more than {MAX_DEPTH} levels deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def load_located(text: str, filename: str) -> Located:
    """Parse YAML text; syntax errors come back as ``YamlError`` naming file and line."""
    try:
        _check_depth(text, filename)
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else 1
        raise YamlError(f"{filename}:{line}: invalid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"{filename}: invalid YAML: {exc}") from None
    except RecursionError:
        raise YamlError(f"{filename}: invalid YAML: nested too deeply") from None
    lines: dict[Path, int] = {}
    if node is None:
        return Located(filename, None, {(): 1})
    try:
        return Located(filename, _build(node, (), lines, filename), lines)
    except RecursionError:
        raise YamlError(f"{filename}: invalid YAML: nested too deeply") from None
