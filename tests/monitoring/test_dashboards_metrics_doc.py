"""docs/metrics.md is the generator's output and names every catalog metric,
recording rule and alert (it is what the README links to)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from exporter.catalog import CATALOG
from tests.support.prometheus import ROOT, all_rules

SCRIPT = ROOT / "scripts" / "gen_metrics_doc.py"
DOC = ROOT / "docs" / "metrics.md"


def test_committed_doc_is_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_check_detects_drift(tmp_path: Path) -> None:
    out = tmp_path / "metrics.md"
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], check=True)
    out.write_text(out.read_text(encoding="utf-8").replace("llm_savings_requests_total", "x"))
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--out", str(out)],
        capture_output=True,
        check=False,
    )
    assert result.returncode == 1


def test_doc_names_every_metric_rule_and_alert() -> None:
    text = DOC.read_text(encoding="utf-8")
    for spec in CATALOG:
        assert f"| `{spec.name}` | {spec.type} |" in text
    for rule in all_rules():
        name = rule.get("record") or rule["alert"]
        assert f"`{name}`" in text
        if "alert" in rule:
            assert f"(runbook.md#{name.lower()})" in text
