"""exporter.engine.records: record v1 traps (zones, epochs, types, NaN, bytes) and bounded rejections."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from exporter.engine.pipeline import Pipeline
from exporter.engine.records import (
    REJECTION_REASONS,
    Record,
    Rejection,
    parse_line,
    parse_object,
    parse_ts,
)
from exporter.prices.table import load_price_table

PRICES = Path(__file__).resolve().parents[1] / "fixtures" / "engine" / "prices_two_versions.yaml"


def line(**fields: Any) -> bytes:
    return json.dumps(
        {"ts": "2026-11-10T12:00:00Z", "model": "alpha", "request_id": "r1", **fields}
    ).encode()


def record(raw: bytes) -> Record:
    found = parse_line(raw)
    assert isinstance(found, Record), found
    return found


def rejection(raw: bytes) -> Rejection:
    found = parse_line(raw)
    assert isinstance(found, Rejection), found
    assert found.reason in REJECTION_REASONS
    return found


def pipeline(timezone: str = "UTC") -> Pipeline:
    return Pipeline(load_price_table(PRICES), timezone=timezone)


def months(p: Pipeline) -> dict[str, dict[str, Any]]:
    return p.aggregates.month_totals()


# --- timestamps -------------------------------------------------------------------------------


def test_offset_moves_a_record_into_the_next_month() -> None:
    # 2026-10-31T23:30-02:00 is 2026-11-01T01:30Z: a November record (and November's prices)
    p = pipeline()
    p.ingest_line(
        line(ts="2026-10-31T23:30:00-02:00", usage={"prompt_tokens": 10, "completion_tokens": 0})
    )
    assert list(months(p)) == ["2026-11"]
    assert months(p)["2026-11"]["spend_usd"] == pytest.approx(10 * 2.5 / 1e6, rel=1e-12)


def test_offset_moves_a_record_into_the_previous_month() -> None:
    p = pipeline()
    p.ingest_line(line(ts="2026-11-01T00:30:00+01:00"))  # 2026-10-31T23:30Z
    assert list(months(p)) == ["2026-10"]


def test_timezone_option_moves_a_utc_record() -> None:
    raw = line(ts="2026-11-01T03:00:00Z")
    utc, ny = pipeline(), pipeline("America/New_York")
    utc.ingest_line(raw)
    ny.ingest_line(raw)
    assert list(months(utc)) == ["2026-11"]
    assert list(months(ny)) == ["2026-10"]  # 23:00 on Oct 31 in New York
    # the month changes, the price version does not: it is chosen by the instant
    assert months(ny)["2026-10"]["requests"] == 1


def test_naive_timestamp_is_utc() -> None:
    assert (
        record(line(ts="2026-11-01T00:00:00")).ts == datetime(2026, 11, 1, tzinfo=UTC).timestamp()
    )


def test_epoch_seconds_and_milliseconds_are_the_same_instant() -> None:
    seconds = datetime(2026, 11, 10, 12, tzinfo=UTC).timestamp()
    by_s = record(line(ts=int(seconds)))
    by_ms = record(line(ts=int(seconds * 1000)))
    by_float = record(line(ts=seconds + 0.25))
    assert by_s.ts == by_ms.ts == seconds
    assert by_float.ts == seconds + 0.25


def test_epoch_threshold_is_1e11() -> None:
    assert record(line(ts=99_999_999_999)).ts == 99_999_999_999.0  # seconds (year 5138)
    assert record(line(ts=100_000_000_001)).ts == pytest.approx(
        100_000_000.001
    )  # milliseconds (1973)


@pytest.mark.parametrize(
    "ts",
    [True, False, -1, "yesterday", "", "2026-13-01T00:00:00Z", 1e308, [2026], {"s": 1}, "9" * 100],
)
def test_bad_timestamps(ts: Any) -> None:
    found = rejection(line(ts=ts))
    assert found.reason == "invalid_ts"
    assert found.ts is None


def test_missing_ts_and_null_ts() -> None:
    assert rejection(b'{"model": "alpha"}').reason == "missing_ts"
    assert rejection(b'{"ts": null, "model": "alpha"}').reason == "missing_ts"


@pytest.mark.parametrize(
    ("ts", "timezone"),
    [
        ("0001-01-01T00:00:00+01:00", "UTC"),
        ("9999-12-31T23:59:59-01:00", "UTC"),
        ("9999-12-31T20:00:00Z", "Pacific/Kiritimati"),
        ("0001-01-01T05:00:00Z", "America/New_York"),
    ],
)
def test_timestamps_at_the_edge_of_datetime_never_crash_the_pipeline(
    ts: str, timezone: str
) -> None:
    """A crafted line must be rejected, not raise out of the ingest loop (found by this suite)."""
    p = pipeline(timezone)
    p.ingest_line(line(ts=ts))
    totals = months(p)
    assert sum(m["requests"] + m["rejected"] for m in totals.values()) == 1


# --- counts and fields ------------------------------------------------------------------------


@pytest.mark.parametrize("value", [True, False])
def test_bool_where_an_int_belongs(value: bool) -> None:
    assert rejection(line(tokens_before=value, tokens_after=1)).reason == "invalid_count"
    assert rejection(line(usage={"prompt_tokens": value})).reason == "invalid_count"


@pytest.mark.parametrize("value", [5.0, 5.5, 1e308, -0.0])
def test_floats_for_counts(value: float) -> None:
    assert rejection(line(tokens_before=100, tokens_after=value)).reason == "invalid_count"
    assert rejection(line(would_have_saved=value)).reason == "invalid_count"


def test_negative_and_huge_counts() -> None:
    assert rejection(line(tokens_before=-1, tokens_after=0)).reason == "invalid_count"
    assert rejection(line(tokens_before=2**53, tokens_after=0)).reason == "invalid_count"
    assert record(line(tokens_before=2**53 - 1, tokens_after=0)).tokens_before == 2**53 - 1


@pytest.mark.parametrize(
    "raw",
    [
        b'{"ts": 1793491200, "model": "alpha", "tokens_before": NaN}',
        b'{"ts": 1793491200, "model": "alpha", "tokens_before": Infinity}',
        b'{"ts": 1793491200, "model": "alpha", "tokens_before": -Infinity}',
        b'{"ts": NaN, "model": "alpha"}',
    ],
)
def test_nan_and_infinity_are_not_json(raw: bytes) -> None:
    assert rejection(raw).reason == "invalid_json"


@pytest.mark.parametrize("number", [b"1e308", b"1e400"])  # 1e400 is JSON too (beyond a double: read as inf)
def test_a_huge_number_is_an_invalid_count(number: bytes) -> None:
    assert (
        rejection(
            b'{"ts": 1793491200, "model": "alpha", "tokens_before": ' + number + b', "tokens_after": 1}'
        ).reason
        == "invalid_count"
    )


def test_model_rules() -> None:
    assert rejection(b'{"ts": 1793491200}').reason == "missing_model"
    assert rejection(b'{"ts": 1793491200, "model": ""}').reason == "missing_model"
    assert rejection(b'{"ts": 1793491200, "model": 7}').reason == "invalid_field"


@pytest.mark.parametrize(("model", "reason"), [
    ("", "invalid_field"),  # present but empty: a label value of nothing
    (7, "invalid_field"),  # truthy, but not a string
    (None, "invalid_field"),  # missing
])
def test_optimizer_model_must_be_a_non_empty_string(model: Any, reason: str) -> None:
    block = {"model": model, "usage": {"prompt_tokens": 10}}
    found = rejection(line(optimizer=block))
    assert (found.reason, found.detail) == (reason, "optimizer.model is missing or not a string")
    assert isinstance(parse_line(line(optimizer={**block, "model": "gamma"})), Record)


@pytest.mark.parametrize("key", ["request_id", "provider", "tenant"])
def test_label_fields_accept_strings_and_ints_only(key: str) -> None:
    assert rejection(line(**{key: 1.5})).reason == "invalid_field"
    assert rejection(line(**{key: True})).reason == "invalid_field"
    assert rejection(line(**{key: ["x"]})).reason == "invalid_field"
    assert isinstance(parse_line(line(**{key: 12345})), Record)


def test_integer_request_id_dedupes_with_its_string_form() -> None:
    p = pipeline()
    p.ingest_line(line(request_id=42))
    p.ingest_line(line(request_id="42"))
    assert months(p)["2026-11"]["duplicates"] == 1


def test_components_traps() -> None:
    assert rejection(line(components={"a": 1})).reason == "invalid_components"
    assert (
        rejection(line(components=[{"name": "", "tokens_saved": 1}])).reason == "invalid_components"
    )
    assert (
        rejection(line(components=[{"name": "x", "tokens_saved": 1.0}])).reason
        == "invalid_components"
    )
    assert rejection(line(components=[{"name": "x"}])).reason == "invalid_components"
    assert rejection(line(components=["x"])).reason == "invalid_components"


def test_flags() -> None:
    assert "no_id" in record(b'{"ts": 1793491200, "model": "alpha"}').flags
    assert "no_id" in record(b'{"ts": 1793491200, "model": "alpha", "request_id": ""}').flags
    assert "incomplete_savings" in record(line(tokens_before=5)).flags
    found = record(line(usage={"weird": 1}))
    assert found.usage is None and "unknown_usage_shape" in found.flags


def test_unknown_keys_are_ignored() -> None:
    assert isinstance(parse_line(line(something_new={"deep": [1, 2]})), Record)


# --- bytes ------------------------------------------------------------------------------------


def test_invalid_utf8() -> None:
    raw = b'{"ts": 1793491200, "model": "alpha\xff\xfe"}'
    found = rejection(raw)
    assert found.reason == "invalid_utf8"


def test_lone_surrogate_escape_is_invalid_json() -> None:
    assert rejection(b'{"ts": 1793491200, "model": "\\ud800"}').reason == "invalid_json"


def test_bom_and_crlf() -> None:
    assert isinstance(parse_line(b"\xef\xbb\xbf" + line() + b"\r\n"), Record)
    assert parse_line(b"\r\n") is None
    assert parse_line(b"\xef\xbb\xbf\n") is None
    assert parse_line(b"   \t\n") is None


@pytest.mark.parametrize("raw", [b"[1, 2]", b'"text"', b"3", b"null", b"true"])
def test_not_an_object(raw: bytes) -> None:
    assert rejection(raw).reason == "not_object"


@pytest.mark.parametrize("raw", [b"{", b'{"ts": 1}{"ts": 2}', b"ts=1 model=x", b"\x00"])
def test_not_json(raw: bytes) -> None:
    found = rejection(raw)
    assert found.reason == "invalid_json"
    assert found.ts is None


# --- rejections are counted in their month, or "unknown" --------------------------------------


def test_every_rejection_is_counted_in_its_month_or_unknown() -> None:
    p = pipeline()
    p.ingest_line(b"not json")
    p.ingest_line(b'{"ts": "garbage", "model": "alpha"}')
    p.ingest_line(line(ts="2026-10-20T00:00:00Z", tokens_before=1.5, tokens_after=1))
    p.ingest_line(
        line(
            ts="2026-11-20T00:00:00Z",
            usage={"prompt_tokens": 1, "prompt_tokens_details": {"cached_tokens": 2}},
        )
    )
    p.ingest_line(line(ts="2026-11-21T00:00:00Z", model=None))
    totals = months(p)
    assert totals["unknown"]["rejected"] == 2
    assert totals["2026-10"]["rejected"] == 1
    assert totals["2026-11"]["rejected"] == 2
    assert all(m["requests"] == 0 for m in totals.values())
    reasons = {reason for (_, reason) in p.aggregates.rejected}
    assert reasons == {
        "invalid_json",
        "invalid_ts",
        "invalid_count",
        "inconsistent_usage",
        "missing_model",
    }
    assert reasons <= set(REJECTION_REASONS)


def test_details_name_fields_not_values() -> None:
    secret = "hunter2-secret-prompt"
    for raw in (
        line(ts=secret),
        line(tokens_before=secret, tokens_after=1),
        line(model=[secret]),
        line(tenant={"x": secret}),
        line(usage={"prompt_tokens": secret}),
        line(components=[{"name": secret, "tokens_saved": secret}]),
        (secret + "{").encode(),
    ):
        found = parse_line(raw)
        assert isinstance(found, Rejection)
        assert secret not in found.detail


# --- big numbers from decoded objects (OTLP hands dicts, not bytes) ---------------------------


@pytest.mark.parametrize(
    "obj",
    [
        {"ts": 10**400, "model": "m"},
        {"ts": 1793491200, "model": "m", "tokens_before": 10**5000, "tokens_after": 1},
        {"ts": 1793491200, "model": "m", "request_id": 10**5000},
        {"ts": -(10**400), "model": "m"},
        {"ts": 1793491200, "model": "m", "usage": {"prompt_tokens": -(10**5000)}},
    ],
    ids=[
        "ts-10e400",
        "count-5000-digits",
        "id-5000-digits",
        "ts-negative-huge",
        "usage-huge-negative",
    ],
)
def test_parse_object_never_raises_on_huge_ints(obj: dict[str, Any]) -> None:
    found = parse_object(obj)
    assert isinstance(found, Rejection)
    assert found.reason in REJECTION_REASONS
    assert len(found.detail) < 200


def test_parse_ts_direct() -> None:
    assert (
        parse_ts("2026-11-01T00:00:00Z")
        == parse_ts("2026-11-01T01:00:00+01:00")
        == parse_ts(1793491200)
    )


@pytest.mark.parametrize("ts", [1e15, -1e13, float("nan"), float("inf"), -1.0])
def test_a_source_rejection_with_an_impossible_ts_counts_under_unknown(ts: float) -> None:
    p = pipeline("Pacific/Kiritimati")
    p.reject("invalid_otlp", "otlp", ts)
    assert p.aggregates.rejected == {("unknown", "invalid_otlp"): 1}
