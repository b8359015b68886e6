"""Input formats that map onto the canonical record v1 (DESIGN.md §2).

Each format is a pure function ``to_canonical(obj) -> dict`` whose output
``exporter.records.parse_object`` validates, so validation has one path:

- ``exporter.formats.litellm``: LiteLLM's StandardLoggingPayload
  (``to_canonical``, ``detect`` for ``--format auto``);
- ``exporter.formats.mapping``: a user YAML field mapping
  (``load_mapping(path).apply``).
"""

from __future__ import annotations


class FormatError(ValueError):
    """An input object that cannot be mapped at all.

    ``reason`` is one of ``exporter.records.REJECTION_REASONS`` (a bounded
    label value); ``detail`` names the field and never carries prompt text.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


__all__ = ["FormatError"]
