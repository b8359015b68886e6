"""The plain canonical line, decoded once and counted in one loop: replay's per-record path.

Nearly every line of a canonical log is *plain*: a ``YYYY-MM-DDTHH:MM:SSZ``
timestamp (a new minute is parsed once, by the reference, into fastparse's
cache), a non-empty string id, savings counts
given both or neither, a usage block of a known shape, and none of the rare
keys (text to count, components, a response-cache hit, a router's requested
model, a service tier, an optimizer's own call). Such a line is counted here
straight from the typed decode, with the pipeline's caches bound to locals
once per batch: no ``Record``, no call per line into ``fast_parse``,
``fast_ts`` or ``count_record``.

Anything else - and any plain line that would not be an ordinary count (a
future or expired timestamp, an implausible count; a prompt-tier route is
counted here) - goes, with the decode already done, through ``fastparse.fast_record`` and
``Pipeline.count_record``, and from there to the reference parser, exactly as
before. What this loop counts is what ``count_record`` would count for the
same fields, step for step and in the same order (so even the aggregates'
dict order is the same); ``tests/engine/test_plainpath.py`` holds the two
equal over generated lines. Change one, change the other.

When the C extension is built (``_plain.c``) the same loop runs in C and
``ingest_python`` is its fallback, line by line, and its reference
(``tests/engine/test_plain_c.py``): change one, change the other there too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from exporter.engine import fastparse
from exporter.engine.aggregate import (
    CACHE_READ,
    FRESH,
    OUTPUT,
    REQUESTS,
    SAVED,
    WOULD_SAVE,
    WRITE_1H,
    WRITE_5M,
)
from exporter.engine.cells import BASE_COMPACTED, BASE_UNTOUCHED, SENT_UNTOUCHED
from exporter.engine.fastparse import (
    _DECODER,
    _SIXTY,
    _minute_start,
    _minute_starts,
    _Unusual,
    fast_record,
    fast_usage,
)
from exporter.engine.records import MAX_EPOCH_SECONDS, Rejection, parse_line_reference, parse_ts

if TYPE_CHECKING:
    from exporter.engine.pipeline import Pipeline

_DECODE_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, RecursionError)
# msgspec (the fast path) raises RecursionError on ~50k nested objects (orjson's limit is 1024);
# found by tests/e2e/test_hostile_corpus.py
NESTS_TOO_DEEPLY = Rejection("invalid_json", "line nests too deeply")
SLOT_SECONDS = 900  # the pipeline's slot of (month, price version)
# the rare keys of the typed decode as a plain line has them (text_before, text_after, messages_before,
# messages_after, source_flags: absent; response_cache, optimizer, requested_model, service_tier, components: null)
NO_RARE_KEY = (UNSET, UNSET, UNSET, UNSET, UNSET, None, None, None, None, None)
TIERED, UNKNOWN_TIER = 1, 2  # the pipeline's route flags (Route's last item)

try:  # the loop in C (_plain.c), built when the install had a C compiler
    from exporter.engine import _plain as _native
except ImportError:  # pragma: no cover - exercised by installs without a compiler
    _native = None  # type: ignore[assignment]
# Whether ingest_canonical runs the C loop; the Python loop below counts the same, line for line.
NATIVE = _native is not None
LOOP = "c" if NATIVE else "python"  # named in the sidecar's start-up line for each canonical source


def ingest_canonical(pipeline: Pipeline, lines: Iterable[bytes]) -> None:
    """Count canonical ``lines`` (no newline; blank ones are no record) into ``pipeline``.

    The C loop counts the plain lines and hands every other line, whole, to ``ingest_python``."""
    if NATIVE:
        _native.count(pipeline, lines, 0, None, _prepared(pipeline))
    else:
        ingest_python(pipeline, lines)


def _prepared(pipeline: Pipeline) -> Any:
    """The pipeline's routes made good for its aggregates (as count_record does, once per batch), and the
    C loop's route cache it keeps across calls."""
    agg = pipeline._aggregates  # adds only: the C loop's sums on its routes need not be written first
    if agg.cells is not pipeline._routes_cells:
        pipeline._clear_routes(agg)
    cache = pipeline._plain_routes
    if cache is None:
        cache = pipeline._plain_routes = _native.RouteCache()
    return cache


