#!/usr/bin/env python3
"""Copy the repository's rules and dashboards into the Helm chart, byte for byte.

Why: the chart's PrometheusRule and Grafana dashboard ConfigMaps are built with
``.Files`` from ``helm/llm-savings-exporter/files/``, and Helm cannot read files
outside the chart directory. ``rules/*.yaml`` and ``dashboards/*.json`` stay the
one source; this script mirrors them (adds, updates, and deletes copies whose
source is gone) and ``--check`` fails when the chart's copies drift, which CI
and ``tests/monitoring/test_helm_sync.py`` run.

    python scripts/sync_chart.py          # write the copies
    python scripts/sync_chart.py --check  # exit 1 and list the drift, change nothing
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHART_FILES = Path("helm/llm-savings-exporter/files")

# (source directory, glob, destination directory under the chart), all repo-relative.
MIRRORS: tuple[tuple[Path, str, Path], ...] = (
    (Path("rules"), "*.yaml", CHART_FILES / "rules"),
    (Path("dashboards"), "*.json", CHART_FILES / "dashboards"),
)


@dataclass(frozen=True)
class Drift:
    """One difference between a source and the chart: what to do to fix it."""

    action: str  # "add", "update" or "delete"
    path: Path  # the chart copy, repo-relative

    def __str__(self) -> str:
        return f"{self.action:6} {self.path}"


def plan(repo: Path = REPO) -> list[Drift]:
    """Every copy to add, update or delete so the chart mirrors the sources."""
    drifts: list[Drift] = []
    for src_rel, pattern, dst_rel in MIRRORS:
        src_dir, dst_dir = repo / src_rel, repo / dst_rel
        wanted = {p.name: p for p in sorted(src_dir.glob(pattern)) if p.is_file()}
        present = {p.name: p for p in sorted(dst_dir.glob(pattern)) if p.is_file()}
        for name, src in wanted.items():
            dst = dst_dir / name
            if name not in present:
                drifts.append(Drift("add", dst_rel / name))
            elif src.read_bytes() != dst.read_bytes():
                drifts.append(Drift("update", dst_rel / name))
        for name in sorted(present.keys() - wanted.keys()):
            drifts.append(Drift("delete", dst_rel / name))
    return drifts


def apply(drifts: list[Drift], repo: Path = REPO) -> None:
    """Carry out a plan: copy bytes for add/update, unlink for delete."""
    sources = {dst_rel: src_rel for src_rel, _, dst_rel in MIRRORS}
    for drift in drifts:
        dst = repo / drift.path
        if drift.action == "delete":
            dst.unlink()
            continue
        src = repo / sources[drift.path.parent] / drift.path.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(src.read_bytes())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--check", action="store_true", help="report drift and exit 1; write nothing"
    )
    parser.add_argument(
        "--repo", type=Path, default=REPO, help="repository root (default: this one)"
    )
    args = parser.parse_args(argv)
    drifts = plan(args.repo)
    if args.check:
        if drifts:
            print("helm chart copies differ from the sources; run scripts/sync_chart.py:")
            for drift in drifts:
                print(f"  {drift}")
            return 1
        print("helm chart copies of rules/ and dashboards/ are in sync")
        return 0
    apply(drifts, args.repo)
    for drift in drifts:
        print(drift)
    return 0


if __name__ == "__main__":
    sys.exit(main())
