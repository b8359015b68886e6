"""The YAML loader counts written values apart from values reached through aliases.

A large table (a full genai-prices import has ~0.9M values) loads; a billion-laughs document is
refused once its alias expansion passes ``MAX_NODES``, whatever its size; a document writing more
than ``MAX_VALUES`` values is refused too. Each refusal names the file and a line.
"""

from __future__ import annotations

import pytest

from exporter import yamlpos
from exporter.yamlpos import YamlError, load_located


def test_more_written_values_than_the_alias_budget_load() -> None:
    n = yamlpos.MAX_NODES + 50_000
    doc = load_located("[" + ",".join("1" for _ in range(n)) + "]", "big.yaml")
    assert len(doc.data) == n


def test_a_few_aliases_are_fine() -> None:
    doc = load_located("a: &a {x: 1, y: [1, 2]}\nb: *a\nc: *a\n", "t.yaml")
    assert doc.data["c"] == {"x": 1, "y": [1, 2]} and doc.line(("c", "y")) == 1


def test_alias_expansion_past_the_budget_is_refused() -> None:
    levels = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    levels += [f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    text = "\n".join(levels) + "\n"
    assert len(text) < 1000  # 9^9 values from under a kilobyte
    with pytest.raises(YamlError, match=rf"^b\.yaml:1: document expands to more than {yamlpos.MAX_NODES} values "
                                        "through aliases"):
        load_located(text, "b.yaml")


def test_too_many_written_values_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlpos, "MAX_VALUES", 1000)  # the real limit costs ~300 MB to reach
    with pytest.raises(YamlError, match=r"^h\.yaml:2: document has more than 1000 values$"):
        load_located("# a comment\n[" + ",".join("1" for _ in range(1001)) + "]", "h.yaml")


def test_limits_have_room_for_a_full_import_and_none_for_a_bomb() -> None:
    assert yamlpos.MAX_VALUES >= 1_000_000 > yamlpos.MAX_NODES
