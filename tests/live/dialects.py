"""One dialect = one instrumentation set-up plus the cases it is driven with.

``setup(provider_url, capture)`` runs inside the dialect's venv, in a fresh process (instrumentations
are global), and returns a :class:`Dialect`. Every package is imported inside its set-up function.
The spans leave through the real ``opentelemetry-exporter-otlp-proto-http`` exporter (protobuf):
ours, or the one the package configures itself (OpenLIT, Langfuse, LiteLLM) pointed at the capture.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.live import cases as c
from tests.live.otlp_capture import CaptureEndpoint

ANTHROPIC_NATIVE_OFF = {"ANTHROPIC_OPEN_TELEMETRY": "false"}
LATEST_SEMCONV = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}


@dataclass
class Dialect:
    cases: list[c.Case]
    flush: Callable[[], Any]
    wait: float = 0.1  # seconds to let asynchronous loggers run before flushing
    payload_log: str | None = None  # LiteLLM payload dialect: the JSONL file the logger appends to
    notes: dict[str, Any] = field(default_factory=dict)


def sdk_provider(capture: CaptureEndpoint) -> Any:
    """A global SDK TracerProvider exporting with the real OTLP/HTTP protobuf exporter."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    tp = TracerProvider(resource=Resource.create({"service.name": "llm-savings-live-capture"}))
    tp.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=capture.traces_url)))
    trace.set_tracer_provider(tp)
    return tp


def _env(values: dict[str, str]) -> None:
    os.environ.update(values)


# --- a. opentelemetry-instrumentation-openai-v2 ---------------------------------------------------


def otel_openai_v2(url: str, cap: CaptureEndpoint, latest: bool = False) -> Dialect:
    if latest:
        _env(LATEST_SEMCONV)
    tp = sdk_provider(cap)
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=tp)
    return Dialect(c.openai_cases(c.openai_client(url), service_tier=True), tp.force_flush)


# --- b. OpenLLMetry -------------------------------------------------------------------------------


def openllmetry_openai(url: str, cap: CaptureEndpoint) -> Dialect:
    tp = sdk_provider(cap)
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=tp)
    return Dialect(c.openai_cases(c.openai_client(url)), tp.force_flush)


def openllmetry_anthropic(url: str, cap: CaptureEndpoint) -> Dialect:
    _env(ANTHROPIC_NATIVE_OFF)
    tp = sdk_provider(cap)
    from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor

    AnthropicInstrumentor().instrument(tracer_provider=tp)
    return Dialect(c.anthropic_cases(c.anthropic_client(url)), tp.force_flush)


# --- c. OpenInference -----------------------------------------------------------------------------


def openinference_openai(url: str, cap: CaptureEndpoint) -> Dialect:
    tp = sdk_provider(cap)
    from openinference.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=tp)
    return Dialect(c.openai_cases(c.openai_client(url)), tp.force_flush)


def openinference_anthropic(url: str, cap: CaptureEndpoint, native: bool = False) -> Dialect:
    if not native:
        _env(ANTHROPIC_NATIVE_OFF)
    tp = sdk_provider(cap)
    from openinference.instrumentation.anthropic import AnthropicInstrumentor

    AnthropicInstrumentor().instrument(tracer_provider=tp)
    return Dialect(c.anthropic_cases(c.anthropic_client(url)), tp.force_flush)


# --- f/h. the anthropic SDK's own spans -----------------------------------------------------------


def anthropic_native(url: str, cap: CaptureEndpoint) -> Dialect:
    os.environ.pop("ANTHROPIC_OPEN_TELEMETRY", None)
    tp = sdk_provider(cap)
    return Dialect(c.anthropic_cases(c.anthropic_client(url)), tp.force_flush)


# --- d. OpenLIT -----------------------------------------------------------------------------------


def _openlit(cap: CaptureEndpoint) -> Callable[[], Any]:
    import openlit
    from opentelemetry import trace

    openlit.init(
        otlp_endpoint=cap.base_url,
        application_name="llm-savings-live-capture",
        environment="capture",
        disable_metrics=True,
        disable_batch=False,
    )
    return lambda: trace.get_tracer_provider().force_flush()  # type: ignore[attr-defined]


def openlit_openai(url: str, cap: CaptureEndpoint) -> Dialect:
    flush = _openlit(cap)
    return Dialect(c.openai_cases(c.openai_client(url)), flush)