def ingest_watched(pipeline: Pipeline, lines: list[bytes], first: int, watch: Any) -> None:
    """``lines[first:]`` as ``ingest_canonical`` counts them, noting for the sidecar's log which lines are
    rejected (``watch.rejected``: index and reason) and which one raised (``watch.at``): what
    ``watch.follow`` notes when its lines go through the Python loop one at a time."""
    if NATIVE:
        _native.count(pipeline, lines, first, watch, _prepared(pipeline))
    else:
        ingest_python(pipeline, watch.follow(lines, first, pipeline))


def ingest_python(pipeline: Pipeline, lines: Iterable[bytes]) -> None:
    """The plain line's loop in Python: the C loop's twin and its fallback, line by line."""
    agg = pipeline._aggregates  # adds only: the C loop's sums on its routes need not be written first
    if agg.cells is not pipeline._routes_cells:  # as count_record does, once per batch
        pipeline._clear_routes(agg)
    decode = _DECODER.decode
    count_record, counter, consume = pipeline.count_record, pipeline.counter, pipeline._consume
    minutes, sixty, max_seconds = _minute_starts, _SIXTY, MAX_EPOCH_SECONDS
    seen_before, slots, make_slot = pipeline.ledger.seen_before, pipeline._slots, pipeline._slot
    make_route, tiered = pipeline._route, pipeline._tiered
    cap, oldest_month = pipeline.max_request_tokens, pipeline.oldest_month
    duplicates, unpriced_counts, by_component = agg.duplicates, agg.unpriced, agg.components
    divergence, flagged = agg.divergence, agg.flagged
    # rebound after each line that takes the general path (count_record may move or clear them)
    # the timestamp limit: the clock's (plus skew: the future) or MAX_EPOCH_SECONDS, whichever is lower
    ts_limit, routes = min(pipeline._future_limit, max_seconds), pipeline._routes
    slot_start = slot_end = 0.0  # [start, end) of the last slot that was remembered, and its month/version
    last_minute, last_start = "-", None  # the last valid minute's "YYYY-MM-DDTHH:MM:" and its epoch start
    slot_month, slot_version = "", 0
    raw: Any  # the typed decode (fastparse._Line); its fields are as checked below
    for line in lines:
        try:
            raw = decode(line)
        except _DECODE_ERRORS:
            raw = None
        else:
            text = raw.ts
            # none of the rare keys: one tuple compared item by item in C, by identity first (an empty
            # service tier or component list is not plain here: the general path counts it the same)
            if ((raw.text_before, raw.text_after, raw.messages_before, raw.messages_after, raw.source_flags,
                 raw.response_cache, raw.optimizer, raw.requested_model, raw.service_tier,
                 raw.components) == NO_RARE_KEY
                    and type(text) is str and len(text) == 20 and text[19] == "Z" and line.isascii()):
                if text.startswith(last_minute):  # most lines: the last line's minute (no slice, no hash)
                    start = last_start
                else:
                    start = minutes.get(text[:17])
                    if start is None:  # a new minute: the reference parser's, cached (as fast_ts finds it)
                        start = _minute_start(text[:17], parse_ts)
                    if start is not None:
                        last_minute, last_start = text[:17], start
                second = sixty.get(text[17:19])
                request_id, provider, tenant = raw.request_id, raw.provider, raw.tenant
                before, after, would_save = raw.tokens_before, raw.tokens_after, raw.would_have_saved
                if (start is not None and second is not None and type(request_id) is str and request_id
                        and (provider is None or (type(provider) is str and provider))
                        and (tenant is None or (type(tenant) is str and tenant))
                        and (before is None) is (after is None)):
                    ts = float(start + second)
                    u = raw.usage
                    try:
                        usage = fast_usage(u) if u is not None else None
                    except _Unusual:
                        usage = None  # with u set: not plain, the general path finds the rejection
                    if usage is not None:  # its tiers read once (a struct's attribute is a lookup)
                        fresh, read, write_5m, write_1h = (usage.fresh_input, usage.cache_read,
                                                           usage.cache_write_5m, usage.cache_write_1h)
                        output, prompt = usage.output, fresh + read + write_5m + write_1h
                    else:
                        output = prompt = 0
                    if (u is None or usage is not None) and ts <= ts_limit:
                        if slot_start <= ts < slot_end:
                            month, version = slot_month, slot_version
                        else:
                            index = ts // SLOT_SECONDS
                            slot = slots.get(index)
                            if slot is None:
                                slot = make_slot(ts)
                            month, version = slot
                            if index in slots:  # remembered: no price version starts inside
                                slot_start, slot_end = index * SLOT_SECONDS, (index + 1) * SLOT_SECONDS
                                slot_month, slot_version = month, version
                        if ((oldest_month is None or month >= oldest_month)
                                and output <= cap and prompt <= cap
                                and (before is None or (before <= cap and after <= cap))
                                and (would_save is None or would_save <= cap)):
                            if seen_before(request_id, ts):
                                duplicates[month] = duplicates.get(month, 0) + 1
                                continue
                            if ts > agg.newest_ts:
                                agg.newest_ts = ts
                            model, method = raw.model, raw.count_method
                            has_savings = before is not None
                            key = (month, version, model, provider, tenant, method,
                                   has_savings or would_save is not None, None)
                            route = routes.get(key)
                            if route is None:
                                route = make_route(key, ts)
                            if route[6]:
                                if route[6] & UNKNOWN_TIER:
                                    flagged[(month, "unknown_service_tier")] = flagged.get(
                                        (month, "unknown_service_tier"), 0) + 1
                                if route[6] & TIERED:
                                    route = tiered(key, ts, usage, before - after if has_savings and before > after
                                                   else 0, would_save or 0)
                            cell, _cell_key, unpriced, unattributed, compacted, untouched, _ = route
                            if unpriced is not None:
                                unpriced_counts[unpriced] = unpriced_counts.get(unpriced, 0) + 1
                            cell[REQUESTS] += 1
                            if usage is not None:
                                cell[FRESH] += fresh
                                if read:  # cache tiers are often 0: a test is cheaper than adding it
                                    cell[CACHE_READ] += read
                                if write_5m:
                                    cell[WRITE_5M] += write_5m
                                if write_1h:
                                    cell[WRITE_1H] += write_1h
                                cell[OUTPUT] += output
                            if would_save is not None:
                                cell[WOULD_SAVE] += would_save
                            if has_savings:
                                if before > after:
                                    saved = before - after
                                    cell[SAVED] += saved
                                    cell[BASE_COMPACTED] += before
                                else:
                                    saved = 0
                                    cell[BASE_UNTOUCHED] += before
                                    cell[SENT_UNTOUCHED] += after
                                by_component[unattributed] = by_component.get(unattributed, 0) + saved
                                if usage is not None and method != "provider":
                                    div_key = compacted if saved else untouched
                                    pair = divergence.get(div_key)
                                    if pair is None:
                                        pair = divergence[div_key] = [0, 0]
                                    pair[0] += after
                                    pair[1] += prompt
                            continue
        # the general path: the fast parse of the decoded line (into count_record), else the reference
        try:
            if raw is None or fast_record(raw, line, count_record, parse_ts, max_seconds) is None:
                result = parse_line_reference(line, counter)
                if result is not None:
                    consume(result)
        except RecursionError:
            consume(NESTS_TOO_DEEPLY)
        ts_limit, routes = min(pipeline._future_limit, max_seconds), pipeline._routes


def _new_minute(prefix: str) -> int | None:
    """A minute the cache has not seen, for the C loop: as the Python loop finds it."""
    return _minute_start(prefix, parse_ts)


def setup_c(fallback: Callable[[Pipeline, Iterable[bytes]], None]) -> None:
    """Give the C loop its pieces; ``fallback`` takes each line it does not count (``ingest_python``; the
    tests pass one that counts them)."""
    _native.setup(fastparse._Line, fastparse._Usage, fastparse._Details, fastparse._CacheCreation, UNSET,
                  _DECODER.decode, _DECODE_ERRORS, _minute_starts, _new_minute, fallback, float(MAX_EPOCH_SECONDS))


if _native is not None:
    setup_c(ingest_python)
