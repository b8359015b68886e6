"""The counted-once rules' inner loop in C (_correlator.c); ``correlator.SpanCorrelator`` calls it."""

from collections.abc import Sequence
from typing import Any

def place(
    state: tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any], dict[Any, Any],
                 set[int], int],
    members: Sequence[Any],
    arrival_lists: tuple[list[str], list[int], list[str], list[Any]],
    next: list[int],
) -> str: ...
def gather(views: list[Any], outcomes: list[Any], owns: list[bool]) -> tuple[list[tuple[str, str]], list[Any]]: ...
def link(
    links: list[tuple[str, str]],
    members: Sequence[Any],
    known: dict[str, str],
    pending: dict[str, int],
    parents: list[str],
    pendings: list[str],
) -> bool: ...
def apply(members: Sequence[Any], outcomes: list[Any], same_call: Any) -> None: ...
def choose(families: dict[int, Any], members: Sequence[Any]) -> None: ...
def setup(member_type: type, mapped_type: type, response_id_key: str, cache_hit_flag: str) -> None: ...
def forget_prints(queues: dict[Any, Any], matched: set[int], prints: Sequence[Any]) -> None: ...
