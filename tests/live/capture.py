"""Capture one dialect's real spans into fixtures. Run INSIDE that dialect's venv:

    .venv-live/<env>/bin/python tests/live/capture.py --dialect <dialect> --out tests/fixtures/dialects

Starts the fake provider and an OTLP/HTTP capture endpoint, sets the instrumentation up, drives the
dialect's cases and writes ``<out>/<dialect>/<case>.json`` (see tests/fixtures/dialects/README.md), or for
``litellm_payload`` ``<case>.jsonl`` + ``<case>.calls.json``. The repository is put on sys.path by
path, so the venv needs no install of this project.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _check_tests_package() -> None:
    import tests

    paths = [Path(p).resolve() for p in getattr(tests, "__path__", [])]
    if ROOT / "tests" not in paths:
        raise SystemExit(f"'tests' resolves to {paths}, not this repository's tests/ (a package ships 'tests'?)")


def versions(packages: list[str]) -> dict[str, str]:
    out = {}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def captured_with(dialect: str, packages: list[str]) -> dict[str, Any]:
    return {
        "packages": versions(packages),
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "command": f"python -m tests.live.regen --only {dialect}",
    }


def _encode(req: dict[str, Any]) -> dict[str, Any]:
    out = {"content_type": req["content_type"], "body_b64": base64.b64encode(req["body"]).decode()}
    if req.get("content_encoding"):
        out["content_encoding"] = req["content_encoding"]
    return out


def run(dialect: str, out_dir: Path, only: set[str] | None = None) -> list[Path]:
    _check_tests_package()
    from tests.live import envs
    from tests.live.dialects import DIALECTS
    from tests.live.otlp_capture import CaptureEndpoint
    from tests.support.fake_provider import FakeProvider

    env = envs.env_of(dialect)
    target = out_dir / dialect
    target.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with FakeProvider() as fp, CaptureEndpoint() as cap, tempfile.TemporaryDirectory() as tmp:
        log_path = os.path.join(tmp, "litellm-payloads.jsonl")
        setup = DIALECTS[dialect]
        d = setup(fp.base_url, cap, log_path) if dialect == "litellm_payload" else setup(fp.base_url, cap)
        info = captured_with(dialect, list(env.report_packages))
        for name, call in d.cases:
            if only and name not in only:
                continue
            fp.take_calls()
            cap.take()
            if d.payload_log and os.path.exists(d.payload_log):
                os.unlink(d.payload_log)
            try:
                call()
            except Exception as exc:  # a case whose call fails still records what was sent
                print(f"  {dialect}/{name}: call raised {type(exc).__name__}: {exc}", file=sys.stderr)
            time.sleep(d.wait)
            d.flush()
            cap.settle()
            d.flush()
            cap.settle(quiet=0.2)
            calls = fp.take_calls()
            if d.payload_log:
                lines = Path(d.payload_log).read_text() if os.path.exists(d.payload_log) else ""
                (target / f"{name}.jsonl").write_text(lines)
                doc = {"captured_with": info, "calls": calls}
                path = target / f"{name}.calls.json"
            else:
                doc = {"captured_with": info, "requests": [_encode(r) for r in cap.take()], "calls": calls}
                path = target / f"{name}.json"
            path.write_text(json.dumps(doc, indent=2) + "\n")
            written.append(path)
            print(f"  {dialect}/{name}: {len(calls)} call(s), {len(doc.get('requests', []))} request(s)")
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="capture one dialect's spans into fixtures")
    ap.add_argument("--dialect", required=True)
    ap.add_argument("--out", type=Path, default=ROOT / "tests" / "fixtures" / "dialects")
    ap.add_argument("--case", action="append", help="capture only this case (repeatable)")
    args = ap.parse_args(argv)
    run(args.dialect, args.out, set(args.case) if args.case else None)
    # Instrumentations and SDK exporters leave threads behind: leave without waiting for them.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
