"""Input formats -> line decoders the pipeline calls.

``canonical`` is record v1; ``litellm`` is LiteLLM's standard logging
payload; ``mapping`` is a user YAML field mapping; ``auto`` tells LiteLLM's
payload from canonical records per line; ``otlp-json`` is the OTel
collector's file exporter output (one export request per line; each span is
one record). Every decoder returns what ``records.parse_object`` returns, so
validation has one path.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import partial
from typing import Any

from exporter.engine.records import Record, Rejection, TextCounter, decode_json_line, parse_line, parse_object

FORMATS = ("canonical", "litellm", "mapping", "auto")


class LazyTextCounter:
    """Loads the tokenizer on the first text it must count (most logs carry counts)."""

    def __init__(self) -> None:
        self._counter: TextCounter | None = None

    def _get(self) -> TextCounter:
        if self._counter is None:
            tokens = importlib.import_module("exporter.tokens.counter")
            self._counter = tokens.TokenCounter()
        return self._counter

    def count_text(self, text: str, model: str | None = None, provider: str | None = None) -> tuple[int, str]:
        return self._get().count_text(text, model, provider)

    def count_messages(
        self, messages: list[Any], model: str | None = None, provider: str | None = None
    ) -> tuple[int, str]:
        return self._get().count_messages(messages, model, provider)

    @property
    def loaded(self) -> TextCounter | None:
        return self._counter


class LineDecoder:
    """Callable bytes -> Record | Rejection | None, with the text counter it uses.

    Sources that feed many lines pass ``decode_line`` to ``Pipeline.ingest_lines``:
    None for canonical records, which the pipeline's own fast path counts
    without building a ``Record`` (with the pipeline's counter: sources build
    their decoders with it).
    """

    def __init__(self, name: str, to_canonical: Callable[[Any], Any] | None, counter: TextCounter) -> None:
        self.name = name
        self.counter = counter
        self._to_canonical = to_canonical
        self.decode_line: Callable[[bytes], Record | Rejection | None] | None = (
            None if to_canonical is None else partial(decode_json_line, decode=self.decode_object))

    def __call__(self, line: bytes) -> Record | Rejection | None:
        return parse_line(line, self.counter) if self.decode_line is None else self.decode_line(line)

    def decode_object(self, obj: Any) -> Record | Rejection:
        if self._to_canonical is not None:
            try:
                obj = self._to_canonical(obj)
            except (ValueError, TypeError, KeyError) as exc:
                reason = getattr(exc, "reason", "invalid_field")
                return Rejection(reason if isinstance(reason, str) else "invalid_field", str(exc)[:200])
        return parse_object(obj, self.counter)


def make_line_decoder(fmt: str, mapping_path: str | None = None,
                      counter: TextCounter | None = None) -> LineDecoder:
    counter = counter or LazyTextCounter()
    if fmt == "canonical":
        return LineDecoder(fmt, None, counter)
    if fmt == "litellm":
        litellm = importlib.import_module("exporter.sources.formats.litellm")
        return LineDecoder(fmt, litellm.to_canonical, counter)
    if fmt == "auto":
        litellm = importlib.import_module("exporter.sources.formats.litellm")

        def auto(obj: Any) -> Any:
            return litellm.to_canonical(obj) if isinstance(obj, dict) and litellm.detect(obj) else obj

        return LineDecoder(fmt, auto, counter)
    if fmt == "mapping":
        if not mapping_path:
            raise ValueError("--format mapping needs a mapping file (--mapping FILE)")
        mapping = importlib.import_module("exporter.sources.formats.mapping")
        compiled = mapping.load_mapping(mapping_path)
        return LineDecoder(fmt, compiled.apply, counter)
    raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