def openlit_anthropic(url: str, cap: CaptureEndpoint) -> Dialect:
    _env(ANTHROPIC_NATIVE_OFF)
    flush = _openlit(cap)
    return Dialect(c.anthropic_cases(c.anthropic_client(url)), flush)


# --- e. Langfuse (v3+ OTel SDK) -------------------------------------------------------------------


def _langfuse(cap: CaptureEndpoint) -> Any:
    from langfuse import Langfuse

    return Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake-not-a-secret", base_url=cap.base_url)


def langfuse_openai(url: str, cap: CaptureEndpoint) -> Dialect:
    lf = _langfuse(cap)
    from langfuse.openai import OpenAI

    return Dialect(c.openai_cases(c.openai_client(url, cls=OpenAI)), lf.flush)


def langfuse_generation(url: str, cap: CaptureEndpoint) -> Dialect:
    """A generation recorded by hand with ``usage_details`` in Anthropic's own key names."""
    _env(ANTHROPIC_NATIVE_OFF)
    lf = _langfuse(cap)
    client = c.anthropic_client(url)

    def gen(scenario: str) -> Callable[[], Any]:
        def run() -> Any:
            with lf.start_as_current_observation(as_type="generation", name="anthropic-messages",
                                                 model=c.ANTHROPIC_MODEL) as g:
                msg = client.messages.create(model=c.ANTHROPIC_MODEL, max_tokens=256,
                                             messages=[{"role": "user", "content": c.prompt(scenario)}])
                u = msg.usage
                cc = u.cache_creation
                g.update(usage_details={
                    "input": u.input_tokens,
                    "output": u.output_tokens,
                    "cache_read_input_tokens": u.cache_read_input_tokens or 0,
                    "cache_creation_input_tokens": u.cache_creation_input_tokens or 0,
                    "cache_creation_5m_input_tokens": cc.ephemeral_5m_input_tokens if cc else 0,
                    "cache_creation_1h_input_tokens": cc.ephemeral_1h_input_tokens if cc else 0,
                })
                return msg

        return run

    scenarios = ("cache_read", "cache_write_5m", "cache_write_1h")
    return Dialect([(f"generation_{s}", gen(s)) for s in scenarios], lf.flush)


# --- g/i. LiteLLM ---------------------------------------------------------------------------------


def litellm_otel(url: str, cap: CaptureEndpoint, latest: bool = False) -> Dialect:
    _env({"OTEL_EXPORTER": "otlp_http", "OTEL_ENDPOINT": cap.traces_url, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    if latest:
        _env(LATEST_SEMCONV)
    import litellm
    from opentelemetry import trace

    litellm.callbacks = ["otel"]
    flush = lambda: trace.get_tracer_provider().force_flush()  # type: ignore[attr-defined]  # noqa: E731
    return Dialect(c.litellm_cases(url), flush, wait=1.5)


def litellm_payload(url: str, cap: CaptureEndpoint, log_path: str) -> Dialect:
    _env({"LLM_SAVINGS_LITELLM_LOG": log_path, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    import litellm

    from exporter.integrations.litellm_logger import proxy_handler_instance

    litellm.callbacks = [proxy_handler_instance]
    return Dialect(c.litellm_cases(url, with_error=True), lambda: None, wait=1.5, payload_log=log_path)


DIALECTS: dict[str, Callable[..., Dialect]] = {
    "otel_openai_v2": otel_openai_v2,
    "otel_openai_v2_latest": lambda u, cap: otel_openai_v2(u, cap, latest=True),
    "openllmetry_openai": openllmetry_openai,
    "openllmetry_anthropic": openllmetry_anthropic,
    "openinference_openai": openinference_openai,
    "openinference_anthropic": openinference_anthropic,
    "anthropic_native": anthropic_native,
    "anthropic_native_openinference": lambda u, cap: openinference_anthropic(u, cap, native=True),
    "openlit_openai": openlit_openai,
    "openlit_anthropic": openlit_anthropic,
    "langfuse_openai": langfuse_openai,
    "langfuse_generation": langfuse_generation,
    "litellm_otel": litellm_otel,
    "litellm_otel_latest": lambda u, cap: litellm_otel(u, cap, latest=True),
    "litellm_payload": litellm_payload,
}
