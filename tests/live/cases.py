"""The fixed calls each capture makes: one case is one small group of provider calls.

Imports the client libraries only inside the functions, so each venv needs only its own.
Prompt texts are fixed fake strings; the ``[scenario:NAME]`` marker picks the fake provider's usage.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

OPENAI_CHAT_MODEL = "gpt-4o-mini"
OPENAI_RESPONSES_MODEL = "gpt-4.1-mini"
ANTHROPIC_MODEL = "claude-sonnet-4-5"
ROUTER_GROUP = "smart"  # the LiteLLM Router alias the router case asks for
FAKE_OPENAI_KEY = "sk-fake-not-a-secret"
FAKE_ANTHROPIC_KEY = "sk-ant-fake-not-a-secret"

Case = tuple[str, Callable[[], Any]]


def prompt(scenario: str) -> str:
    return f"Fake prompt for a capture, nothing secret here. [scenario:{scenario}]"


def _system(scenario: str) -> list[dict[str, Any]]:
    """A system block marked for caching, with the TTL the scenario writes."""
    control: dict[str, Any] = {"type": "ephemeral"}
    if scenario in ("cache_write_1h", "mixed"):
        control["ttl"] = "1h"
    return [{"type": "text", "text": "Fake cached system prompt.", "cache_control": control}]


# --- OpenAI SDK ----------------------------------------------------------------------------------


def openai_cases(client: Any, responses: bool = True, service_tier: bool = False) -> list[Case]:
    def chat(scenario: str, stream: bool, tier: str | None = None) -> Callable[[], Any]:
        def run() -> Any:
            msgs = [{"role": "user", "content": prompt(scenario)}]
            if tier is not None:
                return client.chat.completions.create(model=OPENAI_CHAT_MODEL, messages=msgs, service_tier=tier)
            if not stream:
                return client.chat.completions.create(model=OPENAI_CHAT_MODEL, messages=msgs)
            chunks = client.chat.completions.create(
                model=OPENAI_CHAT_MODEL, messages=msgs, stream=True, stream_options={"include_usage": True}
            )
            return [c for c in chunks]

        return run

    def resp(scenario: str, stream: bool) -> Callable[[], Any]:
        def run() -> Any:
            if not stream:
                return client.responses.create(model=OPENAI_RESPONSES_MODEL, input=prompt(scenario))
            events = client.responses.create(model=OPENAI_RESPONSES_MODEL, input=prompt(scenario), stream=True)
            return [e for e in events]

        return run

    cases: list[Case] = [
        ("chat_plain", chat("plain", False)),
        ("chat_cache_read", chat("cache_read", False)),
        ("chat_plain_stream", chat("plain", True)),
        ("chat_cache_read_stream", chat("cache_read", True)),
    ]
    if service_tier:  # a flex-processing call: the response says which tier served it
        cases.append(("chat_plain_flex", chat("plain", False, "flex")))
    if responses:
        cases += [
            ("responses_cache_read", resp("cache_read", False)),
            ("responses_cache_read_stream", resp("cache_read", True)),
        ]
    return cases


def openai_client(base_url: str, cls: Any = None) -> Any:
    if cls is None:
        import openai

        cls = openai.OpenAI
    return cls(base_url=base_url + "/v1", api_key=FAKE_OPENAI_KEY, max_retries=0)


# --- Anthropic SDK -------------------------------------------------------------------------------

ANTHROPIC_SCENARIOS = ("plain", "cache_read", "cache_write_5m", "cache_write_1h", "mixed")
ANTHROPIC_STREAM_SCENARIOS = ("cache_read", "cache_write_1h", "mixed")


def anthropic_cases(client: Any) -> list[Case]:
    def kwargs(scenario: str) -> dict[str, Any]:
        return {
            "model": ANTHROPIC_MODEL,
            "max_tokens": 256,
            "system": _system(scenario),
            "messages": [{"role": "user", "content": prompt(scenario)}],
        }

    def create(scenario: str) -> Callable[[], Any]:
        return lambda: client.messages.create(**kwargs(scenario))

    def create_stream(scenario: str) -> Callable[[], Any]:
        return lambda: [e for e in client.messages.create(stream=True, **kwargs(scenario))]

    def helper_stream(scenario: str) -> Callable[[], Any]:
        def run() -> Any:
            with client.messages.stream(**kwargs(scenario)) as s:
                for _ in s.text_stream:
                    pass
                return s.get_final_message()

        return run

    cases: list[Case] = [(f"create_{s}", create(s)) for s in ANTHROPIC_SCENARIOS]
    cases += [(f"create_stream_{s}", create_stream(s)) for s in ANTHROPIC_STREAM_SCENARIOS]
    cases += [(f"messages_stream_{s}", helper_stream(s)) for s in ANTHROPIC_STREAM_SCENARIOS]
    return cases


def anthropic_client(base_url: str, **extra: Any) -> Any:
    import anthropic

    return anthropic.Anthropic(base_url=base_url, api_key=FAKE_ANTHROPIC_KEY, max_retries=0, **extra)


# --- LiteLLM -------------------------------------------------------------------------------------


def litellm_cases(base_url: str, with_error: bool = False) -> list[Case]:
    import litellm

    def openai_call(scenario: str, stream: bool) -> Callable[[], Any]:
        def run() -> Any:
            kw: dict[str, Any] = {
                "model": f"openai/{OPENAI_CHAT_MODEL}",
                "api_base": base_url + "/v1",
                "api_key": FAKE_OPENAI_KEY,
                "messages": [{"role": "user", "content": prompt(scenario)}],
            }
            if stream:
                kw.update(stream=True, stream_options={"include_usage": True})
                return [c for c in litellm.completion(**kw)]
            return litellm.completion(**kw)

        return run

    def anthropic_call(scenario: str, stream: bool) -> Callable[[], Any]:
        def run() -> Any:
            kw: dict[str, Any] = {
                "model": f"anthropic/{ANTHROPIC_MODEL}",
                "api_base": base_url,
                "api_key": FAKE_ANTHROPIC_KEY,
                "max_tokens": 256,
                "messages": [
                    {"role": "system", "content": _system(scenario)},
                    {"role": "user", "content": prompt(scenario)},
                ],
            }
            if stream:
                kw.update(stream=True, stream_options={"include_usage": True})
                return [c for c in litellm.completion(**kw)]
            return litellm.completion(**kw)

        return run

    def failing() -> Any:
        try:
            return litellm.completion(
                model=f"openai/{OPENAI_CHAT_MODEL}",
                api_base=base_url + "/v1",
                api_key=FAKE_OPENAI_KEY,
                messages=[{"role": "user", "content": prompt("error")}],
                num_retries=0,
            )
        except Exception as exc:  # the failure is the point of this case
            return exc

    def response_cache_hit() -> Any:
        """The same completion twice with LiteLLM's in-memory cache on: a miss, then a hit."""
        from litellm.caching.caching import Cache

        litellm.cache = Cache(type="local")  # left on until the next case: the loggers run after the call
        kw: dict[str, Any] = {
            "model": f"openai/{OPENAI_CHAT_MODEL}",
            "api_base": base_url + "/v1",
            "api_key": FAKE_OPENAI_KEY,
            "messages": [{"role": "user", "content": prompt("cache_read")}],
            "caching": True,
        }
        first = litellm.completion(**kw)
        return first, litellm.completion(**kw)

    def router_alias() -> Any:
        """A Router whose model group ``smart`` is a deployment of another model."""
        litellm.cache = None
        router = litellm.Router(model_list=[{
            "model_name": ROUTER_GROUP,
            "litellm_params": {"model": f"openai/{OPENAI_CHAT_MODEL}", "api_base": base_url + "/v1",
                               "api_key": FAKE_OPENAI_KEY},
        }])
        return router.completion(model=ROUTER_GROUP, messages=[{"role": "user", "content": prompt("plain")}])

    cases: list[Case] = [
        ("openai_chat_plain", openai_call("plain", False)),
        ("openai_chat_cache_read", openai_call("cache_read", False)),
        ("openai_chat_cache_read_stream", openai_call("cache_read", True)),
        ("anthropic_plain", anthropic_call("plain", False)),
        ("anthropic_cache_read", anthropic_call("cache_read", False)),
        ("anthropic_cache_write_5m", anthropic_call("cache_write_5m", False)),
        ("anthropic_cache_write_1h", anthropic_call("cache_write_1h", False)),
        ("anthropic_mixed", anthropic_call("mixed", False)),
        ("anthropic_mixed_stream", anthropic_call("mixed", True)),
    ]
    cases += [("openai_chat_response_cache_hit", response_cache_hit), ("router_alias", router_alias)]
    if with_error:
        cases.append(("openai_chat_error", failing))
    return cases
