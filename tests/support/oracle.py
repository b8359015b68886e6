"""An independent, deliberately simple implementation of docs/record-format.md and docs/prices.md, for the tests.

It is written from the spec, record by record, with float dollars summed as
it goes, and shares no code with ``exporter``: it reads the price table with
plain ``yaml.safe_load``, decodes lines with the stdlib ``json`` module and
normalises usage blocks with its own table of shapes. When it and the engine
(integer sums per cell, dollars derived on read) agree on random logs, both
are probably right; when they disagree, one of them misread the spec.

Choices the spec leaves open follow the ones written down at the top of
``exporter/engine/records.py`` (naive timestamps are UTC, ids may be integers,
unknown usage shapes count without usage, blank lines are skipped).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import yaml

MAX_COUNT = 2**53 - 1
MS_THRESHOLD = 1e11
LAST_SECOND = datetime(
    9999, 12, 30, tzinfo=UTC
).timestamp()  # a day short: every zone has its month

MONTH_KEYS_INT = (
    "requests",
    "response_cache_hits",
    "response_cache_unpriced_hits",
    "routed_requests",
    "routing_unpriced_requests",
    "duplicates",
    "rejected",
    "unpriced",
    "tokens_saved",
    "would_have_saved_tokens",
    "fresh_input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "baseline_input_tokens",
    "sent_input_tokens",
    "optimizer_requests",
    "optimizer_unpriced",
)
MONTH_KEYS_FLOAT = (
    "usd_saved",
    "would_have_saved_usd",
    "spend_usd",
    "cache_savings_usd",
    "cache_hit_rate",
    "optimizer_spend_usd",
    "net_usd_saved",
    "response_cache_avoided_usd",
    "routing_savings_usd",
    "routing_extra_cost_usd",
    "routing_net_usd",
)
# ratios (null when there is nothing to divide by) and breakdowns (objects): compare with ``same``
MONTH_KEYS_OTHER = ("saved_pct", "compression_ratio", "populations", "tokens_saved_by_component",
                    "usd_saved_by_component")
POPULATIONS = ("compacted", "untouched")


class Reject(Exception):
    def __init__(self, reason: str, ts: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.ts = ts


# --- price table ---------------------------------------------------------------


@dataclass
class Rates:
    input: float
    output: float
    cache_read: float
    w5: float
    w1h: float
    factors: dict[str, float]


@dataclass
class Version:
    start: float
    models: dict[str, Rates]
    aliases: dict[str, str]


def _instant(value: Any) -> float:
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()
    moment = datetime.fromisoformat(str(value))
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def load_prices(path: str | Path) -> list[Version]:
    """Versions of a v1 table, oldest first; per-token rates (USD per million / 1e6)."""
    doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    versions: list[Version] = []
    for raw in doc["versions"]:
        families = raw.get("families") or {}
        models: dict[str, Rates] = {}
        aliases: dict[str, str] = {}
        for name, entry in raw["models"].items():
            family = families.get(entry.get("family") or "", None) or {}
            per = 1e6
            base = float(entry["input"])
            m5 = family.get("cache_write_5m_multiplier")
            m1 = family.get("cache_write_1h_multiplier")
            w5 = entry.get("cache_write_5m", base * m5 if m5 is not None else base)
            w1h = entry.get("cache_write_1h", base * m1 if m1 is not None else base)
            models[name] = Rates(
                input=base / per,
                output=float(entry["output"]) / per,
                cache_read=float(entry.get("cache_read", base)) / per,
                w5=float(w5) / per,
                w1h=float(w1h) / per,
                factors={
                    str(k): float(v) for k, v in (family.get("billed_token_factor") or {}).items()
                },
            )
            for alias in entry.get("aliases") or []:
                aliases[alias] = name
        versions.append(Version(_instant(raw["effective_from"]), models, aliases))
    versions.sort(key=lambda v: v.start)
    return versions


def _bill(usage: tuple[int, int, int, int, int], r: Rates) -> float:
    fresh, read, w5, w1h, out = usage
    return fresh * r.input + read * r.cache_read + w5 * r.w5 + w1h * r.w1h + out * r.output


def rates_for(versions: list[Version], model: str, provider: str | None, ts: float) -> Rates | None:
    """The latest version not after ``ts``; the model by name, alias, or provider/name."""
    chosen = None
    for version in versions:
        if version.start <= ts:
            chosen = version
    if chosen is None:
        return None
    for name in (model, f"{provider}/{model}" if provider else None):
        if name is None:
            continue
        if name in chosen.models:
            return chosen.models[name]
        if name in chosen.aliases:
            return chosen.models[chosen.aliases[name]]
    return None


# --- records -----------------------------------------------------------------------


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise Reject("invalid_count")
    return value


def _opt_count(obj: dict[str, Any], key: str) -> int | None:
    return None if obj.get(key) is None else _count(obj[key])


def _ts(value: Any) -> float:
    if isinstance(value, bool):
        raise Reject("invalid_ts")
    if isinstance(value, int | float):
        seconds = float(value)
        if math.isnan(seconds) or seconds < 0:
            raise Reject("invalid_ts")
        if seconds > MS_THRESHOLD:
            seconds = seconds / 1000
        if seconds > LAST_SECOND:
            raise Reject("invalid_ts")
        return seconds
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            raise Reject("invalid_ts") from None
        seconds = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
        if not 0 <= seconds <= LAST_SECOND:
            raise Reject("invalid_ts")
        return seconds
    raise Reject("invalid_ts")


def _label(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise Reject("invalid_field")


def tiers(u: Any) -> tuple[int, int, int, int, int] | None:
    """(fresh, cache_read, w5, w1h, output) of a usage block, by the table of docs/record-format.md."""
    if not isinstance(u, dict):
        raise Reject("invalid_usage")

    def g(block: dict[str, Any], key: str) -> int:
        return 0 if block.get(key) is None else _count(block[key])

    def sub(key: str) -> dict[str, Any]:
        value = u.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise Reject("invalid_usage")
        return value

    if "prompt_tokens" in u or "prompt_cache_hit_tokens" in u:
        prompt, details = g(u, "prompt_tokens"), sub("prompt_tokens_details")
        cached = g(details, "cached_tokens")
        written = g(details, "cache_write_tokens") or g(details, "cache_creation_tokens")
        if "prompt_cache_hit_tokens" in u:
            hit = g(u, "prompt_cache_hit_tokens")
            if cached and cached != hit:
                raise Reject("inconsistent_usage")
            cached = hit
            if "prompt_cache_miss_tokens" in u and hit + g(u, "prompt_cache_miss_tokens") != prompt:
                raise Reject("inconsistent_usage")
        if cached + written > prompt:
            raise Reject("inconsistent_usage")
        return prompt - cached - written, cached, written, 0, g(u, "completion_tokens")
    if "promptTokenCount" in u or "candidatesTokenCount" in u:
        prompt, cached = g(u, "promptTokenCount"), g(u, "cachedContentTokenCount")
        if cached > prompt:
            raise Reject("inconsistent_usage")
        return (
            prompt - cached,
            cached,
            0,
            0,
            g(u, "candidatesTokenCount") + g(u, "thoughtsTokenCount"),
        )
    if "inputTokens" in u or "outputTokens" in u:
        return (
            g(u, "inputTokens"),
            g(u, "cacheReadInputTokens"),
            g(u, "cacheWriteInputTokens"),
            0,
            g(u, "outputTokens"),
        )
    if "input_tokens_details" in u or "output_tokens_details" in u:
        total, cached = g(u, "input_tokens"), g(sub("input_tokens_details"), "cached_tokens")
        if cached > total:
            raise Reject("inconsistent_usage")
        return total - cached, cached, 0, 0, g(u, "output_tokens")
    if any(
        k in u
        for k in (
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
            "cache_creation",
            "input_tokens",
            "output_tokens",
        )
    ):
        creation, split = g(u, "cache_creation_input_tokens"), sub("cache_creation")
        if "ephemeral_5m_input_tokens" in split or "ephemeral_1h_input_tokens" in split:
            w5, w1h = g(split, "ephemeral_5m_input_tokens"), g(split, "ephemeral_1h_input_tokens")
            if u.get("cache_creation_input_tokens") is not None and w5 + w1h != creation:
                raise Reject("inconsistent_usage")
        else:
            w5, w1h = creation, 0
        return g(u, "input_tokens"), g(u, "cache_read_input_tokens"), w5, w1h, g(u, "output_tokens")
    return None


@dataclass
class Rec:
    ts: float
    request_id: str | None
    model: str
    provider: str | None
    before: int | None
    after: int | None
    method: str | None
    would: int | None
    usage: tuple[int, int, int, int, int] | None
    components: list[tuple[str, int]] = field(default_factory=list)
    optimizer: tuple[str, str | None, tuple[int, int, int, int, int] | None] | None = None
    hit: bool = False  # a response-cache hit: no provider call (docs/record-format.md)
    requested: str | None = None  # requested_model: the model the client asked for


def _hit(obj: dict[str, Any]) -> bool:
    """``response_cache`` (one of three kinds), or the older ``response_cache_hit`` source flag."""
    kind = obj.get("response_cache")
    if kind is not None and kind not in ("exact", "semantic", "unspecified"):
        raise Reject("invalid_response_cache")
    flags = obj.get("source_flags")
    if obj.get("requested_model") not in (None, "") and not isinstance(obj.get("requested_model"), str):
        raise Reject("invalid_field")
    return kind is not None or (isinstance(flags, list) and "response_cache_hit" in flags)


def _optimizer(block: Any) -> tuple[str, str | None, tuple[int, int, int, int, int] | None] | None:
    """The optimizer extension (docs/record-format.md, "Optimizer spend"): model, provider, tiers."""
    if block is None:
        return None
    if not isinstance(block, dict):
        raise Reject("invalid_field")
    model = block.get("model")
    if not isinstance(model, str) or not model:
        raise Reject("invalid_field")
    provider = _label(block, "provider")
    if block.get("usage") is None:
        raise Reject("invalid_usage")
    return model, provider, tiers(block["usage"])


def parse(obj: Any) -> Rec:
    if not isinstance(obj, dict):
        raise Reject("not_object")
    if obj.get("ts") is None:
        raise Reject("missing_ts")
    ts = _ts(obj["ts"])
    try:
        model = obj.get("model")
        if model is None or model == "":
            raise Reject("missing_model")
        if not isinstance(model, str):
            raise Reject("invalid_field")
        rid = _label(obj, "request_id")
        provider = _label(obj, "provider")
        _label(obj, "tenant")
        method = obj.get("count_method")
        if method is not None and not isinstance(method, str):
            raise Reject("invalid_field")
        before, after = _opt_count(obj, "tokens_before"), _opt_count(obj, "tokens_after")
        would = _opt_count(obj, "would_have_saved")
        components = obj.get("components")
        named: list[tuple[str, int]] = []
        if components is not None:
            if not isinstance(components, list):
                raise Reject("invalid_components")
            for item in components:
                if (
                    not isinstance(item, dict)
                    or not isinstance(item.get("name"), str)
                    or not item["name"]
                ):
                    raise Reject("invalid_components")
                try:
                    named.append((item["name"], _count(item.get("tokens_saved"))))
                except Reject:
                    raise Reject("invalid_components") from None
        optimizer = _optimizer(obj.get("optimizer"))
        usage = None if obj.get("usage") is None else tiers(obj["usage"])
        hit = _hit(obj)
    except Reject as exc:
        raise Reject(exc.reason, ts) from None
    requested = obj.get("requested_model") or None
    return Rec(ts, rid, model, provider, before, after, method, would, usage, named, optimizer, hit, requested)


def decode_line(line: bytes) -> Any:
    """bytes -> JSON value, or Reject; the sentinel ``BLANK`` for a blank line."""
    if line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise Reject("invalid_utf8") from None
    if not text.strip():
        return BLANK

    def refuse(name: str) -> Any:
        raise ValueError(name)

    try:
        return json.loads(text, parse_constant=refuse)
    except ValueError:  # JSONDecodeError included
        raise Reject("invalid_json") from None


BLANK = object()


# --- the totals ------------------------------------------------------------------


def _empty_month() -> dict[str, Any]:
    month: dict[str, Any] = {k: 0 for k in MONTH_KEYS_INT}
    month.update({k: 0.0 for k in MONTH_KEYS_FLOAT})
    month["populations"] = {name: {"baseline_input_tokens": 0, "sent_input_tokens": 0} for name in POPULATIONS}
    month["tokens_saved_by_component"] = {}
    month["usd_saved_by_component"] = {}
    return month


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def same(got: Any, want: Any) -> bool:
    """Equal, floats to 1e-9 relative (the oracle sums floats record by record), objects key by key."""
    if isinstance(want, dict):
        return isinstance(got, dict) and set(got) == set(want) and all(same(got[k], want[k]) for k in want)
    if isinstance(want, float) and isinstance(got, float):
        return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9)
    return bool(got == want)


@dataclass
class Oracle:
    """Feed lines with ``line``; read the replay JSON (docs/record-format.md) with ``result``."""

    versions: list[Version]
    timezone: str = "UTC"
    months: dict[str, dict[str, Any]] = field(default_factory=dict)
    rejected_by_reason: dict[str, int] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)

    def month_of(self, ts: float) -> str:
        return datetime.fromtimestamp(ts, ZoneInfo(self.timezone)).strftime("%Y-%m")

    def _month(self, name: str) -> dict[str, Any]:
        return self.months.setdefault(name, _empty_month())

    def line(self, raw: bytes) -> None:
        try:
            obj = decode_line(raw)
            if obj is BLANK:
                return
            rec = parse(obj)
        except Reject as exc:
            name = self.month_of(exc.ts) if exc.ts is not None else "unknown"
            self._month(name)["rejected"] += 1
            self.rejected_by_reason[exc.reason] = self.rejected_by_reason.get(exc.reason, 0) + 1
            return
        self.record(rec)

    def record(self, rec: Rec) -> None:
        m = self._month(self.month_of(rec.ts))
        if rec.request_id is not None:
            if rec.request_id in self.seen:
                m["duplicates"] += 1
                return
            self.seen.add(rec.request_id)
        if rec.hit:  # no provider call: a hit only, its avoided bill at its own rates
            m["response_cache_hits"] += 1
            r = rates_for(self.versions, rec.model, rec.provider, rec.ts)
            if r is None or not any(rec.usage or ()):
                m["response_cache_unpriced_hits"] += 1
            else:
                m["response_cache_avoided_usd"] += _bill(rec.usage, r)
            return
        m["requests"] += 1
        fresh, read, w5, w1h, out = rec.usage or (0, 0, 0, 0, 0)
        m["fresh_input_tokens"] += fresh
        m["cache_read_tokens"] += read
        m["cache_write_tokens"] += w5 + w1h
        m["output_tokens"] += out
        saved = (
            max(0, rec.before - rec.after)
            if rec.before is not None and rec.after is not None
            else 0
        )
        m["tokens_saved"] += saved
        m["would_have_saved_tokens"] += rec.would or 0
        r = rates_for(self.versions, rec.model, rec.provider, rec.ts)
        self._routing(m, rec, r)
        self._optimizer(m, rec)
        f = 1.0
        if r is not None:
            f = 1.0 if rec.method == "provider" else r.factors.get(rec.method or "", 1.0)
        if rec.before is not None and rec.after is not None:
            self._savings(m, rec, saved, f * r.input if r is not None else None)
        if r is None:
            m["unpriced"] += 1
            return
        m["spend_usd"] += (
            fresh * r.input + read * r.cache_read + w5 * r.w5 + w1h * r.w1h + out * r.output
        )
        m["usd_saved"] += saved * f * r.input
        m["would_have_saved_usd"] += (rec.would or 0) * f * r.input
        m["cache_savings_usd"] += (
            read * (r.input - r.cache_read) - w5 * (r.w5 - r.input) - w1h * (r.w1h - r.input)
        )

    def _savings(self, m: dict[str, Any], rec: Rec, saved: int, usd_per_token: float | None) -> None:
        """Populations and the split by component (the remainder unattributed) of a record with savings."""
        assert rec.before is not None and rec.after is not None
        pop = m["populations"]["compacted" if rec.before > rec.after else "untouched"]
        pop["baseline_input_tokens"] += rec.before
        pop["sent_input_tokens"] += rec.after
        shares: list[tuple[str, int]] = []
        remaining = saved
        for name, tokens in rec.components:
            share = min(tokens, remaining)
            remaining -= share
            if share:
                shares.append((name, share))
        if remaining or not rec.components:
            shares.append(("unattributed", remaining))
        for name, share in shares:
            m["tokens_saved_by_component"][name] = m["tokens_saved_by_component"].get(name, 0) + share
            usd = m["usd_saved_by_component"].get(name, 0.0)
            m["usd_saved_by_component"][name] = usd + (share * usd_per_token if usd_per_token is not None else 0.0)

    def _routing(self, m: dict[str, Any], rec: Rec, r: Rates | None) -> None:
        """A routed request: bill at the requested model - bill at the model called, by sign."""
        if rec.requested is None or rec.requested == rec.model:
            return
        m["routed_requests"] += 1
        asked = rates_for(self.versions, rec.requested, rec.provider, rec.ts)
        if r is None or asked is None or not any(rec.usage or ()):
            m["routing_unpriced_requests"] += 1
            return
        assert rec.usage is not None
        diff = _bill(rec.usage, asked) - _bill(rec.usage, r)
        m["routing_net_usd"] += diff
        m["routing_savings_usd" if diff >= 0 else "routing_extra_cost_usd"] += abs(diff)

    def _optimizer(self, m: dict[str, Any], rec: Rec) -> None:
        """The optimizer's own calls, priced like the request: same table, the version at its ts."""
        if rec.optimizer is None:
            return
        model, provider, usage = rec.optimizer
        if usage is None:  # a usage shape nobody knows
            m["optimizer_unpriced"] += 1
            return
        m["optimizer_requests"] += 1
        r = rates_for(self.versions, model, provider, rec.ts)
        if r is None:
            m["optimizer_unpriced"] += 1
            return
        fresh, read, w5, w1h, out = usage
        m["optimizer_spend_usd"] += fresh * r.input + read * r.cache_read + w5 * r.w5 + w1h * r.w1h + out * r.output

    def result(self) -> dict[str, Any]:
        for m in self.months.values():
            prompt = m["fresh_input_tokens"] + m["cache_read_tokens"] + m["cache_write_tokens"]
            m["cache_hit_rate"] = m["cache_read_tokens"] / prompt if prompt else 0.0
            for name in POPULATIONS:
                pop = m["populations"][name]
                m["baseline_input_tokens"] += pop["baseline_input_tokens"]
                m["sent_input_tokens"] += pop["sent_input_tokens"]
                pop["compression_ratio"] = _ratio(pop["baseline_input_tokens"], pop["sent_input_tokens"])
            compacted, untouched = m["populations"]["compacted"], m["populations"]["untouched"]
            compacted["saved_pct"] = _ratio(m["tokens_saved"], compacted["baseline_input_tokens"])
            untouched["saved_pct"] = 0.0 if untouched["baseline_input_tokens"] else None
            m["saved_pct"] = _ratio(m["tokens_saved"], m["baseline_input_tokens"])
            m["compression_ratio"] = _ratio(m["baseline_input_tokens"], m["sent_input_tokens"])
            m["net_usd_saved"] = m["usd_saved"] - m["optimizer_spend_usd"]
            m["tokens_saved_by_component"] = dict(sorted(m["tokens_saved_by_component"].items()))
            m["usd_saved_by_component"] = dict(sorted(m["usd_saved_by_component"].items()))
        return {
            "months": dict(sorted(self.months.items())),
            "rejected_by_reason": dict(self.rejected_by_reason),
        }


