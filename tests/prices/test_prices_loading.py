"""exporter.prices.table: loading a table file (its digest, a file being written, unreadable bytes).

``load_price_table`` with ``settle_seconds`` refuses a file that changes between the read and a
moment later; ``sleep`` is passed in, so a test is the writer that changes it in that moment.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from exporter.prices.table import PriceTableChanging, PriceTableError, load_price_table, parse_price_table
from tests.support.prices import one_version, price_table


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    return path


def test_the_digest_is_the_files_bytes(tmp_path: Path) -> None:
    text = one_version("v1") + "# a comment\n"
    path = write(tmp_path, text)
    table = load_price_table(path)
    assert table.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert parse_price_table(text, "x.yaml").sha256 == hashlib.sha256(text.encode()).hexdigest()
    assert (table.path, [v.version for v in table.versions]) == (str(path), ["v1"])


def test_a_settled_file_loads(tmp_path: Path) -> None:
    path = write(tmp_path, price_table(("v1", "2026-01-01"), ("v2", "2026-02-01")))
    slept: list[float] = []
    table = load_price_table(path, settle_seconds=0.25, sleep=slept.append)
    assert slept == [0.25] and [v.version for v in table.versions] == ["v1", "v2"]
    assert load_price_table(path, sleep=slept.append).sha256 == table.sha256
    assert slept == [0.25]  # no settle time asked: no sleep


@pytest.mark.parametrize("change", ["append", "same_size", "replace"])
def test_a_file_changing_while_read_is_refused(tmp_path: Path, change: str) -> None:
    path = write(tmp_path, one_version("v1"))

    def writer(_seconds: float) -> None:
        if change == "append":
            path.write_text(one_version("v1") + "# more\n")
        elif change == "same_size":
            path.write_text(one_version("v2"))  # same length, new mtime
            os.utime(path, ns=(1, 1))
        else:
            other = tmp_path / "new.yaml"
            other.write_text(one_version("v1"))
            other.replace(path)  # another inode

    with pytest.raises(PriceTableChanging) as error:
        load_price_table(path, settle_seconds=0.01, sleep=writer)
    assert str(path) in str(error.value) and "changed while being read" in str(error.value)


def test_without_settle_time_a_changing_file_is_not_checked(tmp_path: Path) -> None:
    path = write(tmp_path, one_version("v1"))
    assert load_price_table(path, settle_seconds=0.0, sleep=lambda _s: path.write_text("junk")).versions


def test_unreadable_and_non_utf8_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(PriceTableError, match="cannot read price table"):
        load_price_table(tmp_path / "missing.yaml")
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(one_version("v1").encode() + b"# caf\xe9\n")
    with pytest.raises(PriceTableError, match="price table is not UTF-8"):
        load_price_table(bad)


def test_rates_of_zero_are_accepted_and_a_number_error_is_exact(tmp_path: Path) -> None:
    text = one_version("v1").replace("output: 10.0", "output: 0\n        cache_read: 0.0")
    rates = parse_price_table(text, "z.yaml").lookup("gpt-4o", 1_790_000_000.0)
    assert not isinstance(rates, str) and (rates.output, rates.cache_read) == (0.0, 0.0)
    with pytest.raises(PriceTableError) as error:
        parse_price_table(one_version("v1").replace("output: 10.0", "output: ten"), "z.yaml")
    assert str(error.value).endswith("versions[0].models.gpt-4o.output: expected a number, got 'ten'")
    with pytest.raises(PriceTableError) as error:
        parse_price_table(one_version("v1").replace("output: 10.0", "output: 1e-6"), "z.yaml")
    assert str(error.value).endswith(
        "expected a number, got '1e-6' (YAML 1.1 reads exponents without a dot as strings: write 1.0e-6)")


def test_a_table_from_a_pipe_loads_without_settle_time(tmp_path: Path) -> None:
    # `--prices <(curl …)`: a pipe's size is 0 whatever it carries, so the settle check (which
    # compares sizes) must not run when no settle time is asked
    pipe = tmp_path / "prices.fifo"
    os.mkfifo(pipe)
    text = one_version("v1")
    writer = threading.Thread(target=pipe.write_text, args=(text,))
    writer.start()
    try:
        table = load_price_table(pipe)
    finally:
        writer.join(timeout=10)
    assert [v.version for v in table.versions] == ["v1"]
    assert table.sha256 == hashlib.sha256(text.encode()).hexdigest()
