"""The real `run` process: --listen, the start-up lines, and the process_* metrics on its /metrics.

* ``--listen`` overrides the config's address (and is refused, naming the flag, when malformed);
* the first log lines name the price table (path, sha256, versions), the state dir,
  each source glob with the files it matches, the OTLP receiver's address and the
  /metrics address, and never a record's content;
* /metrics serves prometheus_client's standard process_* families, with values of
  this very process, in the text format (linted by ``promtool check metrics``) and
  in OpenMetrics (parsed by prometheus_client's parser).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse
from prometheus_client.parser import text_string_to_metric_families as text_parse

from exporter.engine.plainpath import LOOP
from exporter.prices.table import load_price_table
from tests.support.processes import ROOT, Process, poll, scrape
from tests.support.sidecar import record_line

SECRET = "SECRET-PROMPT-TEXT-do-not-log"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _config(tmp: Path, listen: str) -> Path:
    logs = tmp / "logs"
    logs.mkdir()
    with open(logs / "gw.jsonl", "wb") as f:  # records that carry prompt text: it must never be logged
        f.writelines(record_line(i, ts=time.time() - 60, text_before=SECRET * 3, text_after=SECRET)
                     for i in range(20))
        f.write(b'{"not valid json ' + SECRET.encode() + b"\n")
    (logs / "gw.jsonl.1").write_bytes(b"")
    lines = [
        "schema: llm-savings-config/v1",
        f"listen: {json.dumps(listen)}",
        f"state_dir: {json.dumps(str(tmp / 'state'))}",
        "sources:",
        "  - name: gw",
        f"    paths: [{json.dumps(str(logs / '*.jsonl*'))}, {json.dumps(str(tmp / 'nothing' / '*.jsonl'))}]",
        "    watch: false",
        "    poll_interval_seconds: 0.05",
        "otlp:",
        "  enabled: true",
        '  listen: "127.0.0.1:0"',
    ]
    path = tmp / "config.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_listen_flag_startup_lines_and_process_metrics(tmp_path: Path) -> None:
    config_port, flag_port = _free_port(), _free_port()
    config = _config(tmp_path, f"127.0.0.1:{config_port}")
    process = Process(config, tmp_path / "stderr.log", "--listen", f"127.0.0.1:{flag_port}")
    try:
        assert process.port() == flag_port  # the flag won over the config's listen
        poll(lambda: "llm_savings_requests_total{" in scrape(flag_port), 30, "the records counted")
        text = scrape(flag_port)
        om = scrape(flag_port, openmetrics=True)
        log = process.stderr_path.read_text(errors="replace")
    finally:
        process.proc.send_signal(signal.SIGTERM)
        assert process.wait() == 0

    # --- start-up lines
    table = load_price_table()
    logs = tmp_path / "logs"
    expected = [
        f"price table (bundled) {table.path} sha256 {table.sha256}: {len(table.versions)} version(s) "
        f"{table.versions[0].version}..{table.newest.version}",
        f"state dir {tmp_path / 'state'}",
        f"source gw (jsonl, format canonical, plain-line loop {LOOP}): {logs / '*.jsonl*'} -> 2 file(s): "
        f"{logs / 'gw.jsonl'}, {logs / 'gw.jsonl.1'}",
        f"source gw (jsonl, format canonical, plain-line loop {LOOP}): {tmp_path / 'nothing' / '*.jsonl'} -> "
        "no file yet",
        "OTLP receiver on http://127.0.0.1:",
        f"serving /metrics on 127.0.0.1:{flag_port} (port {flag_port})",
    ]
    for line in expected:
        assert line in log, (line, log)
    assert SECRET not in log  # neither the prompt text nor the bad line's content

    # --- process metrics, text format, linted by promtool
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool missing: scripts/setup.sh --test installs Debian's prometheus"
    lint = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=60,
                          check=False)
    assert lint.returncode == 0, lint.stdout.decode() + lint.stderr.decode()
    families = {f.name: f for f in text_parse(text)}
    value = {name: families[name].samples[0].value for name in families if name.startswith("process_")}
    assert set(value) == {"process_virtual_memory_bytes", "process_resident_memory_bytes",
                          "process_start_time_seconds", "process_cpu_seconds", "process_open_fds",
                          "process_max_fds"}
    assert families["process_cpu_seconds"].type == "counter" and value["process_cpu_seconds"] > 0
    assert 10 << 20 < value["process_resident_memory_bytes"] < value["process_virtual_memory_bytes"]
    assert time.time() - 120 < value["process_start_time_seconds"] <= time.time()
    assert 3 <= value["process_open_fds"] <= value["process_max_fds"]
    assert "llm_savings_requests" in families  # (the parser drops _total) the catalog's families are all still there

    # --- OpenMetrics: the same families, before # EOF
    assert om.endswith("# EOF\n")
    om_families = {f.name: f for f in om_parse(om)}
    assert {name for name in om_families if name.startswith("process_")} == set(value)
    assert om_families["process_cpu_seconds"].samples[0].name == "process_cpu_seconds_total"


def test_a_malformed_listen_flag_is_refused_naming_the_flag(tmp_path: Path) -> None:
    config = _config(tmp_path, "127.0.0.1:0")
    for bad in ("nowhere", "127.0.0.1:99999", "127.0.0.1:http"):
        result = subprocess.run([sys.executable, "-m", "exporter", "run", "--config", str(config), "--listen", bad],
                                capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert result.returncode == 2
        assert result.stderr.strip() == f"error: --listen: expected HOST:PORT, got {bad!r}"
    assert not (tmp_path / "state").exists()  # refused before anything started
