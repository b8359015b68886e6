"""A seeded gateway traffic simulator: the log a gateway + compression proxy would write.

Used by ``llm-savings-exporter demo`` and by tests, so it has to look like the
real thing where the arithmetic can go wrong, and it must never contain
prompt text (it has none: every size is a number drawn from the seed).

What it models, per agent session (a tenant, a model, a count method):

- **History resent every turn.** Each turn appends a user message, the
  previous answer and some tool outputs; the agent sends the whole history
  again, so ``tokens_before`` grows turn after turn.
- **The compression proxy** strips whitespace (``whitespace``), replaces
  repeated tool outputs by a reference (``tool_output_dedupe``) and, once the
  context passes the tenant's budget, drops the oldest turns
  (``history_trim``). Components add up to ``tokens_before - tokens_after``
  except where a proxy does not attribute a step (the remainder is then
  ``unattributed`` in the exporter). Counts are made with
  ``tiktoken:o200k_base`` mostly, ``provider`` (counts in the provider's own
  tokens) for some tenants, ``estimate:chars/4`` for a few.
- **Shadow mode**: one tenant runs the proxy in observe mode; its records
  carry ``would_have_saved`` only and its prompts are sent uncompressed.
- **Provider prompt caching** on the resent prefix, in each provider's native
  usage shape (``usage_shapes``). A trim changes the prefix and so misses the
  cache; so does a user who comes back after the cache's TTL (the session's
  think time is drawn, not waited for), and a few routing misses.
- **Log noise**: ~1% retried log lines (the same record again, same
  ``request_id``) and ~1% deliberately bad lines (cut-off JSON, a negative
  count, ``cached_tokens`` > ``prompt_tokens``), returned as ``str``.

All usage numbers are self-consistent: every good record normalises
(``exporter.engine.usage``) without rejection.

Who is simulated (models, tenants, the deliberately unpriced model) is
``population``; writing the lines to a rotating log is ``writer``.
"""

from __future__ import annotations

import math
import os
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from exporter.demo.population import MODELS, TENANTS, ModelSpec, TenantSpec
from exporter.demo.usage_shapes import CacheState, usage_block
from exporter.demo.writer import LogWriter, to_line

# Share of emitted lines that are a retried (duplicate) record or a deliberately bad line.
DUPLICATE_SHARE = 0.01
BAD_LINE_SHARE = 0.01

# estimate:chars/4 against o200k on English text and code: about 12% more tokens.
CHARS4_FACTOR = 1.12
ACTIVE_SESSIONS = 24
MAX_CONTEXT = 180_000  # an agent stops a session before this many o200k tokens


@dataclass
class _Segment:
    raw: int  # o200k tokens as the agent sent them
    sent: int  # after whitespace stripping and tool-output dedupe
    whitespace: int
    dedupe: int


@dataclass
class _Session:
    sid: str
    tenant: TenantSpec
    spec: ModelSpec
    method: str
    system: int
    turns_left: int
    ttl_1h: bool
    segments: list[_Segment] = field(default_factory=list)
    trimmed_raw: int = 0  # raw tokens of segments the proxy dropped
    prev_prompt: int | None = None  # provider prompt tokens of the previous turn (cache prefix)
    last_output: int = 0


