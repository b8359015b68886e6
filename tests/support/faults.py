"""Fault harness of issue 13 ("Nothing lost, nothing counted twice").

Shared by ``tests/e2e/faults/`` (short CI runs) and ``scripts/fault_soak.py``
(the long run). Everything here drives the sidecar from the outside only: its
command line (``python -m exporter run --config FILE``) and its HTTP endpoints
(``/readyz``, ``/metrics``), so it survives a reorganisation of ``exporter/``.

Pieces
------
* :class:`Writer` - a separate process (``python -m tests.support.faults
  writer ...``) appending canonical record lines ``w-0, w-1, ...`` at a target
  rate, in small batches (one ``write()`` per batch, whole lines only). It
  opens its file with ``O_APPEND`` (so after a copytruncate it keeps writing at
  the new end, like Python's logging or nginx) and reopens it on SIGUSR1 (what
  a real gateway does on the signal sent by logrotate's ``postrotate``). On
  SIGTERM it stops and writes a JSON summary: the exact number of lines
  written, so the ids written are exactly ``w-0 .. w-(written-1)``.
* :class:`Logrotate` - runs the real ``/usr/sbin/logrotate -s STATE -f CONF``
  every ``interval`` seconds with a generated config (``rotate 5``) for the
  modes in :data:`MODES`. Before each run it reads the ids of every rotated
  file that appeared since (they are settled by then) and at the end the rest,
  so :attr:`Logrotate.on_disk` is the set of ids that ever reached a file
  that survives a rotation. ``written - on_disk`` is what logrotate itself
  lost (copytruncate's copy-then-truncate window), measured apart from what
  the sidecar loses.
* :class:`SidecarProcess` - writes a config, starts ``python -m exporter run``,
  finds its ephemeral port in its log, waits for ``/readyz`` with a deadline,
  scrapes ``/metrics``, sends SIGTERM / SIGHUP / SIGKILL.
* :func:`quiesce` and :class:`Result` - the oracle: once the writer stopped,
  poll ``/metrics`` until the totals stop growing and ``bytes_behind`` is 0,
  then compare with the ids written.
* :func:`run_scenario` - writer + logrotate + one fault pattern
  (``graceful``, ``kill9``, ``sigterm``, ``sighup``), returns a :class:`Result`.

Waiting rule: no bare sleep waits for an event; events are polled with a
deadline (:func:`poll`). The sleeps that remain pace a producer (writer
batches, logrotate period, the moments faults are injected) and say so.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support.processes import PORT_LINE, ROOT, poll

PYTHON = sys.executable
LOGROTATE = shutil.which("logrotate") or "/usr/sbin/logrotate"
ID_RE = re.compile(rb'"request_id": "w-(\d+)"')
MODES = ("create", "copytruncate", "compress", "dateext")
FAULTS = ("graceful", "kill9", "sigterm", "sighup", "outage")


# --- waiting ---------------------------------------------------------------------------------
def pace(seconds: float, stop: threading.Event | None = None) -> bool:
    """Pacing of a producer or of a fault schedule (never a wait for an event). True if stopped."""
    if stop is not None:
        return stop.wait(seconds)
    time.sleep(seconds)
    return False


# --- the record lines ------------------------------------------------------------------------
def record_line(n: int, ts: str, prefix: str = "w-") -> bytes:
    """One canonical record line, as the gateway writes it."""
    return (
        f'{{"ts": "{ts}", "request_id": "{prefix}{n}", "model": "gpt-4o", "tokens_before": 100, "tokens_after": 60, '
        '"count_method": "provider", "usage": {"prompt_tokens": 60, "completion_tokens": 5}}\n'
    ).encode()


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def ids_in_bytes(data: bytes) -> set[int]:
    """Ids of the complete lines (a trailing line without its newline is not a line yet)."""
    end = data.rfind(b"\n")
    return {int(m.group(1)) for m in ID_RE.finditer(data, 0, end + 1)} if end >= 0 else set()


def ids_in_file(path: Path) -> set[int]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return set()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError):  # a .gz being written by logrotate right now
            return set()
    return ids_in_bytes(data)


# --- the writer process ----------------------------------------------------------------------
def writer_main(argv: list[str]) -> int:
    """``faults.py writer``: append lines at ``--rate`` until SIGTERM; reopen on SIGUSR1."""
    parser = argparse.ArgumentParser(prog="faults.py writer")
    parser.add_argument("--path", required=True)
    parser.add_argument("--rate", type=float, default=5000.0, help="lines per second")
    parser.add_argument("--batch", type=int, default=0, help="lines per write() (default: rate/200)")
    parser.add_argument("--summary", required=True, help="JSON written on exit")
    parser.add_argument("--prefix", default="w-")
    parser.add_argument("--max-lines", type=int, default=0, help="stop by itself after this many (0: never)")
    args = parser.parse_args(argv)
    stop = threading.Event()
    reopen = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGUSR1, lambda *_: reopen.set())
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC

    fd = os.open(args.path, flags, 0o644)
    batch = args.batch or max(1, int(args.rate / 200))
    written = reopens = late_batches = 0
    start = time.monotonic()
    while not stop.is_set():
        if reopen.is_set():
            reopen.clear()
            os.close(fd)
            fd = os.open(args.path, flags, 0o644)
            reopens += 1
        n = batch if not args.max_lines else min(batch, args.max_lines - written)
        if n <= 0:
            break
        ts = now_rfc3339()
        data = b"".join(record_line(i, ts, args.prefix) for i in range(written, written + n))
        view = memoryview(data)
        while view:  # a regular file takes it all at once; loop for the letter of POSIX
            view = view[os.write(fd, view):]
        written += n
        due = start + written / args.rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)  # pacing: the target rate, not a wait for anything
        else:
            late_batches += 1
    os.close(fd)
    elapsed = time.monotonic() - start
    summary = {"written": written, "reopens": reopens, "elapsed": elapsed,
               "rate": written / elapsed if elapsed else 0.0, "late_batches": late_batches, "prefix": args.prefix}
    tmp = args.summary + ".tmp"
    with open(tmp, "w") as f:
        json.dump(summary, f)
    os.replace(tmp, args.summary)
    return 0


class Writer:
    """The writer process seen from the harness."""

    def __init__(self, path: Path, rate: float, workdir: Path, prefix: str = "w-") -> None:
        self.path = path
        self.summary_path = workdir / f"writer-{prefix.strip('-')}-summary.json"
        self.proc = subprocess.Popen(
            [PYTHON, "-m", "tests.support.faults", "writer", "--path", str(path), "--rate", str(rate),
             "--summary", str(self.summary_path), "--prefix", prefix],
            cwd=ROOT, stdin=subprocess.DEVNULL,
        )
        self.summary: dict[str, Any] = {}

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, timeout: float = 30.0) -> dict[str, Any]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout)
        assert code == 0, f"writer exited {code}"
        self.summary = json.loads(self.summary_path.read_text())
        return self.summary


# --- logrotate -------------------------------------------------------------------------------
def logrotate_config(log: Path, mode: str, writer_pid: int | None, rotate: int = 5) -> str:
    """The config for one mode; ``writer_pid`` gets SIGUSR1 in postrotate (not in copytruncate)."""
    lines = [f"{log} {{", f"    rotate {rotate}", "    missingok", "    ifempty", "    nomail"]
    if mode == "copytruncate":
        lines.append("    copytruncate")
    else:
        lines.append("    create 0644")
    if mode == "compress":
        lines += ["    compress", "    delaycompress"]
    else:
        lines.append("    nocompress")
    if mode == "dateext":
        lines += ["    dateext", "    dateformat -%Y%m%d-%H%M%S"]
    if mode != "copytruncate" and writer_pid is not None:
        lines += ["    postrotate", f"        /bin/kill -USR1 {writer_pid}", "    endscript"]
    lines.append("}")
    return "\n".join(lines) + "\n"


class Logrotate:
    """Run the real logrotate every ``interval`` seconds in a thread; track the ids that reached disk."""

    def __init__(self, log: Path, mode: str, workdir: Path, writer_pid: int | None, interval: float = 2.0) -> None:
        if mode not in MODES:
            raise ValueError(f"mode {mode!r} not in {MODES}")
        if not os.path.exists(LOGROTATE):
            raise RuntimeError("logrotate is not installed (apt-get install logrotate)")
        self.log = log
        self.mode = mode
        self.interval = interval
        self.conf = workdir / f"logrotate-{mode}.conf"
        self.state = workdir / f"logrotate-{mode}.state"
        self.conf.write_text(logrotate_config(log, mode, writer_pid))
        os.chmod(self.conf, 0o644)  # logrotate refuses a group/world-writable config
        self.rotations = 0
        self.failures: list[str] = []
        self.on_disk: set[int] = set()
        self._scanned: set[tuple[int, bytes]] = set()  # rotated files already read (inode, head)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="logrotate", daemon=True)

    def start(self) -> Logrotate:
        self._thread.start()
        return self

    def rotate_once(self) -> None:
        self._scan_rotated()  # every rotated file that exists now is settled: read it before it can go away
        result = subprocess.run([LOGROTATE, "-s", str(self.state), "-f", str(self.conf)],
                                capture_output=True, timeout=60, check=False)
        if result.returncode == 0:
            self.rotations += 1
        else:
            self.failures.append(result.stderr.decode(errors="replace")[-500:])

    def _run(self) -> None:
        while not pace(self.interval, self._stop):  # pacing: the rotation period
            self.rotate_once()

    def _scan_rotated(self) -> None:
        for path in sorted(self.log.parent.iterdir()):
            if path == self.log or not path.name.startswith(self.log.name) or not path.is_file():
                continue
            try:
                with open(path, "rb") as f:
                    key = (os.fstat(f.fileno()).st_ino, f.read(256))
            except FileNotFoundError:
                continue
            if key in self._scanned:
                continue
            self._scanned.add(key)  # inode + head: a freed inode is reused by the next app.log
            self.on_disk |= ids_in_file(path)

    def halt(self) -> None:
        """Stop rotating (waits for a logrotate run in progress)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=120)

    def finish(self) -> None:
        """Read what is left (rotated files and the live file); call once the writer stopped."""
        self._scan_rotated()
        self.on_disk |= ids_in_file(self.log)

    def stop(self) -> None:
        self.halt()
        self.finish()


