"""Coverage-guided fuzzing of one target with atheris (optional: ``pip install atheris``).

    python -m tests.fuzz.atheris_main TARGET CORPUS_DIR -max_total_time=60 -artifact_prefix=DIR/TARGET-

The corpus directory is seeded with the target's seeds; a crash is written by
libFuzzer to ``<artifact_prefix>crash-<sha1>``; ``scripts/fuzz.sh`` renames it
into ``tests/fuzz/regressions/<target>-<sha1>.bin``.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> None:
    import atheris

    name, corpus = sys.argv[1], Path(sys.argv[2])
    with atheris.instrument_imports(include=["exporter"]):
        from tests.fuzz import targets
        from tests.fuzz.strategies import all_seeds
    corpus.mkdir(parents=True, exist_ok=True)
    for index, seed in enumerate(all_seeds()[name]):
        (corpus / f"seed-{index}").write_bytes(seed)
    target = targets.TARGETS[name]
    atheris.Setup([sys.argv[0], *sys.argv[3:], str(corpus)], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
