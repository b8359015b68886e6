"""The path docs/deployment.md walks a newcomer through, for real: examples/sidecar.yaml checked with
``run --check-config``, then ``python -m exporter run`` tailing every example input, /metrics scraped
(and linted by promtool) showing the totals an independent reading of the records gives, the same spans
posted again over OTLP counted once, and a clean stop on SIGTERM."""

from __future__ import annotations

import math
import shutil
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter import catalog
from tests.support import examples
from tests.support.processes import ROOT, Process, poll, samples, scrape, total

INPUTS = {"gateway": "records.jsonl", "litellm": "litellm-payloads.jsonl", "custom-gateway": "gateway.jsonl",
          "collector": "otlp-file.jsonl"}


@pytest.fixture
def processes() -> Iterator[list[Process]]:
    started: list[Process] = []
    yield started
    for process in started:
        if process.proc.poll() is None:
            process.kill9()


def _config(tmp: Path) -> Path:
    """examples/sidecar.yaml as a user adapts it: paths where the logs are, ports of their own."""
    raw: dict[str, Any] = yaml.safe_load((examples.EXAMPLES / "sidecar.yaml").read_text(encoding="utf-8"))
    for source in raw["sources"]:
        folder = tmp / "logs" / source["name"]
        folder.mkdir(parents=True)
        shutil.copy(examples.EXAMPLES / INPUTS[source["name"]], folder / "a.jsonl")
        source.update(paths=[str(folder / "*.jsonl*")], watch=False, poll_interval_seconds=0.05)
        if "mapping" in source:
            source["mapping"] = str(examples.EXAMPLES / "mapping.yaml")
    raw.update(listen="127.0.0.1:0", state_dir=str(tmp / "state"), month_retention=1200,  # the examples are 2026-11
               otlp={"enabled": True, "listen": "127.0.0.1:0"})
    path = tmp / "sidecar.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def test_the_example_sidecar_runs_end_to_end(tmp_path: Path, processes: list[Process]) -> None:
    config = _config(tmp_path)
    check = subprocess.run([sys.executable, "-m", "exporter", "run", "--config", str(config), "--check-config"],
                           cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert check.returncode == 0 and check.stdout.startswith("ok: "), check.stderr

    records = (examples.canonical_records() + examples.litellm_records() + examples.mapping_records()
               + examples.otlp_records())
    want = examples.totals(records)["months"]["2026-11"]
    process = Process(config, tmp_path / "sidecar.log")
    processes.append(process)
    port = process.port()
    def counted() -> float:  # a response-cache hit is no provider call: counted apart from requests
        got = samples(scrape(port))
        return total(got, catalog.REQUESTS_TOTAL.name) + total(got, catalog.RESPONSE_CACHE_HITS_TOTAL.name)

    poll(lambda: counted() == len(records), 30, f"{len(records)} records counted")
    body = scrape(port)
    got = samples(body)
    assert total(got, catalog.RESPONSE_CACHE_HITS_TOTAL.name, month="2026-11") == want["response_cache_hits"] >= 1
    assert total(got, catalog.REQUESTS_TOTAL.name, month="2026-11") == want["requests"]
    assert total(got, catalog.TOKENS_SAVED_TOTAL.name, month="2026-11") == want["tokens_saved"]
    assert total(got, catalog.OUTPUT_TOKENS_TOTAL.name, month="2026-11") == want["output_tokens"]
    assert total(got, catalog.PROMPT_TOKENS_TOTAL.name, month="2026-11", tier="cache_read") == \
        want["cache_read_tokens"]
    assert total(got, catalog.UNPRICED_REQUESTS_TOTAL.name, month="2026-11") == want["unpriced"]
    for name, key in ((catalog.SPEND_USD_TOTAL.name, "spend_usd"), (catalog.USD_SAVED_TOTAL.name, "usd_saved"),
                      (catalog.WOULD_HAVE_SAVED_USD_TOTAL.name, "would_have_saved_usd")):
        assert math.isclose(total(got, name, month="2026-11"), want[key], rel_tol=1e-9), name
    net_cache = (total(got, catalog.CACHE_READ_SAVINGS_USD_TOTAL.name, month="2026-11")
                 - total(got, catalog.CACHE_WRITE_PREMIUM_USD_TOTAL.name, month="2026-11"))
    assert math.isclose(net_cache, want["cache_savings_usd"], rel_tol=1e-9)

    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool (Debian package prometheus) is installed by scripts/setup.sh --test"
    lint = subprocess.run([promtool, "check", "metrics"], input=body.encode(), capture_output=True, timeout=60,
                          check=False)
    assert lint.returncode == 0, lint.stdout.decode() + lint.stderr.decode()

    # The spans of examples/otlp-file.jsonl, posted to the receiver too: the same response ids, counted once.
    receiver = poll(lambda: _receiver(process.log()), 20, "the OTLP receiver's address")
    request = urllib.request.Request(receiver, data=(examples.EXAMPLES / "otlp-file.jsonl").read_bytes().strip(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
    poll(lambda: total(samples(scrape(port)), catalog.DUPLICATES_TOTAL.name) == 2, 20, "2 duplicates")
    assert counted() == len(records)  # the re-sent spans changed nothing

    process.proc.send_signal(signal.SIGTERM)
    assert process.wait() == 0, process.log()


def _receiver(log: str) -> str | None:
    for line in log.splitlines():
        if "OTLP/HTTP receiver listening on " in line:
            return line.split("OTLP/HTTP receiver listening on ", 1)[1].split()[0]
    return None
