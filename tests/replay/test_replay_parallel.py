"""Parallel replay: the ranges cover the input exactly, and the result is always the one-pass result.

``replay --jobs N`` counts disjoint byte ranges in forked processes and adds
the parts only when they are independent (``replay_parallel.why_not_additive``);
otherwise it counts again in one pass. Every test compares with ``--jobs 1``.
"""

from __future__ import annotations

import io
import json
import random
from array import array
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exporter.replay.replay as replay_module
from exporter.cli.main import main
from exporter.engine.aggregate import Aggregates
from exporter.prices.table import load_price_table
from exporter.replay.parallel import PartResult, run_parts, split_ranges, why_not_additive
from exporter.replay.replay import replay_in_parts, replay_pipeline
from exporter.sources.formats.registry import make_line_decoder
from tests.support import oracle

PRICES = Path(__file__).resolve().parents[1] / "fixtures" / "engine" / "prices_two_versions.yaml"


@settings(max_examples=150, deadline=None)
@given(
    files=st.lists(st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), max_size=12), max_size=4),
    unterminated=st.lists(st.booleans(), min_size=4, max_size=4),
    jobs=st.integers(1, 6),
)
def test_ranges_cover_every_byte_once_in_order_at_line_ends(
    tmp_path_factory: pytest.TempPathFactory, files: list[list[bytes]], unterminated: list[bool], jobs: int
) -> None:
    directory = tmp_path_factory.mktemp("ranges")
    paths: list[str] = []
    contents: list[bytes] = []
    for index, lines in enumerate(files):
        data = b"".join(line + b"\n" for line in lines)
        if unterminated[index] and data:
            data = data[:-1]
        (directory / f"f{index}").write_bytes(data)
        paths.append(str(directory / f"f{index}"))
        contents.append(data)
    parts = split_ranges(paths, jobs)
    assert len(parts) <= jobs
    ranges = [r for part in parts for r in part]
    assert all(part for part in parts)
    for name, data in zip(paths, contents, strict=True):
        mine = [(start, end) for p, start, end in ranges if p == name]
        position = 0
        for start, end in mine:  # in order, contiguous, non-empty, whole lines
            assert start == position and end > start
            assert end == len(data) or data[end - 1 : end] == b"\n"
            position = end
        assert position == len(data)


def test_parts_are_about_equal(tmp_path: Path) -> None:
    rng = random.Random(5)
    lines = [b"x" * rng.randrange(0, 300) + b"\n" for _ in range(5000)]
    first, second = _log(tmp_path, lines[:1000], "one"), _log(tmp_path, lines[1000:], "two")
    total = first.stat().st_size + second.stat().st_size
    parts = split_ranges([str(first), str(second)], 4)
    assert len(parts) == 4
    for part in parts:  # a cut lands at the first line end past the share: off by less than a line
        assert abs(sum(end - start for _, start, end in part) - total / 4) < 2 * 301


def _log(directory: Path, lines: list[bytes], name: str = "log.jsonl") -> Path:
    path = directory / name
    path.write_bytes(b"".join(lines))
    return path


def _replay(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict[str, Any], str]:
    capsys.readouterr()
    assert main(["replay", *args, "--prices", str(PRICES), "--json"]) == 0
    captured = capsys.readouterr()
    result: dict[str, Any] = json.loads(captured.out)
    return result, captured.err