def rfc3339(ts: float) -> str:
    """``2026-11-30T04:27:09.123Z``: UTC, millisecond precision, as gateways log."""
    moment = datetime.fromtimestamp(ts, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class Simulator:
    """Deterministic for a seed: the same seed and start give the same lines.

    ``records(n)`` stamps records from ``start_ts`` on, ``rate_per_s`` a second on
    average; :meth:`item` stamps one with a time the caller chooses (``run`` uses
    its clock).
    """

    def __init__(self, seed: int, start_ts: float, *, rate_per_s: float = 50.0) -> None:
        if rate_per_s <= 0:
            raise ValueError("rate_per_s must be positive")
        self.rng = random.Random(seed)
        self.ts = float(start_ts)
        self.rate_per_s = rate_per_s
        self.sessions: list[_Session] = []
        self.recent: deque[dict[str, Any]] = deque(maxlen=64)
        self.warm_1h: dict[
            tuple[str, str], float
        ] = {}  # (tenant, model) -> when its 1h system write expires
        self.emitted = 0

    # --- public API ---------------------------------------------------------
    def records(self, n: int) -> Iterator[dict[str, Any] | str]:
        """``n`` items: record dicts, or ``str`` for deliberately bad raw lines."""
        for _ in range(n):
            self.ts += self.rng.expovariate(self.rate_per_s)
            yield self.item(self.ts)

    def item(self, ts: float) -> dict[str, Any] | str:
        """The next log item, stamped ``ts``."""
        rng = self.rng
        self.emitted += 1
        roll = rng.random()
        if roll < DUPLICATE_SHARE and self.recent:
            return dict(rng.choice(self.recent))  # a retried log line: same record, same request_id
        if roll < DUPLICATE_SHARE + BAD_LINE_SHARE:
            return self._bad_line(ts)
        record = self._turn(ts)
        self.recent.append(record)
        return record

    def write(
        self, path: str | os.PathLike[str], n: int, rotate_every: int | None = None
    ) -> list[Path]:
        """Write ``n`` items as JSON lines to ``path``.

        With ``rotate_every``, the file is rotated by rename every that many
        lines, numbered like logrotate (``path.1`` the newest old file) and
        all kept. Returns the files, oldest first, so a replay reads them in
        order.
        """
        target = Path(path)
        rotated = 0
        lines_in_file = 0
        out = open(target, "w", encoding="utf-8")  # noqa: SIM115 - reopened on rotation
        try:
            for item in self.records(n):
                if rotate_every is not None and lines_in_file >= rotate_every:
                    out.close()
                    for index in range(rotated, 0, -1):
                        os.replace(f"{target}.{index}", f"{target}.{index + 1}")
                    os.replace(target, f"{target}.1")
                    rotated += 1
                    lines_in_file = 0
                    out = open(target, "w", encoding="utf-8")  # noqa: SIM115
                out.write(to_line(item) + "\n")
                lines_in_file += 1
        finally:
            out.close()
        return [Path(f"{target}.{index}") for index in range(rotated, 0, -1)] + [target]

    def run(
        self,
        directory: str | os.PathLike[str],
        rate_per_s: float,
        stop_event: threading.Event,
        rotate_every_s: float | None = 300.0,
        clock: Callable[[], float] = time.time,
        *,
        tick_s: float = 0.1,
    ) -> int:
        """Append traffic to ``<directory>/gateway.jsonl`` until ``stop_event`` is set.

        Records are stamped with ``clock()`` (now), not with the simulated
        ``start_ts``. Returns the lines written.
        """
        now = clock()
        writer = LogWriter(self, directory, rate_per_s, rotate_every_s, now)
        try:
            while True:
                writer.step(clock())
                if stop_event.wait(tick_s):
                    break
        finally:
            writer.close()
        return writer.written

    # --- one agent turn -----------------------------------------------------
    def _pick(self, weighted: tuple[tuple[str, float], ...]) -> str:
        names = [name for name, _ in weighted]
        weights = [weight for _, weight in weighted]
        return self.rng.choices(names, weights)[0]

    def _new_session(self) -> _Session:
        rng = self.rng
        tenant = rng.choices(TENANTS, [t.weight for t in TENANTS])[0]
        spec = MODELS[self._pick(tenant.models)]
        method = self._pick(tenant.methods)
        return _Session(
            sid=f"sess_{rng.getrandbits(48):012x}",
            tenant=tenant,
            spec=spec,
            method=method,
            system=rng.randint(900, 6500),  # system prompt + tool definitions
            turns_left=rng.randint(3, 40),
            ttl_1h=spec.shape in ("anthropic", "bedrock") and rng.random() < tenant.ttl_1h_share,
        )

    def _session(self) -> _Session:
        while len(self.sessions) < ACTIVE_SESSIONS:
            self.sessions.append(self._new_session())
        return self.rng.choice(self.sessions)

    def _grow(self, session: _Session) -> None:
        """Append this turn's new content: the previous answer, a user message, tool outputs."""
        rng = self.rng
        pieces = (
            [session.last_output, rng.randint(15, 450)]
            if session.segments
            else [rng.randint(15, 450)]
        )
        tools = rng.choices((0, 1, 2, 3), (0.35, 0.35, 0.2, 0.1))[0]
        for _ in range(tools):
            size = int(rng.lognormvariate(6.6, 0.9))  # median ~700 tokens, long tail
            dedupe = int(size * rng.uniform(0.3, 0.9)) if rng.random() < 0.3 else 0
            ws = int((size - dedupe) * rng.uniform(0.02, 0.12)) if rng.random() < 0.7 else 0
            session.segments.append(_Segment(size, size - dedupe - ws, ws, dedupe))
        for size in pieces:
            if size <= 0:
                continue
            ws = int(size * rng.uniform(0.01, 0.05)) if rng.random() < 0.5 else 0
            session.segments.append(_Segment(size, size - ws, ws, 0))

    def _trim(self, session: _Session) -> bool:
        """Drop the oldest segments past the budget (to 60% of it); True when the prefix changed."""
        budget = session.tenant.budget
        sent = session.system + sum(s.sent for s in session.segments)
        if sent <= budget:
            return False
        keep_at_most = int(budget * 0.6)
        dropped = False
        while session.segments and sent > keep_at_most and len(session.segments) > 2:
            old = session.segments.pop(0)
            session.trimmed_raw += old.raw
            sent -= old.sent
            dropped = True
        return dropped

    def _scale(self, session: _Session, o200k: int) -> int:
        """A count in the session's count method's units."""
        if session.method == "provider":
            return round(o200k * session.spec.token_factor)
        if session.method == "estimate:chars/4":
            return round(o200k * CHARS4_FACTOR)
        return o200k

    def _turn(self, ts: float) -> dict[str, Any]:
        rng = self.rng
        session = self._session()
        spec, tenant = session.spec, session.tenant
        self._grow(session)
        trimmed_now = False if tenant.shadow else self._trim(session)
        framing = 3 + 4 * len(session.segments)  # message framing tokens, counted like content
        raw = session.system + session.trimmed_raw + sum(s.raw for s in session.segments) + framing
        sent = session.system + sum(s.sent for s in session.segments) + framing
        # What the provider bills as prompt: the compressed prompt (applied) or all of it (shadow).
        provider_prompt = round((raw if tenant.shadow else sent) * spec.token_factor)
        system_provider = round(session.system * spec.token_factor)

        # Cache: the previous turn's prompt is the prefix of this one unless the
        # proxy trimmed, or the user's think time outlived the cache.
        think = rng.choice(
            (rng.uniform(1, 40), rng.uniform(1, 40), rng.uniform(1, 40), rng.uniform(60, 1500))
        )
        prefix = session.prev_prompt
        if prefix is not None and (trimmed_now or think > 300 or rng.random() < 0.04):
            prefix = None
        output = max(1, int(rng.lognormvariate(math.log(spec.output_mean), 0.6)))
        cache = CacheState(tenant.name, session.ttl_1h, self.warm_1h)
        usage = usage_block(rng, spec, cache, provider_prompt, system_provider, prefix, output, ts)

        record: dict[str, Any] = {
            "ts": rfc3339(ts),
            "request_id": f"req_{rng.getrandbits(96):024x}",
            "model": spec.model,
            "provider": spec.provider,
            "tenant": tenant.name,
            "session_id": session.sid,
            "route": spec.route,
            "status": 200,
            "latency_ms": int(200 + output * rng.uniform(8, 25)),
            "count_method": session.method,
        }
        kept_ws = sum(s.whitespace for s in session.segments)
        kept_dedupe = sum(s.dedupe for s in session.segments)
        before = self._scale(session, raw)
        after = self._scale(session, sent)
        if tenant.shadow:
            record["would_have_saved"] = max(0, before - after)
        else:
            record["tokens_before"] = before
            record["tokens_after"] = after
            components = []
            left = before - after
            for name, tokens in (
                ("history_trim", session.trimmed_raw),
                ("tool_output_dedupe", kept_dedupe),
                ("whitespace", kept_ws if tenant.attributes_whitespace else 0),
            ):
                scaled = min(left, self._scale(session, tokens))
                if scaled > 0:
                    components.append({"name": name, "tokens_saved": scaled})
                    left -= scaled
            if components:
                record["components"] = components
        record["usage"] = usage

        session.prev_prompt = provider_prompt
        session.last_output = round(output / spec.token_factor)
        session.turns_left -= 1
        if session.turns_left <= 0 or raw > MAX_CONTEXT:
            self.sessions.remove(session)
        return record

    # --- deliberate noise ----------------------------------------------------
    def _bad_line(self, ts: float) -> str:
        rng = self.rng
        kind = rng.randrange(3)
        base: dict[str, Any] = {
            "ts": rfc3339(ts),
            "request_id": f"req_{rng.getrandbits(96):024x}",
            "model": "gpt-4o-mini",
            "provider": "openai",
            "tenant": "acme-search",
            "count_method": "tiktoken:o200k_base",
        }
        prompt = rng.randint(1500, 9000)
        if kind == 0:  # a line cut off mid-write (the writer crashed)
            base["usage"] = {"prompt_tokens": prompt, "completion_tokens": 120}
            line = to_line(base)
            return line[: rng.randint(10, len(line) - 10)]
        if kind == 1:  # a buggy proxy subtracted the wrong way
            base.update(tokens_before=prompt, tokens_after=-rng.randint(1, 400))
            return to_line(base)
        # a provider/gateway bug: more cached tokens than prompt tokens
        base["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": 80,
            "prompt_tokens_details": {"cached_tokens": prompt + 128 * rng.randint(1, 8)},
        }
        return to_line(base)


__all__ = ["Simulator", "rfc3339"]
