"""The counted-once rules' inner loop in C (_correlator.c); ``correlator.SpanCorrelator`` calls it."""

from collections.abc import Sequence
from typing import Any

def place(
    state: tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any],
                 set[int], int],
    members: Sequence[Any],
    arrival_lists: tuple[list[str], list[int], list[str], list[Any]],
    next: int,
) -> tuple[str, int]: ...
def forget_prints(queues: dict[Any, Any], matched: set[int], prints: Sequence[Any]) -> None: ...