@pytest.fixture()
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parallel replay for inputs of any size (the CLI only splits inputs of 16 MiB a part and more)."""
    monkeypatch.setattr(replay_module, "MIN_BYTES_PER_JOB", 1)


def _unique_log(rng: random.Random, n: int, prefix: str = "id") -> list[bytes]:
    lines = []
    for index in range(n):
        if rng.random() < 0.08:
            lines.append(oracle.bad_line(rng) + b"\n")
        else:
            rid = None if rng.random() < 0.1 else f"{prefix}-{index}"
            lines.append(json.dumps(oracle.good_record(rng, rid)).encode() + b"\n")
    return lines


def _parts(paths: list[Path], jobs: int) -> Any:
    decoder = make_line_decoder("canonical")
    prices = load_price_table(PRICES)
    return replay_in_parts([str(p) for p in paths], lambda: replay_pipeline(prices, decoder), decoder, jobs)


@pytest.mark.parametrize("jobs", [2, 3, 5])
def test_independent_parts_are_added_and_equal_one_pass(
    jobs: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], small_parts: None
) -> None:
    rng = random.Random(jobs)
    first = _log(tmp_path, _unique_log(rng, 1500, "a"), "a.jsonl")
    second = _log(tmp_path, _unique_log(rng, 700, "b"), "b.jsonl")
    pipeline = _parts([first, second], jobs)
    assert pipeline is not None, "independent parts must be added, not counted again"
    one_pass, _ = _replay(capsys, str(first), str(second), "--jobs", "1")
    parallel, err = _replay(capsys, str(first), str(second), "--jobs", str(jobs))
    assert err == ""  # no fallback note
    assert parallel == one_pass
    assert pipeline.aggregates.month_totals() == one_pass["months"]
    assert sum(m["requests"] for m in one_pass["months"].values()) > 1500


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("duplicate_ids", "counted request ids an earlier part holds"),
        ("long_span", "the records span more than the dedupe window"),
        ("tenant_cap", "the tenant label cap is reached"),
    ],
)
def test_dependent_parts_are_counted_again_in_one_pass(
    case: str, reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], small_parts: None
) -> None:
    rng = random.Random(11)
    lines = _unique_log(rng, 1200)
    if case == "duplicate_ids":  # the second half retries ids of the first, with other content
        lines += [json.dumps(oracle.good_record(rng, f"id-{i}")).encode() + b"\n" for i in range(0, 1200, 7)]
    elif case == "long_span":
        record = oracle.good_record(rng, "long-ago")  # months before the rest: the span passes the window
        lines.append(json.dumps({**record, "ts": "2026-03-01T00:00:00Z"}).encode() + b"\n")
    else:
        lines += [json.dumps({**oracle.good_record(rng, f"t-{i}"), "tenant": f"tenant-{i}"}).encode() + b"\n"
                  for i in range(300)]
    path = _log(tmp_path, lines)
    assert _parts([path], 3) is None
    one_pass, quiet = _replay(capsys, str(path), "--jobs", "1")
    parallel, err = _replay(capsys, str(path), "--jobs", "3")
    assert quiet == ""
    assert reason in err and "counting again in one pass" in err
    assert parallel == one_pass


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), size=st.integers(0, 400), jobs=st.integers(2, 4))
def test_any_log_gives_the_one_pass_result(
    seed: int, size: int, jobs: int, tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Realistic logs with duplicates, bad and blank lines: whichever way it goes, the one-pass result."""
    monkeypatch.setattr(replay_module, "MIN_BYTES_PER_JOB", 1)
    path = _log(tmp_path_factory.mktemp("any"), oracle.generate_log(random.Random(seed), size))
    one_pass, _ = _replay(capsys, str(path), "--jobs", "1")
    parallel, _ = _replay(capsys, str(path), "--jobs", str(jobs))
    assert parallel == one_pass


def _fails() -> PartResult:
    raise RuntimeError("boom in a worker")


def _counts() -> PartResult:
    decoder = make_line_decoder("canonical")
    pipeline = replay_pipeline(load_price_table(PRICES), decoder)
    return PartResult(pipeline.aggregates, 0, pipeline.ledger.digests(), None, None, 0, {}, {})


def _part(ids: list[int], here: bool = False, hours: tuple[int, int] = (10, 12)) -> PartResult:
    held = set(ids) if here else array("q", ids)
    return PartResult(Aggregates(), 0, held, *hours, 0, {"tenant": set()}, {"tenant": 0})


