"""Every line format applies the same JSON-line rules (records.decode_json_line)."""

from __future__ import annotations

import pytest

from exporter.engine.records import Rejection
from exporter.sources.formats.registry import make_line_decoder


@pytest.mark.parametrize("fmt", ["canonical", "litellm", "auto"])
def test_shared_line_rules(fmt: str) -> None:
    decode = make_line_decoder(fmt)
    assert decode(b"") is None and decode(b"\xef\xbb\xbf  ") is None  # blank, with or without a BOM
    bad_utf8 = decode(b'{"model": "\xff"}')
    assert isinstance(bad_utf8, Rejection) and bad_utf8.reason == "invalid_utf8"
    not_json = decode(b"{nope")
    assert isinstance(not_json, Rejection) and not_json.reason == "invalid_json"
