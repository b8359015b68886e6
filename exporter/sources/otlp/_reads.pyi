"""The mapping's reads of a span's values in C (_reads.c); their Python twins are the reference."""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

def first_string(attrs: Mapping[str, Any], keys: Sequence[str], limit: int = ...) -> str | None: ...
def read_counts(
    attrs: Mapping[str, Any],
    pairs: Iterable[tuple[int, str]],
    includes_cache: bool | None = ...,
    flags: tuple[str, ...] = ...,
) -> Any: ...
def usage_block(counts: Any, dialect: Any, forced: bool | None) -> tuple[dict[str, Any], list[str]]: ...
def bind(name: str, value: Any) -> None: ...
