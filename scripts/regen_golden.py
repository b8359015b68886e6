#!/usr/bin/env python3
"""Regenerate the golden exposition files: ``python scripts/regen_golden.py [CASE...]``.

Each case is a directory ``tests/fixtures/golden/<case>/`` holding

* ``input.jsonl``  - canonical records v1, replayed in order;
* ``prices.yaml``  - the price table (a case without one uses
  ``tests/fixtures/golden/prices.yaml``, never the bundled table, which changes);
* ``case.yaml``    - optional: ``timezone``, ``dedupe_window_days`` and ``labels``
  caps (``max_models``, ``max_tenants``, ``max_methods``, ``max_components``);

and gets ``expected.prom`` (Prometheus text 0.0.4) and ``expected.om``
(OpenMetrics 1.0.0) rendered by ``exporter.exposition.render.Exposition`` from the
pipeline's aggregates with FIXED health samples (price table info and the label
overflow counters only: no build info, clocks or lags), so the files are stable.
The files keep the families that have samples, byte for byte (HELP, TYPE and
every sample line in the renderer's order); families without samples are left
out, so a new health metric in the catalog does not change every case.
``tests/e2e/test_exposition_golden.py`` renders the same way and compares byte for
byte; review the diff before committing regenerated files.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "fixtures" / "golden"
sys.path.insert(0, str(ROOT))

from exporter import catalog  # noqa: E402
from exporter.engine.labels import LabelCaps  # noqa: E402
from exporter.engine.pipeline import Pipeline  # noqa: E402
from exporter.exposition.render import Exposition, HealthSample  # noqa: E402
from exporter.prices.table import load_price_table  # noqa: E402


def case_settings(case: Path) -> dict[str, Any]:
    path = case / "case.yaml"
    loaded = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None
    return loaded or {}


def case_prices(case: Path) -> Path:
    own = case / "prices.yaml"
    return own if own.exists() else GOLDEN / "prices.yaml"


def case_pipeline(case: Path) -> Pipeline:
    """The pipeline after replaying the case's input, line by line, in order."""
    settings = case_settings(case)
    prices = load_price_table(case_prices(case))
    caps = LabelCaps(**settings.get("labels", {}))
    pipeline = Pipeline(prices, timezone=settings.get("timezone", "UTC"),
                        dedupe_window_days=float(settings.get("dedupe_window_days", 40.0)), caps=caps)
    with open(case / "input.jsonl", "rb") as f:
        for line in f:
            pipeline.ingest_line(line, "golden")
    return pipeline


def fixed_health(pipeline: Pipeline) -> list[HealthSample]:
    """Health samples that depend only on the case's inputs (stable across runs and machines)."""
    samples: list[HealthSample] = [
        HealthSample(catalog.PRICE_TABLE_INFO, (v.version, v.effective_from_text, pipeline.prices.sha256), 1)
        for v in pipeline.prices.versions
    ]
    samples.append(HealthSample(catalog.PRICE_TABLE_NEWEST_EFFECTIVE_TIMESTAMP_SECONDS, (),
                                pipeline.prices.newest.effective_from))
    samples += [HealthSample(catalog.LABEL_OVERFLOW_TOTAL, (cap.name,), cap.overflow) for cap in pipeline.caps.all()]
    return samples


def with_samples(exposition: bytes) -> bytes:
    """The exposition without the families that have no sample (header-only blocks)."""
    blocks: list[list[bytes]] = []
    for line in exposition.splitlines(keepends=True):
        if line.startswith(b"# HELP ") or not blocks or line == b"# EOF\n":
            blocks.append([])
        blocks[-1].append(line)
    kept = [b for b in blocks if b == [b"# EOF\n"] or any(not line.startswith(b"#") for line in b)]
    return b"".join(b"".join(b) for b in kept)


def render_case(case: Path) -> tuple[bytes, bytes]:
    """(Prometheus text, OpenMetrics) of one case, as the golden files hold them."""
    pipeline = case_pipeline(case)
    exposition = Exposition(pipeline.month_of.start)
    health = fixed_health(pipeline)
    text = exposition.render(pipeline.aggregates, health, openmetrics=False)
    om = exposition.render(pipeline.aggregates, health, openmetrics=True)
    return with_samples(text), with_samples(om)


def cases() -> list[Path]:
    return sorted(p for p in GOLDEN.iterdir() if (p / "input.jsonl").exists())


def main(argv: list[str]) -> int:
    chosen = [GOLDEN / name for name in argv] if argv else cases()
    for case in chosen:
        text, om = render_case(case)
        for name, data in (("expected.prom", text), ("expected.om", om)):
            target = case / name
            old = target.read_bytes() if target.exists() else None
            target.write_bytes(data)
            print(f"{target.relative_to(ROOT)}: {'unchanged' if old == data else 'written'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
