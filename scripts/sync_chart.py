#!/usr/bin/env python3
"""Superseded by scripts/gen_mixin.py, which writes the chart's copies of rules/ and dashboards/.

The chart's copies are no longer byte-for-byte copies: they carry a token in
each mixin parameter's place, which the chart's templates replace with its
``mixin:`` values. ``python scripts/sync_chart.py [--check]`` runs
``gen_mixin.py`` with the same argument.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_mixin import main

if __name__ == "__main__":
    sys.exit(main(["--check"] if "--check" in sys.argv[1:] else []))
