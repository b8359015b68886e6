"""The C walk of a protobuf body's spans (_views.c); ``decode.views_of_protobuf`` calls it."""

from collections.abc import Callable
from typing import Any

def configure(
    messages: tuple[tuple[tuple[int, int, int, int], ...], ...], others: tuple[tuple[int, int, str], ...]
) -> None: ...
def validate(body: bytes) -> None: ...
def views(
    body: bytes, decisions: dict[str, bool], wanted: Callable[[str], bool], span_view: type, unsupported: type
) -> list[Any]: ...
