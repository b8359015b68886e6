"""The start-up lines: their wording from a config, and the files each glob matches."""

from __future__ import annotations

from pathlib import Path

from exporter.engine.plainpath import LOOP
from exporter.prices.table import load_price_table
from exporter.sidecar.config import config_from_dict
from exporter.sidecar.startup import GlobMatch, match_globs, match_sources, startup_lines


def test_globs_match_regular_files_sorted_and_recursively(tmp_path: Path) -> None:
    (tmp_path / "a" / "deep").mkdir(parents=True)
    for name in ("b.jsonl", "a.jsonl", "a.jsonl.1", "a/deep/c.jsonl"):
        (tmp_path / name).write_text("")
    (tmp_path / "dir.jsonl").mkdir()  # not a file
    config = config_from_dict({"sources": [{"name": "gw", "paths": [str(tmp_path / "*.jsonl*"),
                                                                    str(tmp_path / "**" / "c.jsonl")]}]})
    (top, deep) = match_globs(config.sources[0])
    assert top.files == tuple(str(tmp_path / n) for n in ("a.jsonl", "a.jsonl.1", "b.jsonl"))
    assert deep.files == (str(tmp_path / "a" / "deep" / "c.jsonl"),)
    assert match_sources(config) == {"gw": [top, deep]}


def test_the_lines_name_table_state_sources_receiver_and_listen(tmp_path: Path) -> None:
    table = load_price_table()
    config = config_from_dict({
        "listen": "0.0.0.0:9464", "state_dir": str(tmp_path / "state"),
        "sources": [{"name": "gw", "paths": ["/logs/*.jsonl"]},
                    {"name": "collector", "type": "otlp_file", "paths": ["/otel/*.json"]}],
        "otlp": {"enabled": True, "listen": "0.0.0.0:4318"},
        "otlp_push": {"enabled": True, "endpoint": "http://collector:4318/v1/metrics"},
    })
    files = tuple(f"/logs/{i}.jsonl" for i in range(7))
    lines = startup_lines(config, table, {"gw": [GlobMatch("/logs/*.jsonl", files)],
                                          "collector": [GlobMatch("/otel/*.json", ())]}, 9464, 4318)
    assert lines == [
        f"price table (bundled) {table.path} sha256 {table.sha256}: {len(table.versions)} version(s) "
        f"{table.versions[0].version}..{table.newest.version}, newest from {table.newest.effective_from_text}, "
        f"{len(table.newest.models)} models",
        f"state dir {tmp_path / 'state'}",
        f"source gw (jsonl, format canonical, plain-line loop {LOOP}): /logs/*.jsonl -> 7 file(s): /logs/0.jsonl, "
        "/logs/1.jsonl, "
        "/logs/2.jsonl, /logs/3.jsonl, /logs/4.jsonl and 2 more",
        "source collector (otlp_file): /otel/*.json -> no file yet (picked up when one appears)",
        "OTLP receiver on http://0.0.0.0:4318/v1/traces",
        "OTLP metrics push to http://collector:4318/v1/metrics every 60 s",
        "serving /metrics on 0.0.0.0:9464 (port 9464)",
    ]


def test_without_sources_or_receiver(tmp_path: Path) -> None:
    table = load_price_table()
    config = config_from_dict({"state_dir": "rel/state", "prices": table.path})
    lines = startup_lines(config, table, {}, 1234, None)
    assert lines[0].startswith(f"price table (configured) {table.path} sha256 ")
    assert lines[1].startswith("state dir /") and lines[1].endswith("rel/state")
    assert lines[2:] == ["no file sources configured", "OTLP receiver off (otlp.enabled: false)",
                         "serving /metrics on 127.0.0.1:9464 (port 1234)"]


def test_a_push_endpoint_credential_is_not_logged(tmp_path: Path) -> None:
    config = config_from_dict({"state_dir": str(tmp_path),
                               "otlp_push": {"enabled": True, "endpoint": "https://u:s3cret@otel.example:4318/v1"}})
    lines = startup_lines(config, load_price_table(), {}, 1, None)
    assert "OTLP metrics push to https://…@otel.example:4318/v1 every 60 s" in lines
    assert not any("s3cret" in line for line in lines)