def replay(
    paths: Iterable[str | Path], prices: str | Path, timezone: str = "UTC"
) -> dict[str, Any]:
    """What ``replay FILE… --prices PRICES --timezone TZ --json`` should print."""
    oracle = Oracle(load_prices(prices), timezone)
    for path in paths:
        with open(path, "rb") as stream:
            for raw in stream:
                oracle.line(raw)
    return oracle.result()


# --- random realistic logs, for the comparison -------------------------------------------------

MODELS: tuple[tuple[str, str | None], ...] = (
    ("alpha", None),
    ("alpha", "anthropic"),
    ("acme/alpha", None),
    ("alpha-2026-09", None),
    ("beta", None),
    ("gamma", "google"),
    ("delta", None),
    ("epsilon", None),
    ("zeta", "vendor"),
    ("zeta", None),
    ("mystery-1", None),
    ("gpt-unknown", "openai"),
)
METHODS = (
    "provider",
    "tiktoken:o200k_base",
    "tiktoken:cl100k_base",
    "estimate:chars/4",
    "custom",
    None,
)
START = datetime(2026, 10, 20, tzinfo=UTC).timestamp()
SPAN = 30 * 86400  # inside the 40-day dedupe window: nothing expires in a generated log


def _usage(rng: Any) -> dict[str, Any]:

    def n(hi: int = 5000) -> int:
        return int(rng.randint(0, hi))

    kind = rng.randrange(9)
    if kind == 0:  # OpenAI chat, cached inside prompt
        prompt = n(20000)
        block: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": n(),
            "total_tokens": 0,
        }
        if rng.random() < 0.7:
            block["prompt_tokens_details"] = {"cached_tokens": rng.randint(0, prompt)}
        return block
    if kind == 1:  # OpenAI-compatible cache writes
        prompt = n(20000)
        cached = rng.randint(0, prompt)
        key = rng.choice(("cache_write_tokens", "cache_creation_tokens"))
        return {
            "prompt_tokens": prompt,
            "completion_tokens": n(),
            "prompt_tokens_details": {
                "cached_tokens": cached,
                key: rng.randint(0, prompt - cached),
            },
        }
    if kind == 2:  # DeepSeek
        prompt = n(20000)
        hit = rng.randint(0, prompt)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": n(),
            "prompt_cache_hit_tokens": hit,
            "prompt_cache_miss_tokens": prompt - hit,
        }
    if kind == 3:  # OpenAI responses
        total = n(20000)
        return {
            "input_tokens": total,
            "output_tokens": n(),
            "input_tokens_details": {"cached_tokens": rng.randint(0, total)},
            "output_tokens_details": {"reasoning_tokens": n(100)},
        }
    if kind == 4:  # Anthropic without split
        return {
            "input_tokens": n(),
            "cache_read_input_tokens": n(50000),
            "cache_creation_input_tokens": n(),
            "output_tokens": n(),
        }
    if kind == 5:  # Anthropic with split
        w5, w1h = n(), n()
        return {
            "input_tokens": n(),
            "cache_read_input_tokens": n(50000),
            "cache_creation_input_tokens": w5 + w1h,
            "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1h},
            "output_tokens": n(),
        }
    if kind == 6:  # Gemini
        prompt = n(30000)
        return {
            "promptTokenCount": prompt,
            "cachedContentTokenCount": rng.randint(0, prompt),
            "candidatesTokenCount": n(),
            "thoughtsTokenCount": n(2000),
        }
    if kind == 7:  # Bedrock Converse
        return {
            "inputTokens": n(),
            "cacheReadInputTokens": n(30000),
            "cacheWriteInputTokens": n(),
            "outputTokens": n(),
        }
    return {"some_future_shape": n()}  # unknown shape: counted without usage


