"""docs/configuration.md is generated from the settings' declarations and cannot drift from them."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.sidecar import config as cfg
from exporter.sidecar.config import (
    Config,
    LabelConfig,
    OtlpConfig,
    OtlpPushConfig,
    SourceConfig,
    config_from_dict,
    load_config,
)

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


# --- the "Types" paragraph of the doc, held to the loader -------------------------------------------------------

_INT_SETTINGS = ("dedupe_max_ids", "month_retention", "max_request_tokens")
_FLOAT_SETTINGS = ("dedupe_window_days", "checkpoint_interval_seconds", "future_skew_seconds")


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_INT_SETTINGS), st.integers(min_value=0, max_value=10**18 - 1), st.booleans())
def test_an_integer_is_a_json_integer_or_a_string_of_digits(key: str, value: int, as_text: bool) -> None:
    raw = {key: str(value) if as_text else value}
    assert getattr(config_from_dict(raw), key) == value


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_INT_SETTINGS), st.one_of(st.integers(max_value=-1), st.floats(allow_nan=False),
                                                 st.booleans(), st.text(alphabet="-.e x", min_size=1)))
def test_anything_else_is_not_an_integer(key: str, value: object) -> None:
    with pytest.raises(cfg.ConfigError, match=key):
        config_from_dict({key: value})


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(_FLOAT_SETTINGS),
       st.one_of(st.integers(min_value=1, max_value=10**6), st.floats(min_value=1e-6, max_value=1e6)),
       st.one_of(st.integers(max_value=0), st.floats(max_value=0.0, allow_nan=False), st.booleans(), st.text()))
def test_a_number_is_an_integer_or_decimal_above_zero(key: str, good: float, bad: object) -> None:
    assert getattr(config_from_dict({key: good}), key) == float(good)
    with pytest.raises(cfg.ConfigError, match=key):
        config_from_dict({key: bad})


@pytest.mark.parametrize(("text", "value"), [("true", True), ("false", False), ("yes", True), ("no", False),
                                             ("1", True), ("0", False), (True, True), (False, False)])
def test_a_boolean_is_true_false_or_those_strings(text: object, value: bool) -> None:
    assert config_from_dict({"otlp": {"enabled": text}}).otlp.enabled is value


def test_a_list_of_strings_may_be_one_string_and_a_string_is_not_empty() -> None:
    assert config_from_dict({"labels": {"tenant_allowlist": "team-a"}}).labels.tenant_allowlist == ("team-a",)
    with pytest.raises(cfg.ConfigError, match="timezone"):
        config_from_dict({"timezone": ""})
    with pytest.raises(cfg.ConfigError, match=r"otlp\.enabled"):
        config_from_dict({"otlp": {"enabled": "maybe"}})
