"""rules/: promtool accepts and tests them, names follow the conventions, and
every metric they query is in the catalog (or is a recording rule)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.catalog import BY_NAME
from tests.support.prometheus import (
    ROOT,
    RULES_DIR,
    all_rules,
    analyse,
    check_expr_against_catalog,
    load_rule_files,
    recording_rule_names,
)

PROMTOOL = shutil.which("promtool") or "promtool"
needs_promtool = pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool not installed (apt-get install prometheus)"
)

RUNBOOK = ROOT / "docs" / "runbook.md"
RUNBOOK_BASE = (
    "https://github.com/llm-savings-exporter/llm-savings-exporter/blob/main/docs/runbook.md#"
)
RECORD_NAME = re.compile(r"^[a-z_]+:llm_savings_[a-z0-9_]+:[a-z0-9_]+$")
SEVERITIES = {"critical", "warning", "info"}


def rule_files() -> list[Path]:
    return sorted(RULES_DIR.glob("*.yaml"))


def rule_test_files() -> list[Path]:
    return sorted((RULES_DIR / "tests").glob("*.yaml"))


def parse_duration(text: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
    total = 0.0
    for number, unit in re.findall(r"(\d+)(ms|[smhdwy])", text):
        total += int(number) * units[unit]
    return total


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    slug = heading.strip().lower()
    slug = re.sub(r"[^\w\- ]", "", slug)
    return slug.replace(" ", "-")


# --- promtool ------------------------------------------------------------------


@needs_promtool
def test_promtool_check_rules_is_clean() -> None:
    result = subprocess.run(
        [PROMTOOL, "check", "rules", *map(str, rule_files())],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stdout + result.stderr


@needs_promtool
def test_promtool_unit_tests_pass() -> None:
    files = rule_test_files()
    assert files, "rules/tests/ has no promtool test files"
    result = subprocess.run(
        [PROMTOOL, "test", "rules", *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
        cwd=RULES_DIR / "tests",
    )
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_promtool_unit_tests_can_fail(tmp_path: Path) -> None:
    """A wrong expectation makes `promtool test rules` fail: the tests are not vacuous."""
    source = RULES_DIR / "tests" / "llm-savings.rules.test.yaml"
    doc = yaml.safe_load(source.read_text(encoding="utf-8"))
    doc["rule_files"] = [str(RULES_DIR / Path(f).name) for f in doc["rule_files"]]
    doc["tests"][0]["promql_expr_test"][0]["exp_samples"][0]["value"] += 1
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(doc), encoding="utf-8")
    result = subprocess.run(
        [PROMTOOL, "test", "rules", str(broken)], capture_output=True, text=True, check=False
    )
    assert result.returncode != 0


# --- the same tests with another job name, runbook address and cluster label ---------------

CUSTOM_JOB = "gateway-savings"
CUSTOM = {
    "jobSelector": f'job="{CUSTOM_JOB}"',
    "runbookBaseUrl": "https://runbooks.example.org/llm-savings.md",
    "clusterLabel": "k8s_cluster",
}


def relabelled_tests(
    test_dir: Path, rule_dir: Path, job: str, runbook: str, *, equality: bool = False
) -> list[Path]:
    """rules/tests/ rewritten for another job name and runbook address, reading ``rule_dir``'s rules.

    With an equality job selector (``job="x"``), absent() carries that label: its alert does too.
    """
    written = []
    test_dir.mkdir(parents=True, exist_ok=True)
    for source in rule_test_files():
        text = source.read_text(encoding="utf-8")
        text = text.replace('job="llm-savings-exporter"', f'job="{job}"')
        text = text.replace("job: llm-savings-exporter", f"job: {job}")
        text = text.replace("(job llm-savings-exporter)", f"(job {job})")
        text = text.replace(RUNBOOK_BASE, runbook + "#")
        doc = yaml.safe_load(text)
        doc["rule_files"] = [str(rule_dir / Path(f).name) for f in doc["rule_files"]]
        for case in doc["tests"] if equality else []:
            for check in case.get("alert_rule_test", []):
                if check["alertname"] == "LlmSavingsExporterAbsent":
                    for alert in check.get("exp_alerts") or []:
                        alert["exp_labels"]["job"] = job
        target = test_dir / source.name
        target.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        written.append(target)
    return written


def generate(tmp_path: Path, params: dict[str, Any]) -> Path:
    config = tmp_path / "params.yaml"
    config.write_text(yaml.safe_dump(params), encoding="utf-8")
    out = tmp_path / "out"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_mixin.py"), "--config", str(config), "--out", str(out)],
        check=True,
        capture_output=True,
    )
    return out


@needs_promtool
def test_custom_job_name_passes_promtool_check_and_the_same_tests(tmp_path: Path) -> None:
    out = generate(tmp_path, CUSTOM)
    rules = sorted((out / "rules").glob("*.yaml"))
    assert [p.name for p in rules] == [p.name for p in rule_files()]
    text = "".join(p.read_text() for p in rules)
    assert "llm-savings-exporter.*" not in text and 'job="gateway-savings"' in text
    assert "by (k8s_cluster, month)" in text
    checked = subprocess.run(
        [PROMTOOL, "check", "rules", *map(str, rules)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0 and "WARNING" not in checked.stdout + checked.stderr, checked.stdout
    tests = relabelled_tests(
        tmp_path / "tests", out / "rules", CUSTOM_JOB, CUSTOM["runbookBaseUrl"], equality=True
    )
    result = subprocess.run(
        [PROMTOOL, "test", "rules", *map(str, tests)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_the_default_rules_do_not_see_another_job(tmp_path: Path) -> None:
    """The job selector is what decides: the default rules, fed the other job's series, fail the tests
    (the absent alert fires, nothing is summed)."""
    tests = relabelled_tests(tmp_path / "tests", RULES_DIR, CUSTOM_JOB, RUNBOOK_BASE[:-1])
    result = subprocess.run(
        [PROMTOOL, "test", "rules", *map(str, tests)], capture_output=True, text=True, check=False
    )
    assert result.returncode != 0
    assert "LlmSavingsExporterAbsent" in result.stdout + result.stderr


@needs_promtool
def test_a_threshold_parameter_moves_the_alert(tmp_path: Path) -> None:
    """recordsRejectedPercent: 50 keeps replica a (2% rejected) quiet; c (100%) still fires."""
    out = generate(tmp_path, {"recordsRejectedPercent": 50, "recordsRejectedFor": "5m"})
    source = yaml.safe_load((RULES_DIR / "tests" / "llm-savings.alerts.test.yaml").read_text())
    case = next(c for c in source["tests"] if c["name"].startswith("records rejected"))
    firing = case["alert_rule_test"][1]
    firing["exp_alerts"] = [a for a in firing["exp_alerts"] if a["exp_labels"]["instance"] == "c:9464"]
    for alert in firing["exp_alerts"]:
        alert["exp_annotations"]["description"] = alert["exp_annotations"]["description"].replace(
            "More than 1%", "More than 50%"
        )
    quiet = {"alertname": "LlmSavingsRecordsRejected", "eval_time": "4m", "exp_alerts": []}
    case["alert_rule_test"] = [quiet, firing]
    source["tests"] = [case]
    source["rule_files"] = [str(out / "rules" / Path(f).name) for f in source["rule_files"]]
    path = tmp_path / "threshold.test.yaml"
    path.write_text(yaml.safe_dump(source, sort_keys=False))
    result = subprocess.run(
        [PROMTOOL, "test", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


# --- names and metrics ---------------------------------------------------------


def test_every_queried_metric_is_in_the_catalog_or_recorded() -> None:
    records = recording_rule_names()
    problems = [
        p for rule in all_rules() for p in check_expr_against_catalog(rule["expr"], records)
    ]
    assert problems == []


def test_recording_rules_follow_level_metric_operations() -> None:
    records = [rule["record"] for rule in all_rules() if "record" in rule]
    assert len(records) == len(set(records)), "a recording rule is defined twice"
    bad = [r for r in records if not RECORD_NAME.match(r)]
    assert bad == []
    # The metric part names a catalog metric (without _total), or a ratio the rule defines.
    families = {spec.family_name for spec in BY_NAME.values()}
    derived = {
        "llm_savings_cache_savings_usd",
        "llm_savings_cache_hit",
        "llm_savings_estimator_divergence",
        "llm_savings_usd_saved_default_factor",
        "llm_savings_saved_input_tokens",
        "llm_savings_compression",
        "llm_savings_net_usd_saved",
        "llm_savings_response_cache_hit",
        "llm_savings_routing_net_usd_saved",
        "llm_savings_usd_saved_by_kind",
        "llm_savings_total_usd_saved",
    }
    assert [r for r in records if r.split(":")[1] not in families | derived] == []


def test_recording_rules_use_only_earlier_records() -> None:
    """A rule reading another record must come after it in the same group (same evaluation)."""
    for doc in load_rule_files().values():
        seen_everywhere = {
            rule["record"] for group in doc["groups"] for rule in group["rules"] if "record" in rule
        }
        for group in doc["groups"]:
            defined: set[str] = set()
            for rule in group["rules"]:
                used = {m for m in analyse(rule["expr"]).metrics if m in seen_everywhere}
                assert used <= defined, (
                    f"{rule.get('record', rule.get('alert'))} reads {used - defined} early"
                )
                if "record" in rule:
                    defined.add(rule["record"])


def test_the_brief_s_recording_rules_exist() -> None:
    records = recording_rule_names()
    for name in (
        "month_model_tenant:llm_savings_usd_saved:sum",
        "month_model_tenant:llm_savings_cache_savings_usd:net",
        "month_model_tenant:llm_savings_cache_hit:ratio",
        "month_model_method_population:llm_savings_estimator_divergence:ratio",
        "month:llm_savings_usd_saved_default_factor:ratio",
        "model_tenant:llm_savings_usd_saved:rate5m",
        "model_tenant:llm_savings_spend_usd:rate5m",
        # issue 16: saved %, compression ratio (per population and over all records), dollars by
        # component, net savings
        "month_method_population:llm_savings_saved_input_tokens:ratio",
        "month_method:llm_savings_saved_input_tokens:ratio",
        "month_method_population:llm_savings_compression:ratio",
        "month_method:llm_savings_compression:ratio",
        "month_component:llm_savings_component_usd_saved:sum",
        "month:llm_savings_net_usd_saved:sum",
        "month_tenant:llm_savings_net_usd_saved:sum",
    ):
        assert name in records


# --- alerts --------------------------------------------------------------------


def alerts() -> list[dict[str, Any]]:
    return [rule for rule in all_rules() if "alert" in rule]


def test_every_alert_has_severity_and_annotations() -> None:
    found = alerts()
    assert len(found) >= 10
    for rule in found:
        assert rule["labels"]["severity"] in SEVERITIES, rule["alert"]
        for key in ("summary", "description", "runbook_url"):
            assert rule["annotations"].get(key), f"{rule['alert']} lacks {key}"
        assert "for" in rule, f"{rule['alert']} has no for:"


def test_runbook_has_one_section_per_alert() -> None:
    headings = re.findall(r"^## (.+)$", RUNBOOK.read_text(encoding="utf-8"), flags=re.MULTILINE)
    anchors = {github_anchor(h) for h in headings}
    urls = {rule["alert"]: rule["annotations"]["runbook_url"] for rule in alerts()}
    for alert, url in urls.items():
        assert url.startswith(RUNBOOK_BASE), url
        assert url[len(RUNBOOK_BASE) :] in anchors, (
            f"{alert}: no section #{url[len(RUNBOOK_BASE) :]}"
        )
    assert {github_anchor(a) for a in urls} == anchors, "runbook sections and alerts differ"


def test_the_brief_s_alert_conditions_are_covered() -> None:
    exprs = " ".join(rule["expr"] for rule in alerts())
    for needle in (
        "up{",
        "absent(",
        "llm_savings_records_rejected_total",
        "llm_savings_unpriced_requests_total",
        "llm_savings_price_table_newest_effective_timestamp_seconds",
        "estimator_divergence",
        "llm_savings_source_bytes_behind",
        "llm_savings_source_last_event_timestamp_seconds",
        "llm_savings_checkpoint_age_seconds",
        "llm_savings_checkpoint_failures_total",
        "llm_savings_label_overflow_total",
    ):
        assert needle in exprs


def _rule_tests() -> list[dict[str, Any]]:
    return [
        case
        for path in rule_test_files()
        for case in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]
    ]


def test_every_alert_is_tested_before_and_after_its_for() -> None:
    cases = [check for case in _rule_tests() for check in case.get("alert_rule_test", [])]
    for rule in alerts():
        hold = parse_duration(rule["for"])
        mine = [c for c in cases if c["alertname"] == rule["alert"]]
        quiet = [c for c in mine if not c.get("exp_alerts")]
        firing = [c for c in mine if c.get("exp_alerts")]
        assert firing, f"{rule['alert']}: no test where it fires"
        assert quiet, f"{rule['alert']}: no test where it stays quiet"
        assert any(parse_duration(c["eval_time"]) > hold for c in firing), rule["alert"]
        assert any(parse_duration(c["eval_time"]) > 0 for c in quiet), rule["alert"]
        for check in firing:
            for expected in check["exp_alerts"]:
                assert expected["exp_labels"]["severity"] == rule["labels"]["severity"]
                assert set(expected["exp_annotations"]) == {"summary", "description", "runbook_url"}


def test_every_recording_rule_has_an_expression_test() -> None:
    tested = " ".join(
        check["expr"] for case in _rule_tests() for check in case.get("promql_expr_test", [])
    )
    missing = sorted(r for r in recording_rule_names() if r not in tested)
    assert missing == []


# --- the checker itself ----------------------------------------------------------


def test_checker_reports_unknown_metrics_and_labels() -> None:
    records = recording_rule_names()
    assert check_expr_against_catalog('sum(llm_savings_requests_total{tenant="a"})', records) == []
    assert check_expr_against_catalog("rate(llm_savings_nope_total[5m])", records) == [
        "llm_savings_nope_total is neither in exporter/catalog.py nor a recording rule"
    ]
    assert check_expr_against_catalog('llm_savings_duplicates_total{model="x"}', records) == [
        "llm_savings_duplicates_total has no label 'model'"
    ]
    problems = check_expr_against_catalog(
        "sum by (tenant) (llm_savings_divergence_counted_tokens_total)", records
    )
    assert problems and "tenant" in problems[0]
