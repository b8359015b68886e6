"""Numbers beyond a double's range (1e310): valid JSON, refused only where the record reads them.

Found by the records_line fuzz target: the fast path skips unknown keys unread and counted such a line,
while the reference path (orjson) refused the whole line as invalid_json.
"""

from __future__ import annotations

import pytest

from exporter.engine.records import Record, Rejection, parse_line, parse_line_reference

IGNORED = b'{"ts":"2000-01-01T00:00:00Z","":"","model":" ","":"","":"","":{"":{"":1e310}}}'


@pytest.mark.parametrize("line", [
    IGNORED,
    b'{"ts":"2026-11-02T00:00:00Z","model":"m","request_id":"a","extra":{"big":1e310,"long":' + b"9" * 400 + b"}}",
])
def test_a_huge_number_in_an_ignored_key_costs_nothing_on_either_path(line: bytes) -> None:
    fast, reference = parse_line(line), parse_line_reference(line)
    assert isinstance(fast, Record) and isinstance(reference, Record)
    assert (fast.ts, fast.model, fast.request_id) == (reference.ts, reference.model, reference.request_id)


@pytest.mark.parametrize(("line", "reason"), [
    (b'{"ts":"2026-11-02T00:00:00Z","model":"m","tokens_before":1e310,"tokens_after":1}', "invalid_count"),
    (b'{"ts":"2026-11-02T00:00:00Z","model":"m","usage":{"prompt_tokens":1e310,"completion_tokens":1}}',
     "invalid_count"),
    (b'{"ts":1e310,"model":"m"}', "invalid_ts"),
    (b'{"ts":"2026-11-02T00:00:00Z","model":"m","x":NaN,"y":1e310}', "invalid_json"),  # NaN is not JSON
    (b'{"ts":"2026-11-02T00:00:00Z","model":"m","x":-Infinity,"y":1e310}', "invalid_json"),
    # the huge number first: orjson stops at it, and the stdlib fallback must refuse what follows
    (b'{"ts":"2026-11-02T00:00:00Z","model":"m","y":1e310,"x":NaN}', "invalid_json"),
    (b'{"ts":"2026-11-02T00:00:00Z","model":"m","y":1e310,"x":Infinity}', "invalid_json"),
    (b'{"ts":"2026-11-02T00:00:00Z","model":"m","y":1e310,"x":', "invalid_json"),  # cut short
])
def test_a_huge_number_where_the_record_reads_it_is_refused(line: bytes, reason: str) -> None:
    for parsed in (parse_line(line), parse_line_reference(line)):
        assert isinstance(parsed, Rejection) and parsed.reason == reason


@pytest.mark.parametrize("line", [b'{"y":1e310,"x":NaN}', b'{"y":1e310,"x":-Infinity}', b'[1e310,'])
def test_the_fallback_refuses_what_follows_a_huge_number_as_invalid_json(line: bytes) -> None:
    """Lines orjson refuses at the huge number, and the stdlib then refuses too: the same rejection as
    any other unparsable line, naming its length only."""
    assert parse_line_reference(line) == Rejection("invalid_json", f"line is not JSON ({len(line)} bytes)")
