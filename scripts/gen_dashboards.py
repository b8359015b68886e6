#!/usr/bin/env python3
"""Superseded by scripts/gen_mixin.py, which generates the dashboards with the rules and the chart's copies.

Kept so that ``python scripts/gen_dashboards.py [--check]`` still does what it
did: it runs ``gen_mixin.py`` with the same argument.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_mixin import main

if __name__ == "__main__":
    sys.exit(main(["--check"] if "--check" in sys.argv[1:] else []))
