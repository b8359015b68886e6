"""`calibrate` through the real CLI entry point: factor recovery by tokenizer, safeguards, flags, help."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.cli.main import main

REPO = Path(__file__).resolve().parents[2]


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
        "usage": {"input_tokens": billed_after, "cache_creation_input_tokens": 0, "output_tokens": 40},
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
        json.dumps({"ts": 1764460800, "model": "gpt-4o", "tokens_before": 10, "tokens_after": 5,
                    "count_method": "provider", "usage": {"prompt_tokens": 5, "completion_tokens": 1}}),
        json.dumps({"ts": 1764460800, "model": "gpt-4o", "tokens_before": 1000, "tokens_after": 1000,
                    "count_method": "estimate:chars/4", "usage": {"prompt_tokens": 1100, "completion_tokens": 1}}),
        json.dumps(_record(1, rnd, 3.0)),  # r1 again: a retry, excluded
        json.dumps(_record(n + 1, rnd, 3.0, usage={"input_tokens": 10, "cache_read_input_tokens": 900,
                                                   "output_tokens": 1})),  # cache read: excluded
        "",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_calibrate_recovers_a_known_delta_factor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _write_log(tmp_path / "gw.jsonl", factor=1.37)
    code, out, _ = run(["calibrate", "--json", str(log)], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "llm-savings-calibrate/v2"
    assert doc["records"]["rejected"] == 1
    assert doc["records"]["excluded"] == {"duplicate_request_id": 1, "cache_read": 1, "provider_counted": 1}
    (delta,) = doc["delta_factors"]
    assert (delta["tokenizer"], delta["count_method"]) == ("anthropic-claude-4", "tiktoken:o200k_base")
    assert delta["families"] == ["anthropic"] and delta["models"] == ["claude-sonnet-4-5"]
    assert delta["n"] == 200 and 100 < delta["effective_n"] < 200
    assert delta["factor"] == pytest.approx(1.37, abs=0.002)
    assert delta["interval"][0] < 1.37 < delta["interval"][1] and delta["suggested"]
    suggested = yaml.safe_load(doc["suggested_yaml"])
    block = suggested["families"]["anthropic-claude-4"]  # anthropic mixes tokenizers: a family of its own
    assert block["billed_token_factor"]["tiktoken:o200k_base"] == pytest.approx(1.37, abs=0.002)
    assert block["cache_write_5m_multiplier"] == 1.25 and block["cache_write_1h_multiplier"] == 2.0
    assert "set `family: anthropic-claude-4` on" in doc["suggested_yaml"]
    assert "o200k_base" not in suggested["families"] and "openai" not in suggested["families"]
    assert "NOT a delta factor" in doc["suggested_yaml"]  # gpt-4o: a level ratio only
    levels = {(lv["tokenizer"], lv["population"]): lv for lv in doc["level_ratios"]}
    compacted = levels[("anthropic-claude-4", "compacted")]
    assert compacted["n"] == 200 and levels[("anthropic-claude-4", "untouched")]["n"] == 100
    assert compacted["ratio_of_sums"] > 1.37 + 0.02  # the overhead makes the level ratio larger
    assert levels[("o200k_base", "untouched")]["ratio_of_sums"] == pytest.approx(1.1)
    assert "not a delta factor" in doc["warning"]


def test_calibrate_text_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _write_log(tmp_path / "gw.jsonl", factor=0.9, n=150)
    code, out, _ = run(["calibrate", str(log)], capsys)
    assert code == 0
    assert "excluded: duplicate_request_id 1, cache_read 1, provider_counted 1" in out
    assert "effective n=" in out and "95% interval" in out
    assert "suggested: 95% interval" in out
    assert '"tiktoken:o200k_base": 0.9' in out
    assert "level ratio" in out and "is not a delta factor" in out


def test_calibrate_small_sample_says_no_correction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _write_log(tmp_path / "gw.jsonl", factor=1.5, n=4)  # 2 compacted rows
    code, out, _ = run(["calibrate", "--json", str(log)], capsys)
    assert code == 0
    doc = json.loads(out)
    (delta,) = doc["delta_factors"]
    assert delta["n"] == 2 and not delta["suggested"] and delta["verdict"].startswith("no correction")
    assert yaml.safe_load(doc["suggested_yaml"]) == {"families": {}}
    code, out, _ = run(["calibrate", str(log)], capsys)
    assert "no correction: effective n" in out and "minimum 30" in out


def test_calibrate_min_n_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _write_log(tmp_path / "gw.jsonl", factor=1.5, n=15)  # 10 compacted rows
    code, out, _ = run(["calibrate", "--json", "--min-n", "5", str(log)], capsys)
    assert code == 0 and json.loads(out)["delta_factors"][0]["suggested"]
    assert json.loads(out)["min_effective_n"] == 5


@pytest.mark.parametrize(("flag", "value", "message"), [("--confidence", "1.5", "--confidence: expected"),
                                                         ("--min-n", "0", "--min-n: expected at least 1")])
def test_calibrate_refuses_bad_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str,
                                     message: str) -> None:
    log = _write_log(tmp_path / "gw.jsonl", factor=1.0, n=3)
    code, _, err = run(["calibrate", flag, value, str(log)], capsys)
    assert code == 2 and message in err


def test_calibrate_help_never_advises_a_count_tokens_endpoint(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["calibrate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "billed" in text and "effective n" in text and "no correction" in text
    # it is named only to say it is not the truth
    for sentence in text.lower().split(". "):
        if "count-tokens" in sentence or "count tokens" in sentence:
            assert "not" in sentence, sentence


def test_calibrate_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(["calibrate", str(tmp_path / "nope.jsonl")], capsys)
    assert code == 2 and "no such file" in err


def test_calibrate_family_and_current_factor_come_from_the_price_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rnd = random.Random(5)
    log = tmp_path / "house.jsonl"
    recs = [_record(i, rnd, 1.25, model="house-model", provider=None) for i in range(1, 80) if i % 3 != 0]
    log.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    table = REPO / "tests" / "fixtures" / "tokens" / "prices.yaml"
    code, out, _ = run(["calibrate", "--json", "--prices", str(table), str(log)], capsys)
    assert code == 0
    (delta,) = json.loads(out)["delta_factors"]
    assert delta["families"] == ["acme"]  # only the table knows this family
    assert delta["tokenizer"] == "model:house-model"  # no tokenizer key: the model alone
    assert delta["factor"] == pytest.approx(1.25, abs=0.002)
    assert delta["table_factors"] == {"acme": {"factor": 1.2, "source": "table"}}
    (place,) = delta["placement"]
    assert place["family"] == "acme" and not place["new"]  # the family's only model
    # without the table the model is unknown: its own group, nowhere to put the factor
    code, out, _ = run(["calibrate", "--json", str(log)], capsys)
    (delta,) = json.loads(out)["delta_factors"]
    assert delta["families"] == ["unknown"] and delta["placement"][0]["family"] is None


def test_calibrate_refuses_a_bad_price_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema: nope\n")
    log = _write_log(tmp_path / "gw.jsonl", factor=1.0, n=3)
    code, _, err = run(["calibrate", "--prices", str(bad), str(log)], capsys)
    assert code == 2 and "bad.yaml" in err