def test_overlap_with_any_earlier_part_is_found() -> None:
    caps = {"tenant": 10}
    assert why_not_additive([_part([1, 2], here=True), _part([3, 4]), _part([5, 6])], 40, 100, caps) is None
    with_middle = [_part([1, 2], here=True), _part([3, 4]), _part([4, 5])]
    assert why_not_additive(with_middle, 40, 100, caps) == "part 3 counted request ids an earlier part holds"
    with_first = [_part([1, 2], here=True), _part([3, 4]), _part([2, 5])]
    assert why_not_additive(with_first, 40, 100, caps) == "part 3 counted request ids an earlier part holds"
    first_untouched = with_middle[0].ids
    assert first_untouched == {1, 2}  # the first part's own ledger set is never written
    assert why_not_additive([_part([1], here=True), _part([2])], 40, 1, caps) == \
        "more request ids than the dedupe ledger keeps"
    assert why_not_additive([_part([1], True, (0, 10)), _part([2], False, (900, 970))], 40, 100, caps) == \
        "the records span more than the dedupe window"


def test_a_failed_worker_is_reported_not_lost() -> None:
    failure = run_parts([_counts, _fails])
    assert isinstance(failure, str) and "boom in a worker" in failure
    results = run_parts([_counts, _counts, _counts])
    assert isinstance(results, list) and len(results) == 3


def test_small_inputs_and_stdin_take_one_pass(tmp_path: Path) -> None:
    path = _log(tmp_path, _unique_log(random.Random(3), 50))
    assert replay_module._parallel_jobs([str(path)], 0) == 1  # 16 MiB a part at least
    assert replay_module._parallel_jobs(["-"], 4) == 1
    assert replay_module._parallel_jobs([str(path)], 1) == 1
    assert replay_module._parallel_jobs([str(path), str(tmp_path / "missing")], 4) == 1


def test_jobs_follow_the_input_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _log(tmp_path, _unique_log(random.Random(4), 100))
    monkeypatch.setattr(replay_module, "MIN_BYTES_PER_JOB", path.stat().st_size // 3)
    assert replay_module._parallel_jobs([str(path)], 8) == 3  # never a part under the minimum
    assert replay_module._parallel_jobs([str(path)], 2) == 2


class _Trickle(io.RawIOBase):
    """A stream that returns at most ``step`` bytes a read, like a pipe."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.step, self.pos = data, step, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        n = self.step if size < 0 else min(size, self.step)
        chunk = self.data[self.pos : self.pos + n]
        self.pos += len(chunk)
        return chunk


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300).map(lambda b: b.replace(b"x", b"\n")), step=st.integers(1, 40),
       chunk=st.integers(1, 50), limit=st.one_of(st.none(), st.integers(0, 320)))
def test_blocks_hold_every_line_once_and_flag_nul_and_cr(
    data: bytes, step: int, chunk: int, limit: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay_module, "READ_CHUNK", chunk)
    visible = data if limit is None else data[:limit]
    expected = visible.split(b"\n")
    if expected[-1] == b"":  # a final newline ends the last line; it starts none
        expected.pop()
    got = []
    for lines, unusual in replay_module.read_blocks(_Trickle(data, step), limit):  # type: ignore[arg-type]
        assert lines
        assert unusual == any(b"\0" in line or b"\r" in line for line in lines)
        got.extend(lines)
    assert got == expected


@pytest.mark.parametrize("unique_ids", [True, False])
def test_litellm_payloads_in_parts_equal_one_pass(
    unique_ids: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], small_parts: None
) -> None:
    """Another format through the same split: LiteLLM's payloads, with fresh ids (added) or repeated (one pass)."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "litellm_payloads.jsonl"
    payloads = [json.loads(line) for line in fixture.read_text().splitlines() if line.strip()]
    lines = []
    for copy in range(60):
        for payload in payloads:
            if unique_ids:
                payload = {**payload, "id": f"{payload.get('id')}-{copy}", "litellm_call_id": f"call-{copy}"}
            lines.append(json.dumps(payload).encode() + b"\n")
    path = _log(tmp_path, lines)
    one_pass, _ = _replay(capsys, str(path), "--format", "litellm", "--jobs", "1")
    parallel, err = _replay(capsys, str(path), "--format", "litellm", "--jobs", "3")
    assert parallel == one_pass
    assert sum(m["requests"] for m in one_pass["months"].values()) > 0
    assert ("counting again in one pass" in err) == (not unique_ids)
