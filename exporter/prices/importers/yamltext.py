"""YAML text the importers write: one quoting rule for every importer."""

from __future__ import annotations

import json


def quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON string syntax is valid YAML; ASCII only, so no encoding surprises)."""
    return json.dumps(text, ensure_ascii=True)
