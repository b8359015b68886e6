"""Every fenced YAML and JSON example in the docs parses, and every config, mapping, price table and record
shown is accepted by the real loader: an example a reader copies works."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from exporter.engine.records import Record, parse_object
from exporter.engine.usage import normalise_usage
from exporter.prices.table import parse_price_table
from exporter.sidecar.config import load_config
from exporter.sources.formats.mapping import parse_mapping

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)


class Snippet(NamedTuple):
    file: str
    line: int
    lang: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def snippets(*langs: str) -> list[Snippet]:
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match.group("lang") in langs:
                body = textwrap.dedent(match.group("body"))
                line = text.count("\n", 0, match.start()) + 1
                found.append(Snippet(str(path.relative_to(ROOT)), line, match.group("lang"), body))
    return found


YAML = snippets("yaml", "yml")
JSON = snippets("json", "jsonl")


def test_the_docs_have_examples_to_check() -> None:
    assert len(YAML) >= 15 and len(JSON) >= 8
    assert {s.file for s in YAML} >= {"README.md", "docs/integrations.md", "docs/deployment.md",
                                      "docs/configuration.md"}


def _json_values(snippet: Snippet) -> list[Any]:
    try:
        return [json.loads(snippet.text)]
    except json.JSONDecodeError:
        return [json.loads(line) for line in snippet.text.splitlines() if line.strip()]  # JSON lines


@pytest.mark.parametrize("snippet", JSON, ids=lambda s: s.where)
def test_json_examples_parse_and_records_are_accepted(snippet: Snippet) -> None:
    for value in _json_values(snippet):
        if isinstance(value, dict) and "ts" in value and "model" in value:
            record = parse_object(value)
            assert isinstance(record, Record), f"{snippet.where}: {record}"
            if "usage" in value:
                usage = normalise_usage(value["usage"])
                assert usage is not None, f"{snippet.where}: usage of no known shape"


@pytest.mark.parametrize("snippet", YAML, ids=lambda s: s.where)
def test_yaml_examples_parse_and_load_with_the_real_loader(snippet: Snippet, tmp_path: Path) -> None:
    documents = list(yaml.safe_load_all(snippet.text))
    assert documents, snippet.where
    schema = documents[0].get("schema") if isinstance(documents[0], dict) else None
    if schema == "llm-savings-config/v1":
        path = tmp_path / "config.yaml"
        path.write_text(snippet.text, encoding="utf-8")
        load_config(path, environ={})
    elif schema == "llm-savings-mapping/v1":
        parse_mapping(snippet.text, snippet.where)
    elif schema in ("llm-savings-prices/v1", "llm-savings-prices/v2"):
        parse_price_table(snippet.text, snippet.where)


def test_record_format_examples_give_the_tiers_the_text_says() -> None:
    """The per-shape examples of docs/record-format.md, normalised: the numbers its sentences state."""
    stated = {  # request_id: (fresh, cache read, 5m writes, 1h writes, output), as written above each example
        "req-0001": (3416, 4096, 0, 0, 350),
        "req-0005": (1000, 6000, 2000, 0, 400),
        "req-0007": (1800, 3200, 0, 0, 600),
        "req-0002": (4112, 16000, 0, 0, 1500),
        "req-0003": (1200, 6000, 1000, 2000, 350),
        "req-0008": (7000, 8000, 0, 0, 2000),
        "req-0009": (2500, 10000, 1200, 0, 450),
    }
    seen = {}
    for snippet in JSON:
        if snippet.file != "docs/record-format.md":
            continue
        for value in _json_values(snippet):
            if isinstance(value, dict) and value.get("request_id") in stated:
                usage = normalise_usage(value["usage"])
                assert usage is not None
                seen[value["request_id"]] = (usage.fresh_input, usage.cache_read, usage.cache_write_5m,
                                             usage.cache_write_1h, usage.output)
    assert seen == stated
    text = (ROOT / "docs" / "record-format.md").read_text(encoding="utf-8")
    for tiers in stated.values():
        for number in tiers:
            assert str(number) in text


def test_records_in_the_docs_are_the_example_files_records() -> None:
    """The per-shape examples are taken from examples/records.jsonl: one source, not two to keep in step."""
    by_id = {}
    for line in (ROOT / "examples" / "records.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        by_id[record["request_id"]] = record
    for snippet in JSON:
        if snippet.file != "docs/record-format.md":
            continue
        for value in _json_values(snippet):
            if isinstance(value, dict) and value.get("request_id", "").startswith("req-0"):
                original = by_id[value["request_id"]]
                assert value["usage"] == original["usage"] and value["ts"] == original["ts"], snippet.where