def _random_ts(rng: Any) -> Any:
    if rng.random() < 0.03:
        return rng.choice(
            ("2026-11-01T00:00:00Z", "2026-10-31T23:59:59.999Z", 1793491200, 1793491200000)
        )
    seconds = START + rng.random() * SPAN
    form = rng.randrange(7)
    if form == 0:
        return int(seconds)
    if form == 1:
        return int(seconds * 1000)
    if form == 2:
        return round(seconds, 3)
    moment = datetime.fromtimestamp(int(seconds), UTC)
    if form == 3:
        return moment.isoformat().replace("+00:00", "Z")
    if form == 4:
        return moment.replace(tzinfo=None).isoformat()  # naive = UTC

    offset = timezone(timedelta(minutes=rng.choice((-600, -300, -150, 60, 330, 345, 840))))
    return moment.astimezone(offset).isoformat()


def good_record(rng: Any, rid: str | None) -> dict[str, Any]:
    model, provider = rng.choice(MODELS)
    rec: dict[str, Any] = {"ts": _random_ts(rng), "model": model}
    if rid is not None:
        rec["request_id"] = rid
    if provider is not None:
        rec["provider"] = provider
    if rng.random() < 0.5:
        rec["tenant"] = rng.choice(("t1", "t2", "t3"))
    if rng.random() < 0.85:
        rec["usage"] = _usage(rng)
    r = rng.random()
    method = rng.choice(METHODS)
    if r < 0.5:
        before = rng.randint(0, 30000)
        rec["tokens_before"] = before
        rec["tokens_after"] = (
            rng.randint(0, before) if rng.random() < 0.9 else before + rng.randint(0, 50)
        )
        if method is not None:
            rec["count_method"] = method
        if rng.random() < 0.3:
            saved = rec["tokens_before"] - rec["tokens_after"]
            rec["components"] = [
                {"name": "trim", "tokens_saved": rng.randint(0, max(saved, 0) + 10)}
            ]
    elif r < 0.7:  # shadow mode
        rec["would_have_saved"] = rng.randint(0, 5000)
        if method is not None:
            rec["count_method"] = method
    elif r < 0.75:
        rec["tokens_before"] = rng.randint(0, 100)  # incomplete: no tokens_after
    if rng.random() < 0.05:
        rec["unknown_key"] = {"nested": [1, 2, 3]}
    if rng.random() < 0.1:  # a compressor that called a model (priced, unknown or of an unknown usage shape)
        optimizer_model, optimizer_provider = rng.choice(MODELS)
        rec["optimizer"] = {"model": optimizer_model, "usage": _usage(rng) if rng.random() < 0.9 else {"n": 1}}
        if optimizer_provider is not None:
            rec["optimizer"]["provider"] = optimizer_provider
    return rec


