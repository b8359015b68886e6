"""The real `python -m exporter run --config FILE` as a process: state_dir lock, SIGHUP, SIGTERM, OTLP on stop.

* a second process on the same state_dir exits non-zero naming the holder, the
  first keeps counting;
* SIGHUP with a changed price table reloads it (``llm_savings_price_table_info``
  shows the new version) and the process stays alive; a bad table is refused and
  counted, the process still alive;
* SIGTERM exits 0 with a checkpoint holding every line read;
* spans acknowledged by the receiver (the real OTel SDK exporter) just before
  SIGTERM are in the checkpoint the next start restores, although the
  checkpoint interval is an hour.
"""

from __future__ import annotations

import json
import re
import signal
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from exporter.sidecar.config import load_config
from exporter.sidecar.sidecar import Sidecar
from tests.support.prices import one_version
from tests.support.processes import Process, poll, samples, scrape, total
from tests.support.sidecar import drain, record_line


def _config(tmp: Path, *, interval: float = 0.05, otlp: bool = False) -> Path:
    (tmp / "logs").mkdir(exist_ok=True)
    (tmp / "prices.yaml").write_text(one_version("v1"))
    lines = [
        "schema: llm-savings-config/v1",
        'listen: "127.0.0.1:0"',
        f"state_dir: {json.dumps(str(tmp / 'state'))}",
        f"prices: {json.dumps(str(tmp / 'prices.yaml'))}",
        f"checkpoint_interval_seconds: {interval}",
        "sources:",
        "  - name: gw",
        f"    paths: [{json.dumps(str(tmp / 'logs' / '*.jsonl'))}]",
        "    watch: false",
        "    poll_interval_seconds: 0.05",
    ]
    if otlp:
        lines += ["otlp:", "  enabled: true", '  listen: "127.0.0.1:0"']
    path = tmp / "config.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _append(tmp: Path, lines: list[bytes]) -> None:
    with open(tmp / "logs" / "a.jsonl", "ab") as f:
        f.writelines(lines)


def _requests(port: int) -> float:
    return total(samples(scrape(port)), "llm_savings_requests_total")


@pytest.fixture
def processes() -> Iterator[list[Process]]:
    started: list[Process] = []
    yield started
    for process in started:
        if process.proc.poll() is None:
            process.kill9()


def test_second_process_on_the_same_state_dir_is_refused_and_the_first_keeps_counting(
        tmp_path: Path, processes: list[Process]) -> None:
    config = _config(tmp_path)
    _append(tmp_path, [record_line(i) for i in range(20)])
    first = Process(config, tmp_path / "first.log")
    processes.append(first)
    port = first.port()
    poll(lambda: _requests(port) == 20, 20, "20 requests counted by the first process")

    second = Process(config, tmp_path / "second.log")
    processes.append(second)
    assert second.wait(30) != 0
    message = second.log()
    assert "state_dir is in use by another exporter" in message
    assert str(tmp_path / "state" / "lock") in message
    assert f"pid {first.proc.pid} on host " in message and " since 20" in message

    _append(tmp_path, [record_line(i) for i in range(20, 35)])
    poll(lambda: _requests(port) == 35, 20, "the first process counting on")
    assert first.proc.poll() is None
    first.proc.send_signal(signal.SIGTERM)
    assert first.wait() == 0


def _price_info(port: int) -> dict[str, str]:
    """version -> sha256 of the price_table_info series."""
    parsed = samples(scrape(port))
    return {dict(key)["version"]: dict(key)["sha256"] for key in parsed.get("llm_savings_price_table_info", {})}


def _reloads(port: int) -> dict[str, float]:
    parsed = samples(scrape(port))
    table = parsed.get("llm_savings_price_table_reloads_total", {})
    return {dict(key)["result"]: value for key, value in table.items()}


