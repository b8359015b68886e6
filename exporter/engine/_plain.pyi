"""The plain canonical line's loop in C (_plain.c); plainpath.ingest_python is its twin and reference."""

from collections.abc import Callable, Iterable
from typing import Any

def setup(
    line: type,
    usage: type,
    details: type,
    split: type,
    unset: Any,
    decode: Callable[[bytes], Any],
    decode_errors: tuple[type[BaseException], ...],
    minute_starts: dict[str, int],
    new_minute: Callable[[str], int | None],
    fallback: Callable[[Any, Iterable[bytes]], None],
    max_epoch_seconds: float,
) -> None: ...
def count(
    pipeline: Any, lines: Iterable[bytes], first: int = ..., watch: Any = ..., cache: RouteCache | None = ...
) -> None: ...

class RouteCache:
    pending: bool
    def __init__(self) -> None: ...
    def flush(self) -> None: ...
def digest8(data: bytes) -> bytes: ...