def bad_line(rng: Any) -> bytes:
    base = {"ts": _random_ts(rng), "model": "alpha", "request_id": f"bad-{rng.random()}"}
    kind = rng.randrange(16)
    if kind == 0:
        return b"this is not json"
    if kind == 1:
        return b'{"ts": 1793491200, "model": "alpha", "tokens_before": NaN, "tokens_after": 1}'
    if kind == 2:
        return b'{"ts": 1793491200, "model": "alpha", "would_have_saved": Infinity}'
    if kind == 3:
        return b'{"ts": 1793491200, "model": "beta", "tokens_before": 1e308, "tokens_after": 1}'
    if kind == 4:
        base.update(tokens_before=True, tokens_after=1)
    elif kind == 5:
        base.update(tokens_before=10.0, tokens_after=1)
    elif kind == 6:
        base["usage"] = {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 11}}
    elif kind == 7:
        del base["ts"]
    elif kind == 8:
        del base["model"]
    elif kind == 9:
        base["ts"] = rng.choice(("yesterday", "2026-02-30T00:00:00Z", True, -5))
    elif kind == 10:
        return b"[1, 2, 3]"
    elif kind == 11:
        return b'{"ts": 1793491200, "model": "alpha\xff"}'
    elif kind == 12:
        base["usage"] = {
            "input_tokens": 1,
            "cache_creation_input_tokens": 10,
            "cache_creation": {"ephemeral_5m_input_tokens": 3, "ephemeral_1h_input_tokens": 3},
        }
    elif kind == 13:
        base["components"] = {"trim": 3}
    elif kind == 14:
        base["tenant"] = ["x"]
    else:
        base["usage"] = {"promptTokenCount": 5, "cachedContentTokenCount": 6}
    return json.dumps(base).encode()


