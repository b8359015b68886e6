"""The benchmark suite's own claims: its peers compute what it says they compute.

The benchmarks themselves never run under pytest (tests/bench/conftest.py);
these tests check, on small data, that the mtail program sums what replay
sums, that the prometheus_client registry holds exactly our series, that
the pricing benchmark skips with the install line when LiteLLM is absent,
and that the doc carries the machine and the table.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench import bench_ingest, bench_pricing, bench_replay, bench_scrape, run_all
from tests.bench.benchlib import Row, machine

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("mtail") is None, reason="Debian's mtail is not installed")
def test_mtail_program_sums_what_replay_sums(tmp_path: Path) -> None:
    data = tmp_path / "records.jsonl"
    bench_replay.generate(data, 2000)
    progs = tmp_path / "progs"
    progs.mkdir()
    (progs / "savings.mtail").write_text(bench_ingest.MTAIL_PROGRAM, encoding="utf-8")
    mtail = subprocess.run(["mtail", "--one_shot", "--one_shot_format=prometheus", "--progs", str(progs),
                            "--logs", str(data), "--logtostderr", "--port", "0"],
                           capture_output=True, check=True, timeout=60)
    ours = subprocess.run([sys.executable, "-m", "exporter", "replay", "--json", "--prices",
                           str(bench_ingest.PRICES), str(data)], capture_output=True, check=True, cwd=ROOT,
                          timeout=120)
    sums = bench_ingest.mtail_sums(mtail.stdout)
    assert len(sums) == len(bench_replay.MODELS)
    month = next(iter(json.loads(ours.stdout)["months"].values()))
    assert sum(sums.values()) == month["tokens_saved"] > 0


def test_peer_registry_holds_exactly_our_series() -> None:
    from prometheus_client import generate_latest

    from exporter.engine.pipeline import MonthOf
    from exporter.exposition.render import Exposition

    ours = Exposition(MonthOf().start).render(bench_scrape.fill(40), ()).decode()
    registry, children = bench_scrape.peer_registry(ours)
    peer = generate_latest(registry).decode()

    def samples(text: str) -> set[tuple[str, frozenset[tuple[str, str]], float]]:
        """(name, labels, value) of each sample; prometheus_client sorts label names, we keep catalog order."""
        out = set()
        for line in text.splitlines():
            if line and not line.startswith("#") and "_created" not in line:
                head, _, value = line.rpartition(" ")
                name, _, labels = head.partition("{")
                out.add((name, frozenset(re.findall(r'(\w+)="([^"]*)"', labels)), float(value)))
        return out

    assert samples(ours) == samples(peer)
    assert len(children) == len(samples(ours)) > 200


@pytest.mark.skipif(importlib.util.find_spec("litellm") is not None, reason="litellm is installed here")
def test_pricing_skips_with_the_install_line_without_litellm() -> None:
    result = bench_pricing.measure(10)
    assert "pip install -e . litellm==1.110.2" in result["skipped"]
    (row,) = bench_pricing.rows(result)
    assert row.met == "skipped" and "pip install -e . litellm==1.110.2" in row.notes[0]


def test_doc_carries_command_machine_and_table(tmp_path: Path) -> None:
    rows = [Row("ingest vs mtail", "10/s", "20/s", "0.50x", ">= 3x", "NO (17% of target)", ["a note"])]
    doc = tmp_path / "performance.md"
    info = machine()
    run_all.write_doc(rows, info, "1.00 1.00 1.00", "scripts/bench.sh", dt.datetime(2026, 11, 30, 5, 0), 60.0, "",
                      path=doc)
    text = doc.read_text(encoding="utf-8")
    assert "`scripts/bench.sh`" in text and "2026-11-30 05:00 UTC" in text
    assert f"{info['nproc']} CPUs, {info['cpu']}" in text and "load average" in text
    assert "| ingest vs mtail | 10/s | 20/s | 0.50x | >= 3x | NO (17% of target) |" in text
    assert "**ingest vs mtail**: a note" in text
