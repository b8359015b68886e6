"""The package's layout: imports only run down the layers, and modules stay small.

A record's way through the program is sources -> engine -> exposition; the
runners (sidecar, replay, demo) wire them, and the CLI calls the runners. An
import that runs back up (the engine importing a source, a source importing
the sidecar) is refused here, so the folders keep meaning what they say.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "exporter"

# Lower numbers sit lower; a module may import its own layer or lower ones.
LAYERS: dict[str, int] = {
    "exporter": 0,  # __init__ (version), catalog, yamlpos: shared by every layer
    "exporter.catalog": 0,
    "exporter.yamlpos": 0,
    "exporter.prices": 1,
    "exporter.tokens": 1,
    "exporter.engine": 2,
    "exporter.sources": 3,
    "exporter.exposition": 3,
    "exporter.integrations": 4,
    "exporter.sidecar": 4,
    "exporter.replay": 4,
    "exporter.demo": 4,
    "exporter.report": 4,
    "exporter.mixin": 4,
    "exporter.cli": 5,
    "exporter.__main__": 5,
}
# Same layer, different folders, never importing each other.
APART = {("exporter.sources", "exporter.exposition"), ("exporter.exposition", "exporter.sources")}
MAX_LINES = 400
# Modules allowed past MAX_LINES, each with its reason.
LONG_MODULES: dict[str, str] = {
    "exporter.engine.pipeline": "count_record is the per-record path and its routes (v1 and prompt-tier ones) "
                                "share its caches, label caps and overflow rule: split, each record would pay "
                                "a call across objects",
    "exporter.engine.records": "the reference parser of the canonical record: one validator per key beside the "
                               "Record it builds, so the fast path's twin (fastparse) is checked against one "
                               "place; the next split candidate (the optional keys' validators)",
    "exporter.sources.tail.tailer": "one poll updates the same per-file records in discovery, classification, "
                                    "the truncation check, the read loop, the open-file cap, recovery from "
                                    "compressed successors and reaping (its docstring says more); splitting it "
                                    "means passing that state between objects on the per-line path",
    "exporter.sources.tail.state": "the checkpoint schema of the tail state and the restore that must re-find every "
                                   "saved file (by identity, in the globs, beside it, through symlinks): one "
                                   "format, one reader, kept together so they cannot drift",
}

def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer_of(module: str) -> str:
    best = max((name for name in LAYERS if module == name or module.startswith(name + ".")), key=len)
    return best


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("exporter"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("exporter"):
            found.add(node.module)
    return found


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    for path in _modules():
        assert _layer_of(_module_name(path)), path


def test_no_import_runs_back_up_the_layers() -> None:
    upward: list[str] = []
    for path in _modules():
        importer = _module_name(path)
        importer_layer = _layer_of(importer)
        for imported in _imports(path):
            imported_layer = _layer_of(imported)
            if LAYERS[imported_layer] > LAYERS[importer_layer] or (importer_layer, imported_layer) in APART:
                upward.append(f"{importer} ({importer_layer}) imports {imported} ({imported_layer})")
    assert not upward, "\n".join(upward)


def test_modules_stay_small_or_say_why() -> None:
    long = {_module_name(path): len(path.read_text(encoding="utf-8").splitlines()) for path in _modules()}
    too_long = {name: n for name, n in long.items() if n > MAX_LINES and name not in LONG_MODULES}
    assert not too_long, f"modules over {MAX_LINES} lines without a stated reason: {too_long}"


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The rule itself can fail: an engine module importing the sidecar is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("from exporter.sidecar.sidecar import Sidecar\nimport exporter.engine.usage\n")
    imported = _imports(bad)
    assert imported == {"exporter.sidecar.sidecar", "exporter.engine.usage"}
    assert LAYERS[_layer_of("exporter.sidecar.sidecar")] > LAYERS[_layer_of("exporter.engine.pipeline")]
