"""Simulated traffic to disk: a gateway log appended at a rate and rotated by rename."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from exporter.demo.simulator import Simulator

LOG_NAME = "gateway.jsonl"


def to_line(item: dict[str, Any] | str) -> str:
    """One JSON line (a bad line is already raw text), without the newline."""
    if isinstance(item, str):
        return item
    return json.dumps(item, separators=(",", ":"))


class LogWriter:
    """Appends simulator lines to ``<dir>/gateway.jsonl`` at a rate, rotating by rename.

    Rotation: ``gateway.jsonl`` -> ``gateway.jsonl.1`` (replacing the previous
    one: one old file is kept), then a new ``gateway.jsonl``. Lines are written
    whole and flushed each step, so a tailer sees complete lines.
    Driven by :meth:`step` with the caller's clock; :meth:`Simulator.run` loops it.
    """

    def __init__(
        self,
        simulator: Simulator,
        directory: str | os.PathLike[str],
        rate_per_s: float,
        rotate_every_s: float | None,
        now: float,
    ) -> None:
        self.sim = simulator
        self.path = Path(directory) / LOG_NAME
        self.rate_per_s = rate_per_s
        self.rotate_every_s = rotate_every_s
        self.started = now
        self.rotated_at = now
        self.written = 0
        self.rotations = 0
        self._out = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def step(self, now: float) -> int:
        """Write the lines due by ``now``; rotate when due. Returns the lines written."""
        if self.rotate_every_s is not None and now - self.rotated_at >= self.rotate_every_s:
            self.rotate(now)
        due = int((now - self.started) * self.rate_per_s) - self.written
        if due <= 0:
            return 0
        due = min(due, int(self.rate_per_s * 5) + 1)  # after a stall, catch up at most 5 s worth
        # stamp the batch evenly over the interval it stands for, the newest at ``now``
        step = 1.0 / self.rate_per_s
        self._out.write(
            "".join(to_line(self.sim.item(now - (due - 1 - i) * step)) + "\n" for i in range(due))
        )
        self._out.flush()
        self.written += due
        return due

    def rotate(self, now: float) -> None:
        self._out.close()
        os.replace(self.path, f"{self.path}.1")
        self._out = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        self.rotated_at = now
        self.rotations += 1

    def close(self) -> None:
        self._out.close()


__all__ = ["LOG_NAME", "LogWriter", "to_line"]