# --- the sidecar -----------------------------------------------------------------------------
def write_config(path: Path, state_dir: Path, patterns: Iterable[str], *, checkpoint_interval: float = 1.0,
                 poll_interval: float = 0.25, watch: bool = True, prices: Path | None = None,
                 source_name: str = "gw", extra: dict[str, Any] | None = None) -> Path:
    """A ``llm-savings-config/v1`` file listening on an ephemeral port. (JSON is YAML.)"""
    doc: dict[str, Any] = {
        "schema": "llm-savings-config/v1",
        "listen": "127.0.0.1:0",
        "state_dir": str(state_dir),
        "checkpoint_interval_seconds": checkpoint_interval,
        "sources": [{"name": source_name, "paths": list(patterns), "poll_interval_seconds": poll_interval,
                     "watch": watch}],
    }
    if prices is not None:
        doc["prices"] = str(prices)
    doc.update(extra or {})
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def parse_metrics(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Sample name -> {sorted label pairs -> value}, through prometheus_client's parser."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = float(sample.value)
    return out


@dataclass
class Snapshot:
    """The figures the oracle reads from one scrape."""

    requests: float
    duplicates: float
    rejected: float
    lines_read: float
    bytes_behind: float
    raw: dict[str, dict[tuple[tuple[str, str], ...], float]] = field(repr=False, default_factory=dict)

    @property
    def consumed(self) -> float:
        return self.requests + self.duplicates + self.rejected

    def total(self, name: str, **match: str) -> float:
        return sum(v for k, v in self.raw.get(name, {}).items() if all(dict(k).get(a) == b for a, b in match.items()))

    def label_values(self, name: str, label: str) -> set[str]:
        return {dict(k).get(label, "") for k in self.raw.get(name, {})}


class SidecarProcess:
    """``python -m exporter run --config FILE`` as a subprocess; every (re)start appends to one log."""

    def __init__(self, config: Path, log: Path, *, preexec_fn: Callable[[], None] | None = None) -> None:
        self.config = config
        self.log_path = log
        self.preexec_fn = preexec_fn
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.starts = 0
        self._log_offset = 0

    def start(self, timeout: float = 30.0, wait_ready: bool = True) -> SidecarProcess:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [PYTHON, "-m", "exporter", "run", "--config", str(self.config)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=self.preexec_fn,
            )
        self.starts += 1
        self.port = 0
        if wait_ready:
            self.wait_ready(timeout)
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self, since_start: bool = False, tail: int = 6000) -> str:
        data = self.log_path.read_bytes() if self.log_path.exists() else b""
        if since_start:
            data = data[self._log_offset:]
        return data.decode(errors="replace")[-tail:]

    def wait_port(self, timeout: float = 30.0) -> int:
        def found() -> int | None:
            data = self.log_path.read_bytes()[self._log_offset:]
            match = PORT_LINE.search(data)
            if match:
                return int(match.group(1))
            if not self.alive():
                raise AssertionError(f"sidecar exited {self.proc.returncode if self.proc else None} before "
                                     f"listening: {self.log_text(since_start=True)}")
            return None

        self.port = poll(found, timeout, "the sidecar's listening port")
        return self.port

    def get(self, path: str, timeout: float = 10.0) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=timeout) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(errors="replace")

    def wait_ready(self, timeout: float = 30.0) -> None:
        self.wait_port(timeout)

        def ready() -> bool:
            try:
                return self.get("/readyz", timeout=2.0)[0] == 200
            except OSError:
                return False

        poll(ready, timeout, "/readyz 200")

    def snapshot(self) -> Snapshot:
        status, text = self.get("/metrics")
        assert status == 200, f"/metrics answered {status}"
        raw = parse_metrics(text)

        def s(name: str) -> float:
            return sum(raw.get(name, {}).values())

        return Snapshot(s("llm_savings_requests_total"), s("llm_savings_duplicates_total"),
                        s("llm_savings_records_rejected_total"), s("llm_savings_source_lines_read_total"),
                        s("llm_savings_source_bytes_behind"), raw)

    def signal(self, signum: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(signum)

    def wait_exit(self, timeout: float = 60.0) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def kill9(self) -> None:
        self.signal(signal.SIGKILL)
        self.wait_exit()

    def terminate(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait; the exit code."""
        if not self.alive():
            assert self.proc is not None
            return self.proc.returncode
        self.signal(signal.SIGTERM)
        return self.wait_exit(timeout)


def quiesce(sidecar: SidecarProcess, timeout: float = 60.0, settle: float = 1.5) -> Snapshot:
    """After the writer stopped: poll /metrics until nothing is behind and the totals stayed still.

    "Stopped growing" can only be observed over time: the totals must be unchanged for ``settle``
    seconds (longer than the source's poll interval) with ``bytes_behind`` at 0.
    """
    state: dict[str, Any] = {"last": None, "since": 0.0}

    def settled() -> Snapshot | None:
        snap = sidecar.snapshot()
        key = (snap.requests, snap.duplicates, snap.rejected, snap.lines_read)
        now = time.monotonic()
        if key != state["last"] or snap.bytes_behind != 0:
            state["last"], state["since"] = key, now
            return None
        return snap if now - state["since"] >= settle else None

    return poll(settled, timeout, "the sidecar to catch up (totals still, bytes_behind 0)", interval=0.25)


# --- the oracle ------------------------------------------------------------------------------
@dataclass
class Result:
    mode: str
    fault: str
    duration: float
    rate_target: float
    rate_achieved: float = 0.0
    written: int = 0  # lines (= distinct ids) the writer wrote
    on_disk: int = 0  # distinct ids found in some file (rotated copies + the live file)
    counted: int = 0  # llm_savings_requests_total, summed
    duplicates: int = 0  # llm_savings_duplicates_total: lines read more than once
    rejected: int = 0  # llm_savings_records_rejected_total
    rotations: int = 0
    rotation_failures: int = 0
    restarts: int = 0  # sidecar starts after the first
    signals: int = 0  # faults injected (SIGKILL / SIGTERM / SIGHUP)
    died_unexpectedly: int = 0  # sidecar exits nobody asked for (SIGHUP today)
    sigterm_exit_codes: list[int] = field(default_factory=list)
    seed: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def window_missing(self) -> int:
        """Ids logrotate itself lost: written but in no file (copytruncate's copy/truncate window)."""
        return self.written - self.on_disk

    @property
    def lost(self) -> int:
        return max(0, self.written - self.counted)

    @property
    def lost_beyond_window(self) -> int:
        """A lower bound of the on-disk lines the sidecar lost (lost - window; window lines it caught lower it)."""
        return max(0, self.lost - self.window_missing)

    @property
    def overcounted(self) -> int:
        """Requests counted beyond the ids written (an id counted twice as a new request)."""
        return max(0, self.counted - self.written)

    @property
    def doubled(self) -> int:
        return self.duplicates + self.overcounted

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(window_missing=self.window_missing, lost=self.lost, lost_beyond_window=self.lost_beyond_window,
                   overcounted=self.overcounted, doubled=self.doubled)
        return out

    def summary(self) -> str:
        return (f"{self.mode}/{self.fault}: written={self.written} on_disk={self.on_disk} counted={self.counted} "
                f"lost={self.lost} (copytruncate window={self.window_missing}, beyond={self.lost_beyond_window}) "
                f"doubled={self.doubled} (duplicates={self.duplicates}, overcounted={self.overcounted}) "
                f"rejected={self.rejected} rotations={self.rotations} restarts={self.restarts} "
                f"signals={self.signals} died_unexpectedly={self.died_unexpectedly} seed={self.seed}"
                + (f" notes={self.notes}" if self.notes else ""))


def _died(sidecar: SidecarProcess, grace: float) -> bool:
    """True when the process exits within ``grace`` seconds (polled)."""
    try:
        poll(lambda: not sidecar.alive(), grace, "exit", interval=0.02)
    except AssertionError:
        return False
    return True


def run_scenario(workdir: Path, mode: str, fault: str, *, duration: float = 10.0, rate: float = 5000.0,
                 restarts: int = 10, rotate_every: float = 2.0, checkpoint_interval: float = 1.0,
                 seed: int | None = None, outage: float | None = None, min_gap: float = 0.0,
                 log: Callable[[str], None] | None = None) -> Result:
    """Writer + logrotate + one fault pattern over ``duration`` seconds; then the oracle.

    * ``graceful``: one sidecar all along, SIGTERM at the end.
    * ``kill9``: ``restarts`` times SIGKILL at random moments spread over the run, restart at once.
      ``min_gap`` 0: independent uniform moments (kills may cluster into a crash loop faster than
      the checkpoint interval); ``min_gap`` > 0: one kill per equal slot, at least ``min_gap`` apart.
    * ``sigterm``: SIGTERM at mid-run (exit code recorded), down for ``outage`` seconds (default half
      a rotation period), restart.
    * ``outage``: SIGKILL at a third of the run, down for ``outage`` seconds (default: two rotation
      periods and one second, so a rotated file is rotated again - and compressed, with
      delaycompress - before the restart), restart. The files are all still on disk (rotate 5).
    * ``sighup``: SIGHUP at mid-run; the process must survive. If it dies (today it does) the run
      is restarted to keep measuring, and ``died_unexpectedly`` says so.
    """
    if fault not in FAULTS:
        raise ValueError(f"fault {fault!r} not in {FAULTS}")
    seed = random.randrange(1 << 30) if seed is None else seed
    rng = random.Random(seed)
    say = log or (lambda _m: None)
    workdir.mkdir(parents=True, exist_ok=True)
    logs = workdir / "logs"
    logs.mkdir(exist_ok=True)
    os.chmod(logs, 0o755)  # logrotate skips directories writable by group/others
    app = logs / "app.log"
    config = write_config(workdir / "sidecar.yaml", workdir / "state", [str(logs / "app.log*")],
                          checkpoint_interval=checkpoint_interval)
    result = Result(mode, fault, duration, rate, seed=seed)
    sidecar = SidecarProcess(config, workdir / "sidecar.log").start()
    writer = Writer(app, rate, workdir)
    rotator = Logrotate(app, mode, workdir, writer.pid, interval=rotate_every).start()
    t0 = time.monotonic()

    def until(t: float) -> None:
        delay = t0 + t - time.monotonic()
        if delay > 0:
            time.sleep(delay)  # pacing: the fault schedule

    def check_alive() -> None:
        if not sidecar.alive():
            result.died_unexpectedly += 1
            result.notes.append(f"sidecar exited {sidecar.proc.returncode if sidecar.proc else None} unasked: "
                                f"{sidecar.log_text(since_start=True, tail=400)!r}")
            sidecar.start()
            result.restarts += 1

    completed = False
    try:
        if fault == "kill9":
            if min_gap > 0:  # one kill in each of `restarts` equal slots, at least min_gap apart
                slot = (duration - 1.0) / restarts
                if slot < min_gap:
                    raise ValueError(f"{restarts} restarts {min_gap} s apart do not fit in {duration} s")
                moments = [0.5 + i * slot + rng.uniform(0, slot - min_gap) for i in range(restarts)]
            else:  # independent uniform moments: kills may cluster (a crash loop)
                moments = sorted(rng.uniform(0.5, duration - 0.5) for _ in range(restarts))
            for moment in moments:
                until(moment)
                check_alive()
                sidecar.kill9()
                result.signals += 1
                sidecar.start()
                result.restarts += 1
            until(duration)
        elif fault == "sigterm":
            until(duration / 2)
            sidecar.signal(signal.SIGTERM)
            result.signals += 1
            result.sigterm_exit_codes.append(sidecar.wait_exit())
            pace(outage if outage is not None else rotate_every / 2)  # pacing: the outage
            sidecar.start()
            result.restarts += 1
            until(duration)
        elif fault == "outage":
            until(duration / 3)
            sidecar.kill9()
            result.signals += 1
            pace(outage if outage is not None else 2 * rotate_every + 1.0)  # pacing: down across 2 rotations
            sidecar.start()
            result.restarts += 1
            until(duration)
        elif fault == "sighup":
            until(duration / 2)
            sidecar.signal(signal.SIGHUP)
            result.signals += 1
            if _died(sidecar, 2.0):
                check_alive()
            until(duration)
        else:
            until(duration)
        check_alive()
        completed = True
    finally:
        rotator.halt()  # first: a postrotate after the writer exited would fail (kill: no such process)
        summary = writer.stop()
        rotator.finish()  # after the writer: its final read of the live file must see every line
        if not completed and sidecar.alive():  # the scenario itself failed: leave no process behind
            sidecar.kill9()
    say(f"writer: {summary}")
    result.written = summary["written"]
    result.rate_achieved = round(summary["rate"], 1)
    result.on_disk = len(rotator.on_disk)
    result.rotations = rotator.rotations
    result.rotation_failures = len(rotator.failures)
    if rotator.failures:
        result.notes.append(f"logrotate failed: {rotator.failures[0]!r}")
    try:
        snap = quiesce(sidecar)
        result.counted, result.duplicates = int(snap.requests), int(snap.duplicates)
        result.rejected = int(snap.rejected)
        warnings = [line for line in sidecar.log_text(tail=200_000).splitlines() if " WARNING " in line
                    or " ERROR " in line]
        if warnings:
            result.notes.append(f"{len(warnings)} warning/error log lines, e.g. {warnings[0][-300:]!r}")
    finally:
        code = sidecar.terminate()
        if fault == "graceful":
            result.sigterm_exit_codes.append(code)
        keep = workdir / "KEEP"
        if not keep.exists():
            shutil.rmtree(logs, ignore_errors=True)  # the logs are big; the sidecar log and state stay
    say(result.summary())
    return result


def check_exact(result: Result) -> None:
    """The oracle's verdict: nothing lost, nothing counted twice, no unasked exit.

    For copytruncate, the lines logrotate itself lost between its copy and its truncate
    (``window_missing``) are measured apart: the sidecar cannot read what is in no file.
    """
    problems = []
    if result.rotations < 1 or result.rotation_failures:
        problems.append(f"harness: rotations={result.rotations} failures={result.rotation_failures}")
    if result.died_unexpectedly:
        problems.append(f"the sidecar exited unasked {result.died_unexpectedly} time(s)")
    if any(code != 0 for code in result.sigterm_exit_codes):
        problems.append(f"SIGTERM exit codes {result.sigterm_exit_codes}")
    if result.doubled:
        problems.append(f"doubled {result.doubled} (duplicates={result.duplicates}, overcounted={result.overcounted})")
    if result.rejected:
        problems.append(f"rejected {result.rejected}")
    if result.mode == "copytruncate":
        if result.lost_beyond_window:
            problems.append(f"lost {result.lost_beyond_window} beyond logrotate's copytruncate window "
                            f"({result.window_missing})")
    else:
        if result.window_missing:
            problems.append(f"harness: {result.window_missing} ids written are in no file ({result.mode})")
        if result.lost:
            problems.append(f"lost {result.lost}")
    assert not problems, f"{'; '.join(problems)} -- {result.summary()}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "writer":
        return writer_main(argv[1:])
    print("usage: faults.py writer --path FILE --rate N --summary FILE", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
