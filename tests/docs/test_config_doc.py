"""docs/configuration.md is generated from the settings' declarations and cannot drift from them."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

from exporter.sidecar import config as cfg
from exporter.sidecar.config import Config, LabelConfig, OtlpConfig, OtlpPushConfig, SourceConfig, load_config

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gen_config_doc.py"
DOC = ROOT / "docs" / "configuration.md"



def test_committed_doc_is_up_to_date() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_check_detects_drift(tmp_path: Path) -> None:
    out = tmp_path / "configuration.md"
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], check=True)
    out.write_text(out.read_text(encoding="utf-8").replace("`dedupe_window_days`", "`x`"), encoding="utf-8")
    result = subprocess.run([sys.executable, str(SCRIPT), "--check", "--out", str(out)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert "gen_config_doc.py" in result.stderr


def test_every_setting_is_declared_with_a_doc_and_documented() -> None:
    """A new setting without a doc, or one the reference leaves out, fails here."""
    text = DOC.read_text(encoding="utf-8")
    for prefix, cls in (("", Config), ("labels.", LabelConfig), ("otlp.", OtlpConfig),
                        ("otlp_push.", OtlpPushConfig), ("", SourceConfig)):
        for item in fields(cls):
            if item.name == "origin":
                continue
            doc = cfg.setting_doc(item)
            assert len(doc) > 10, f"{cls.__name__}.{item.name} has no doc: declare it with setting(default, doc)"
            assert f"| `{prefix}{item.name}` |" in text, f"{prefix}{item.name} is missing from {DOC.name}"
    for variable in (*cfg.ENV_OVERRIDES, cfg.ENV_BEARER_TOKEN):
        assert f"| `{variable}` |" in text


def test_defaults_in_the_doc_are_the_loaders_defaults(tmp_path: Path) -> None:
    """The generated "every default, as a file" block loads to exactly ``Config()``."""
    text = DOC.read_text(encoding="utf-8")
    block = text.split("## Every default, as a file", 1)[1]
    yaml_text = re.search(r"```yaml\n(.*?)```", block, re.S)
    assert yaml_text is not None
    path = tmp_path / "defaults.yaml"
    path.write_text(yaml_text.group(1), encoding="utf-8")
    loaded = load_config(path, environ={})
    assert loaded == Config(origin=str(path))


def test_the_error_shown_in_the_doc_is_the_loaders(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    shown = re.search(r"```\n(sidecar\.yaml:\d+: .*)\n```", text)
    assert shown is not None
    path = tmp_path / "sidecar.yaml"
    path.write_text("schema: llm-savings-config/v1\nsources:\n  - name: gateway\n    format: json\n"
                    "    paths: [x]\n", encoding="utf-8")
    try:
        load_config(path, environ={})
    except cfg.ConfigError as exc:
        assert str(exc).replace(str(path), "sidecar.yaml") == shown.group(1)
    else:  # pragma: no cover - the test fails
        raise AssertionError("a bad format was accepted")
