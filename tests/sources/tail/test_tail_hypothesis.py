"""Property: any split of a stream into writes, any budgets, any crashes: exactly the lines."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.sources.tail import Tailer, TailEvent

CAP = 40
_short = st.binary(max_size=CAP + 1)
_long = st.binary(min_size=CAP - 1, max_size=3 * CAP)
_content = st.one_of(_short, _long).map(lambda b: b.replace(b"\n", b"n").replace(b"\r", b"r").replace(b"\0", b"0"))
_line = st.tuples(_content, st.booleans())  # (content, CRLF?)


def expected(records: list[tuple[bytes, bool]], unterminated: bytes) -> list[bytes | str]:
    """Complete lines; a skip for each line over CAP, even one still unterminated."""
    out: list[bytes | str] = []
    for content, crlf in records:
        raw = content + (b"\r" if crlf else b"")
        if len(raw) > CAP:
            out.append("line_too_long")
        elif content:
            out.append(content)
    if len(unterminated) > CAP:
        out.append("line_too_long")
    return out


def seen(events: list[TailEvent]) -> list[bytes | str]:
    return [e.skipped if e.skipped is not None else e.line for e in events]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(_line, max_size=40),
    unterminated=_content,
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=25),
    actions=st.lists(st.sampled_from(["poll", "poll1", "ckpt", "crash"]), min_size=25, max_size=25),
)
def test_random_write_chunks_yield_exactly_the_lines(
    records: list[tuple[bytes, bool]],
    unterminated: bytes,
    cuts: list[int],
    actions: list[str],
) -> None:
    # A fixed first line: a file starting with compression magic bytes is never read.
    records = [(b"start", False), *records]
    data = b"".join(c + (b"\r\n" if crlf else b"\n") for c, crlf in records) + unterminated
    bounds = sorted({min(c, len(data)) for c in cuts} | {len(data)})
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "app.log"
        path.touch()

        def make() -> Tailer:
            return Tailer([str(path)], use_watchdog=False, max_line_bytes=CAP)

        tailer = make()
        got: list[bytes | str] = []
        saved = (tailer.state(), 0)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        prev = 0
        for i, b in enumerate(bounds):
            os.write(fd, data[prev:b])
            prev = b
            action = actions[i % len(actions)]
            if action == "poll":
                got += seen(tailer.poll())
            elif action == "poll1":
                got += seen(tailer.poll(max_lines=1))
            elif action == "ckpt":
                saved = (tailer.state(), len(got))
            else:
                tailer.close()
                tailer = make()
                tailer.restore(saved[0])
                del got[saved[1] :]
        os.close(fd)
        while True:
            more = seen(tailer.poll())
            if not more:
                break
            got += more
        tailer.close()
    assert got == expected(records, unterminated)
