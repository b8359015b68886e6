"""Config loading: defaults, a full file, environment overrides, and refusals that name the place."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.sidecar.config import Config, ConfigError, apply_env, config_from_dict, load_config

FULL = """\
schema: llm-savings-config/v1
listen: "0.0.0.0:9464"
state_dir: /var/lib/llm-savings-exporter
prices: /etc/llm-savings-exporter/prices/prices.yaml
timezone: Europe/Berlin
dedupe_window_days: 45
checkpoint_interval_seconds: 2.5
month_retention: 6
labels:
  max_models: 50
  tenant_allowlist: [team-a, team-b]
sources:
  - name: gateway
    paths: ["/var/log/gateway/*.jsonl*"]
    format: litellm
  - name: collector
    type: otlp_file
    paths: /var/log/otel/traces.jsonl
    watch: false
otlp:
  enabled: true
  listen: "0.0.0.0:4318"
otlp_push:
  enabled: false
"""


def test_defaults_are_safe() -> None:
    config = Config()
    assert config.listen == "127.0.0.1:9464"  # loopback unless told otherwise
    assert config.otlp.listen == "127.0.0.1:4318" and not config.otlp.enabled
    assert config.dedupe_window_days >= 35


def test_a_full_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(FULL)
    config = load_config(path, environ={})
    assert config.timezone == "Europe/Berlin"
    assert config.labels.max_models == 50 and config.labels.tenant_allowlist == ("team-a", "team-b")
    assert [s.name for s in config.sources] == ["gateway", "collector"]
    assert config.sources[1].paths == ("/var/log/otel/traces.jsonl",)  # one string is one path
    assert config.sources[1].type == "otlp_file" and not config.sources[1].watch
    assert config.otlp.enabled and config.checkpoint_interval_seconds == 2.5


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(FULL)
    env = {"LLM_SAVINGS_LISTEN": "127.0.0.1:9999", "LLM_SAVINGS_OTLP_ENABLED": "false",
           "LLM_SAVINGS_STATE_DIR": "/state", "LLM_SAVINGS_TIMEZONE": "UTC"}
    config = load_config(path, environ=env)
    assert (config.listen, config.otlp.enabled, config.state_dir, config.timezone) == (
        "127.0.0.1:9999", False, "/state", "UTC")


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("LLM_SAVINGS_OTLP_ENABLED", "maybe", "LLM_SAVINGS_OTLP_ENABLED: expected true or false"),
    ("LLM_SAVINGS_LISTEN", "nowhere", "listen: expected HOST:PORT"),
    ("LLM_SAVINGS_TIMEZONE", "Mars/Olympus", "unknown time zone"),
])
def test_a_bad_environment_value_is_refused_naming_the_variable(variable: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        apply_env(Config(), {variable: value})
    assert "environment" in str(info.value)


@pytest.mark.parametrize(("text", "where"), [
    ("listen: 9464\n", "f.yaml:1: listen: expected a non-empty string"),
    ("sources:\n  - name: a\n    paths: [x]\n    format: xml\n", "f.yaml:4: sources[0].format: expected one of"),
    ("sources:\n  - name: a\n    paths: [x]\n  - name: a\n    paths: [y]\n", "sources: source names must be unique"),
    ("labels:\n  max_modles: 3\n", "f.yaml:2: labels.max_modles: unknown setting"),
    ("otlp:\n  listen: 'localhost'\n", "f.yaml:2: otlp.listen: expected HOST:PORT"),
    ("otlp:\n  correlation_max_entries: 0\n", "f.yaml:2: otlp.correlation_max_entries: expected 1 to 4194304 "
     "entries, got 0"),
    ("otlp:\n  correlation_max_entries: 4194305\n", "f.yaml:2: otlp.correlation_max_entries: expected 1 to "
     "4194304 entries, got 4194305"),
    ("gc_young_threshold: 1000001\n", "f.yaml:1: gc_young_threshold: expected 0 to 1000000 allocations, "
     "got 1000001"),
    ("gc_young_threshold: -1\n", "f.yaml:1: gc_young_threshold: expected a non-negative integer"),
    ("gil_switch_interval_ms: 1001\n", "f.yaml:1: gil_switch_interval_ms: expected 0 to 1000 ms, got 1001"),
    ("gil_switch_interval_ms: 2.5\n", "f.yaml:1: gil_switch_interval_ms: expected a non-negative integer"),
    ("schema: llm-savings-config/v2\n", "f.yaml:1: schema: expected 'llm-savings-config/v1'"),
    ("checkpoint_interval_seconds: 0\n", "f.yaml:1: checkpoint_interval_seconds: expected a positive finite number"),
    # a float setting given an int too large for a float, or infinity: refused, never OverflowError or "forever"
    ("dedupe_window_days: " + "1" * 400 + "\n", "f.yaml:1: dedupe_window_days: expected a positive finite number, "
     "got an integer of about 400 digits"),
    ("checkpoint_interval_seconds: .inf\n", "f.yaml:1: checkpoint_interval_seconds: expected a positive finite number"),
    ("dedupe_max_ids: " + "9" * 5000 + "\n", "f.yaml:1: dedupe_max_ids: expected a non-negative integer, "
     "got a value of 5000 characters"),
])
def test_mistakes_are_refused_with_file_line_and_key(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert where.replace("f.yaml", str(path)) in str(info.value)


def test_config_from_dict_validates_too() -> None:
    with pytest.raises(ConfigError, match="paths: a source needs at least one path"):
        config_from_dict({"sources": [{"name": "x"}]}, origin="demo")
