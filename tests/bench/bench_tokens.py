"""Token counting benchmarks. Run: ``python tests/bench/bench_tokens.py``.

1. Fresh text: TokenCounter.count_text (hash + LRU insert + encode) against raw
   ``tiktoken.Encoding.encode_ordinary`` on the same never-seen texts.
   Target: >= 90 % of raw throughput.
2. Agent transcript: 50 turns, ~2 KB of new text per turn, each turn resending
   the whole history. Cached per-message counting against re-tokenizing each
   turn's whole body. Target: >= 15x.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from exporter.tokens.counter import TokenCounter
from exporter.tokens.encodings import load_encoding
from exporter.tokens.verify import load_corpus


def _texts(n: int, size: int) -> list[str]:
    """n distinct texts of about ``size`` characters cut from the corpus."""
    blob = "\n".join(load_corpus().values())
    out = []
    for i in range(n):
        start = (i * 977) % (len(blob) - size)
        out.append(f"[{i}] " + blob[start : start + size])
    return out


def _best(fn: Callable[[], object], repeat: int = 5) -> float:
    """Best-of-``repeat`` CPU time (process_time): other processes' time does not count."""
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def _interleaved(
    a: Callable[[], object], b: Callable[[], object], repeat: int
) -> tuple[float, float]:
    """Best-of-``repeat`` CPU times of a and b, run alternately so noise hits both."""
    ta: list[float] = []
    tb: list[float] = []
    for _ in range(repeat):
        for fn, out in ((a, ta), (b, tb)):
            t = time.process_time()
            fn()
            out.append(time.process_time() - t)
    return min(ta), min(tb)


def bench_fresh(repeat: int = 7) -> None:
    """Per text, raw and ours run back to back; the best of ``repeat`` per text is summed.

    Fine-grained interleaving (alternating which goes first) and per-text
    minima keep a busy shared machine's noise out of the ratio (a coarse loop
    measured 75-125 % for the same code).
    """
    probe = TokenCounter()
    enc = probe.encoding("o200k_base")  # the very Encoding object the counter uses
    assert enc is not None
    clock = time.perf_counter_ns
    for size in (200, 2000, 20000):
        texts = _texts(400 if size < 20000 else 60, size)
        nbytes = sum(len(t.encode()) for t in texts)
        best_raw = [1 << 62] * len(texts)
        best_ours = [1 << 62] * len(texts)
        for rep in range(repeat):
            counter = TokenCounter()  # a new cache each round: every text is a miss
            counter.encoding("o200k_base")
            raw_first = rep % 2 == 0  # the second run of a text finds warmer CPU caches
            for i, t in enumerate(texts):
                start = clock()
                if raw_first:
                    len(enc.encode_ordinary(t))
                else:
                    counter.count_text(t)
                mid = clock()
                if raw_first:
                    counter.count_text(t)
                else:
                    len(enc.encode_ordinary(t))
                end = clock()
                first, second = mid - start, end - mid
                t_r, t_o = (first, second) if raw_first else (second, first)
                best_raw[i] = min(best_raw[i], t_r)
                best_ours[i] = min(best_ours[i], t_o)
        t_raw, t_ours = sum(best_raw) / 1e9, sum(best_ours) / 1e9
        print(
            f"fresh text {size:>6} chars: raw encode_ordinary {nbytes / t_raw / 1e6:6.2f} MB/s, "
            f"TokenCounter {nbytes / t_ours / 1e6:6.2f} MB/s = {100 * t_raw / t_ours:5.1f}% of raw"
        )


def bench_transcript(turns: int = 50, per_turn: int = 2000) -> None:
    enc = load_encoding("o200k_base")
    new_text = _texts(turns, per_turn)
    history: list[list[str]] = []
    msgs: list[str] = []
    for t in new_text:
        msgs = [*msgs, t]
        history.append(msgs)

    def whole_body() -> int:
        return sum(len(enc.encode_ordinary("\n".join(h))) for h in history)

    def uncached_per_message() -> int:
        c = TokenCounter(cache_entries=0)
        return sum(c.count_messages(list(h))[0] for h in history)

    def cached() -> int:
        c = TokenCounter()
        return sum(c.count_messages(list(h))[0] for h in history)

    assert cached() == uncached_per_message()
    t_body, t_cache = _interleaved(whole_body, cached, 7)
    t_msg = _best(uncached_per_message, 3)
    total_chars = sum(len(m) for h in history for m in h)
    print(
        f"transcript {turns} turns x ~{per_turn} chars new"
        f" ({total_chars / 1e6:.2f} M chars resent in all):"
    )
    print(f"  re-tokenize whole body each turn : {t_body * 1000:8.1f} ms")
    print(f"  per message, no cache            : {t_msg * 1000:8.1f} ms")
    print(
        f"  per message, content-hash cache  : {t_cache * 1000:8.1f} ms"
        f"  -> {t_body / t_cache:5.1f}x vs whole body, {t_msg / t_cache:5.1f}x vs uncached"
    )
    per_turn_ms = []
    c = TokenCounter()
    for h in history:
        start = time.process_time()
        c.count_messages(list(h))
        per_turn_ms.append((time.process_time() - start) * 1000)
    print(
        f"  cached per-turn cost: median {statistics.median(per_turn_ms):.2f} ms,"
        f" last turn {per_turn_ms[-1]:.2f} ms"
    )


if __name__ == "__main__":
    load_encoding("o200k_base")  # load outside the timings
    bench_fresh()
    bench_transcript()