def test_sighup_reloads_prices_and_sigterm_exits_zero_with_everything_checkpointed(
        tmp_path: Path, processes: list[Process]) -> None:
    config = _config(tmp_path)
    _append(tmp_path, [record_line(i) for i in range(40)])
    process = Process(config, tmp_path / "sidecar.log")
    processes.append(process)
    port = process.port()
    poll(lambda: _requests(port) == 40, 20, "40 requests counted")
    assert set(_price_info(port)) == {"v1"}

    (tmp_path / "prices.yaml").write_text(one_version("v2"))
    process.proc.send_signal(signal.SIGHUP)
    poll(lambda: set(_price_info(port)) == {"v2"}, 20, "the v2 table in llm_savings_price_table_info")
    assert process.proc.poll() is None
    assert _reloads(port) == {"success": 1.0, "error": 0.0}
    assert "versions added ['v2'], removed ['v1']" in process.log()

    (tmp_path / "prices.yaml").write_text("schema: llm-savings-prices/v1\nversions: []\n")
    process.proc.send_signal(signal.SIGHUP)
    poll(lambda: _reloads(port).get("error") == 1.0, 20, "the bad table refused and counted")
    assert set(_price_info(port)) == {"v2"}  # the old table stays in force
    process.proc.send_signal(signal.SIGHUP)  # never kills, whatever the table
    poll(lambda: _reloads(port).get("error") == 2.0, 20, "a second refusal")
    assert process.proc.poll() is None

    _append(tmp_path, [record_line(i) for i in range(40, 55)])
    process.proc.send_signal(signal.SIGTERM)
    assert process.wait() == 0
    assert "final checkpoint written" in process.log()
    (tmp_path / "prices.yaml").write_text(one_version("v2"))  # a start refuses a bad table
    restored = Sidecar(load_config(config))  # the process is gone: the lock is free again
    try:
        assert sum(m["requests"] for m in restored.pipeline.aggregates.month_totals().values()) == 55
        drain(restored)  # the offsets cover every line: nothing is read again, nothing is a duplicate
        assert sum(m["requests"] for m in restored.pipeline.aggregates.month_totals().values()) == 55
        assert not restored.pipeline.aggregates.duplicates
    finally:
        restored.close()
    assert not list((tmp_path / "state").glob("*.tmp"))


def test_otlp_spans_acknowledged_just_before_sigterm_are_in_the_checkpoint(
        tmp_path: Path, processes: list[Process]) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    from tests.fixtures.otlp.spans import MODEL_CALLS, make_spans

    config = _config(tmp_path, interval=3600.0, otlp=True)  # only the final checkpoint can hold them
    process = Process(config, tmp_path / "sidecar.log")
    processes.append(process)
    process.port()
    match = poll(lambda: re.search(r"OTLP/HTTP receiver listening on (\S+)", process.log()),
                 20, "the OTLP receiver's address")
    exporter = OTLPSpanExporter(endpoint=match.group(1), timeout=10)
    assert exporter.export(list(make_spans().values())) == SpanExportResult.SUCCESS
    process.proc.send_signal(signal.SIGTERM)  # at once: the dispatcher may not have fed them yet
    assert process.wait() == 0
    exporter.shutdown()

    restored = Sidecar(load_config(config))
    try:
        counted = sum(m["requests"] for m in restored.pipeline.aggregates.month_totals().values())
        assert counted == len(MODEL_CALLS)
        assert len(restored.pipeline.ledger) == len(MODEL_CALLS)
    finally:
        restored.close()


def test_gzip_metrics_from_the_real_process(tmp_path: Path, processes: list[Process]) -> None:
    import gzip

    config = _config(tmp_path)
    _append(tmp_path, [record_line(i) for i in range(5)])
    process = Process(config, tmp_path / "sidecar.log")
    processes.append(process)
    port = process.port()
    poll(lambda: _requests(port) == 5, 20, "5 requests counted")
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                     headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.headers["Content-Encoding"] == "gzip"
        assert response.headers["Vary"] == "Accept-Encoding"
        body = gzip.decompress(response.read()).decode()
    assert total(samples(body), "llm_savings_requests_total") == 5
    process.proc.send_signal(signal.SIGINT)
    assert process.wait() == 0
