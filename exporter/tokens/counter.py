"""Exact, offline token counting for records that carry text instead of counts.

Why this module exists: the exporter counts ``text_before``/``text_after`` itself
when a record carries no counts (docs/record-format.md), and the label it sets
(``count_method``) must say truthfully how the count was made. Where an
encoding's files come from, and how they are checked, is ``encodings``'.

Failure and fallback
--------------------
When no candidate file of an encoding loads, counting in that encoding falls back to
``ceil(chars / 4)`` (ceil, so any non-empty text counts at least one token),
labelled ``estimate:chars/4``; :attr:`TokenCounter.fallbacks` counts those
calls and :attr:`TokenCounter.encoding_errors` keeps the reason per encoding
for the pipeline to export. The failure is logged once per encoding; text is
never logged.

Which encoding for which model
------------------------------
:data:`DEFAULT_MODEL_RULES` is a small ordered table of glob patterns, first
match wins; anything unmatched uses :data:`DEFAULT_ENCODING` (o200k_base).
Older OpenAI models (gpt-4, gpt-4-turbo, gpt-3.5-turbo, text-embedding-3-*,
ada-002) use cl100k_base. Families whose tokenizer is not public (Anthropic,
Gemini, ...) are counted with o200k_base on purpose: the price table's
``billed_token_factor`` converts those counts to the provider's tokens.

Caching, and per-message counting
---------------------------------
Counts are cached per segment (one message's content, or one content part) in a
bounded LRU keyed by ``(encoding, Python's 64-bit hash of the text, its length)`` — the
text itself is never stored. The hash is SipHash with a per-process random key (no
input can be crafted to collide), about twice as fast as blake2b with no UTF-8 copy;
at the default 32,768 entries a lookup meets a wrong entry with odds below 2e-15.
An agent transcript that resends its whole history therefore only tokenizes its
new messages. Each segment is encoded on its own, so the cached total equals the
uncached per-segment total exactly. That total can differ from counting the
concatenation of all messages by a few tokens per boundary (a BPE merge or a
pre-tokenizer split that would span two messages cannot happen here); providers
also never merge across messages, since their chat templates put separator tokens
between them.

Thread safety: built for the pipeline's single thread. A lock guards the cache,
the counters and the lazy encoding load, so concurrent use from another thread
(a CLI, a test) is safe; two threads may then tokenize the same new text twice.
"""

from __future__ import annotations

import fnmatch
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import tiktoken

from exporter.tokens.encodings import (
    ENCODINGS,
    ESTIMATE_CHARS,
    INSTALL_HINT,
    EncodingUnavailable,
    estimate_chars4,
    method_for,
    shared_encoding,
)

__all__ = [
    "DEFAULT_ENCODING",
    "DEFAULT_MODEL_RULES",
    "DEFAULT_PROVIDER_ENCODINGS",
    "TokenCounter",
    "message_segments",
]

log = logging.getLogger(__name__)

DEFAULT_ENCODING = "o200k_base"

# Ordered (glob over the lower-cased model name, encoding); first match wins.
# Provider prefixes ("openai/", "azure/") and fine-tune prefixes ("ft:") are
# stripped before matching.
DEFAULT_MODEL_RULES: tuple[tuple[str, str], ...] = (
    ("gpt-4", "cl100k_base"),
    ("gpt-4-*", "cl100k_base"),  # gpt-4-turbo, gpt-4-0613, gpt-4-32k (not gpt-4o / gpt-4.1)
    ("gpt-3.5*", "cl100k_base"),
    ("gpt-35-*", "cl100k_base"),  # Azure spelling
    ("text-embedding-3-*", "cl100k_base"),
    ("text-embedding-ada-002", "cl100k_base"),
    ("davinci-002", "cl100k_base"),
    ("babbage-002", "cl100k_base"),
)

