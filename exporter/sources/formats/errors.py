"""The error every format raises for an object it cannot map at all."""

from __future__ import annotations


class FormatError(ValueError):
    """An input object that cannot be mapped at all.

    ``reason`` is one of ``exporter.engine.records.REJECTION_REASONS`` (a bounded
    label value); ``detail`` names the field and never carries prompt text.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


__all__ = ["FormatError"]