def generate_log(rng: Any, n: int) -> list[bytes]:
    """``n`` lines (each ending in a newline): valid records, duplicates, bad and blank lines."""
    lines: list[bytes] = []
    ids: list[str] = []
    for index in range(n):
        roll = rng.random()
        if roll < 0.08:
            body = bad_line(rng)
        elif roll < 0.1:
            body = rng.choice((b"", b"   ", b"\xef\xbb\xbf"))
        else:
            if ids and roll < 0.2:
                rid: str | None = rng.choice(ids)  # duplicate id, different content: first wins
            elif roll < 0.25:
                rid = None
            else:
                rid = f"req-{index}-{rng.randrange(10**9)}"
                ids.append(rid)
            record = good_record(rng, rid)
            # some hits and routed requests, chosen by position (no draw: the rest of the log is unchanged)
            if index % 23 == 0:
                record["response_cache"] = ("exact", "semantic", "unspecified")[index % 3]
            elif index % 23 == 1:
                record["requested_model"] = ("alpha", "beta", "gamma", "delta", "epsilon", "nope")[index % 6]
            body = json.dumps(record).encode()
            if rng.random() < 0.02:
                body = b"\xef\xbb\xbf" + body
        lines.append(body + (b"\r\n" if rng.random() < 0.1 else b"\n"))
    return lines
