#!/usr/bin/env python3
"""Generate the monitoring mixin: rules/, dashboards/, mixin/ and the Helm chart's copies.

    python scripts/gen_mixin.py                                  # rewrite the repository's files
    python scripts/gen_mixin.py --check                          # exit 1 on any difference, write nothing
    python scripts/gen_mixin.py --config params.yaml --out DIR   # your parameters, written under DIR

Everything comes from ``exporter/mixin/`` and its one config
(``exporter/mixin/config.py``); ``--config`` overrides parameters by name
(docs/monitoring.md lists them). Written under the output root:
``rules/*.yaml`` (not ``rules/tests/``, which are hand-written),
``dashboards/*.json``, ``mixin/`` (``mixin.libsonnet`` and the JSON it
imports) and ``helm/llm-savings-exporter/files/`` (the same files with a
token in each parameter's place, replaced by the chart's ``mixin:`` values).
A generated file of those folders that the mixin no longer produces is
deleted (reported by ``--check``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from exporter.mixin.config import MixinConfigError, load  # noqa: E402
from exporter.mixin.render import CHART_FILES, MIXIN_DIR, render  # noqa: E402
from exporter.yamlpos import YamlError  # noqa: E402

# Folders holding only generated files, and the names in them that are generated.
OWNED = (
    ("rules", "*.yaml"),
    ("dashboards", "*.json"),
    (MIXIN_DIR, "*.json"),
    (MIXIN_DIR, "*.libsonnet"),
    (f"{MIXIN_DIR}/dashboards", "*.json"),
    (f"{CHART_FILES}/rules", "*.yaml"),
    (f"{CHART_FILES}/dashboards", "*.json"),
)


def stale(out: Path, wanted: dict[str, str]) -> list[str]:
    """Generated-looking files under ``out`` that the mixin does not produce any more."""
    found = {
        path.relative_to(out).as_posix()
        for folder, pattern in OWNED
        for path in (out / folder).glob(pattern)
        if path.is_file()
    }
    return sorted(found - wanted.keys())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--config", type=Path, help="params file (YAML mapping of parameter names to values)")
    parser.add_argument("--out", type=Path, default=ROOT, help="output root (default: this repository)")
    parser.add_argument("--check", action="store_true", help="exit 1 if any file differs; write nothing")
    args = parser.parse_args(argv)
    try:
        overrides = load(args.config) if args.config else {}
    except (MixinConfigError, YamlError, OSError) as exc:
        print(f"gen_mixin: {exc}", file=sys.stderr)
        return 2
    files = render(overrides)
    drift = [path for path, text in files.items()
             if not (args.out / path).is_file() or (args.out / path).read_text(encoding="utf-8") != text]
    extra = stale(args.out, files)
    if args.check:
        if drift or extra:
            print("out of date (run python scripts/gen_mixin.py):", file=sys.stderr)
            for path in drift:
                print(f"  differs  {path}", file=sys.stderr)
            for path in extra:
                print(f"  stale    {path}", file=sys.stderr)
            return 1
        return 0
    for path in drift:
        target = args.out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(files[path], encoding="utf-8")
        print(f"wrote   {path}")
    for path in extra:
        (args.out / path).unlink()
        print(f"deleted {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