# Provider -> encoding for models no rule matched. Families whose tokenizer is
# not public are counted in o200k_base; billed_token_factor converts.
DEFAULT_PROVIDER_ENCODINGS: dict[str, str] = {
    "openai": "o200k_base",
    "azure": "o200k_base",
    "anthropic": "o200k_base",
    "google": "o200k_base",
    "gemini": "o200k_base",
    "vertex_ai": "o200k_base",
    "bedrock": "o200k_base",
    "mistral": "o200k_base",
    "deepseek": "o200k_base",
}


def _strip_model(model: str) -> str:
    name = model.strip().lower()
    if name.startswith("ft:"):
        name = name[3:].split(":", 1)[0]
    return name.rsplit("/", 1)[-1]


def message_segments(message: Any) -> Iterator[str]:
    """The text segments of one chat message, in order.

    Accepts a plain string, an OpenAI/Anthropic message (``content`` a string or
    a list of parts with ``text``; Anthropic ``tool_result`` parts nest their own
    ``content``) and a Gemini content (``parts`` with ``text``). Non-text parts
    (images, audio) and roles/names contribute nothing: these are content
    tokens, not the provider's chat-template overhead.
    """
    if isinstance(message, str):
        if message:
            yield message
        return
    if isinstance(message, Mapping):
        if "content" in message:
            yield from message_segments(message["content"])
        elif "parts" in message:
            yield from message_segments(message["parts"])
        elif isinstance(message.get("text"), str):
            yield from message_segments(message["text"])
        return
    if isinstance(message, list | tuple):
        for part in message:
            if isinstance(part, str):
                yield from message_segments(part)
            elif isinstance(part, Mapping):
                text = part.get("text")
                if isinstance(text, str):
                    yield from message_segments(text)
                elif "content" in part:
                    yield from message_segments(part["content"])


class TokenCounter:
    """Counts text in the encoding of a model family, with a bounded content-hash cache.

    ``encoding_paths`` replaces the candidate files per encoding (tests, images
    with the files elsewhere); ``model_rules``/``provider_encodings`` replace the
    mapping tables; ``cache_entries`` bounds the LRU (0 disables it);
    segments shorter than ``cache_min_chars`` are not cached (hashing costs
    more than encoding them).
    """

    def __init__(
        self,
        *,
        encoding_paths: Mapping[str, Sequence[Path | str]] | None = None,
        model_rules: Iterable[tuple[str, str]] = DEFAULT_MODEL_RULES,
        provider_encodings: Mapping[str, str] | None = None,
        default_encoding: str = DEFAULT_ENCODING,
        cache_entries: int = 32768,
        cache_min_chars: int = 256,
    ) -> None:
        if cache_entries < 0:
            raise ValueError("cache_entries must be >= 0")
        self._paths = dict(encoding_paths) if encoding_paths is not None else {}
        self.model_rules: tuple[tuple[str, str], ...] = tuple(model_rules)
        self.provider_encodings: dict[str, str] = dict(
            DEFAULT_PROVIDER_ENCODINGS if provider_encodings is None else provider_encodings
        )
        self.default_encoding = default_encoding
        for _, enc in (*self.model_rules, *self.provider_encodings.items()):
            if enc not in ENCODINGS:
                raise ValueError(f"unknown encoding {enc!r} in mapping; known: {sorted(ENCODINGS)}")
        if default_encoding not in ENCODINGS:
            raise ValueError(f"unknown default encoding {default_encoding!r}")
        self.cache_entries = cache_entries
        self.cache_min_chars = cache_min_chars
        self._cache: OrderedDict[tuple[str, int, int], int] = OrderedDict()
        self._encodings: dict[str, tiktoken.Encoding] = {}
        self._lock = threading.Lock()
        #: number of count calls (text or segment) answered by the chars/4 fallback
        self.fallbacks = 0
        #: encoding name -> why it could not be loaded (paths and hashes, never text)
        self.encoding_errors: dict[str, str] = {}
        self.cache_hits = 0
        self.cache_misses = 0

    # -- mapping ---------------------------------------------------------------
    def encoding_for(self, model: str | None = None, provider: str | None = None) -> str:
        """The encoding name for a model/provider, from the rule tables."""
        if model:
            name = _strip_model(model)
            for pattern, enc in self.model_rules:
                if fnmatch.fnmatchcase(name, pattern):
                    return enc
        if provider:
            by_provider = self.provider_encodings.get(provider.strip().lower())
            if by_provider is not None:
                return by_provider
        return self.default_encoding

    # -- loading ---------------------------------------------------------------
    def encoding(self, name: str) -> tiktoken.Encoding | None:
        """The loaded encoding, or None (reason in ``encoding_errors``, logged once)."""
        enc = self._encodings.get(name)
        if enc is not None:
            return enc
        with self._lock:
            if name in self.encoding_errors:
                return None
            enc = self._encodings.get(name)
            if enc is not None:
                return enc
            try:
                enc = shared_encoding(name, self._paths.get(name))
            except EncodingUnavailable as exc:
                self.encoding_errors[name] = str(exc)
                log.warning(
                    "token encoding %s unavailable, counting with %s instead: %s (hint: %s)",
                    name,
                    ESTIMATE_CHARS,
                    exc,
                    INSTALL_HINT,
                )
                return None
            self._encodings[name] = enc
            return enc

    def available(self, name: str) -> bool:
        """Whether ``name`` loads (loads it if needed)."""
        return self.encoding(name) is not None

    # -- counting --------------------------------------------------------------
    def _count_segment(self, text: str, name: str, enc: tiktoken.Encoding) -> int:
        if len(text) < self.cache_min_chars or self.cache_entries == 0:
            return len(enc.encode_ordinary(text))
        key = (name, hash(text), len(text))
        cache = self._cache
        with self._lock:
            hit = cache.get(key)
            if hit is not None:
                cache.move_to_end(key)
                self.cache_hits += 1
                return hit
            self.cache_misses += 1
        n = len(enc.encode_ordinary(text))
        with self._lock:
            cache[key] = n
            if len(cache) > self.cache_entries:
                cache.popitem(last=False)
        return n

    def count_encoding(self, text: str, encoding: str) -> tuple[int, str]:
        """Count ``text`` in a named encoding; ``(ceil(chars/4), estimate)`` if it can't load."""
        enc = self._encodings.get(encoding) or self.encoding(encoding)
        if enc is None:
            with self._lock:
                self.fallbacks += 1
            return estimate_chars4(text), ESTIMATE_CHARS
        return self._count_segment(text, encoding, enc), method_for(encoding)

    def count_text(
        self, text: str, model: str | None = None, provider: str | None = None
    ) -> tuple[int, str]:
        """Tokens of ``text`` for a model family, and the method label that made the count."""
        return self.count_encoding(text, self.encoding_for(model, provider))

    def count_messages(
        self, messages: list[Any], model: str | None = None, provider: str | None = None
    ) -> tuple[int, str]:
        """Sum of per-segment content tokens of a chat ``messages`` list.

        Content tokens only: no role markers, separators or other chat-template
        overhead the provider adds (the calibration's level ratio shows that
        gap). Each segment is counted (and cached) on its own, so a resent
        history costs only hashing.
        """
        name = self.encoding_for(model, provider)
        enc = self.encoding(name)
        total = 0
        if enc is None:
            segments = 0
            for message in messages:
                for text in message_segments(message):
                    total += estimate_chars4(text)
                    segments += 1
            with self._lock:
                self.fallbacks += max(segments, 1)
            return total, ESTIMATE_CHARS
        count = self._count_segment
        for message in messages:
            content = message.get("content") if isinstance(message, dict) else message
            if isinstance(content, str):  # the common case, without the generator
                if content:
                    total += count(content, name, enc)
                continue
            for text in message_segments(message):
                total += count(text, name, enc)
        return total, method_for(name)

    def cache_info(self) -> dict[str, int]:
        """Hits, misses and size of the segment cache, for self-metrics."""
        with self._lock:
            return {
                "hits": self.cache_hits,
                "misses": self.cache_misses,
                "entries": len(self._cache),
                "max_entries": self.cache_entries,
            }
