"""The capture venvs: exact pins verified to install together on Python 3.11, and their dialects.

One venv per set of pins that cannot share (OpenLIT pins its own OpenTelemetry and client ranges;
LiteLLM and Langfuse bring many dependencies). ``report_packages`` are the versions written into
each fixture's ``captured_with``.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass

OTEL_SDK = ("opentelemetry-sdk==1.45.2", "opentelemetry-exporter-otlp-proto-http==1.45.2")
# openai 3.x moved to httpx2; opentelemetry-instrumentation-openai-v2 2.4b0 still imports httpx. Pinned in the
# litellm env too: it reports httpx, and an unpinned one took 0.29.0 on its release (the fixtures say 0.28.1)
HTTPX = "httpx==0.28.1"
OPENAI = "openai==3.57.0"
ANTHROPIC = "anthropic==2.14.0"


@dataclass(frozen=True)
class Env:
    name: str
    pins: tuple[str, ...]
    dialects: tuple[str, ...]
    extra_report: tuple[str, ...] = ()
    pip_args: tuple[str, ...] = ()

    @property
    def report_packages(self) -> tuple[str, ...]:
        names = tuple(p.split("==")[0] for p in self.pins)
        return names + tuple(n for n in self.extra_report if n not in names)

    def stamp(self) -> str:
        """Identifies the pinned set: a venv whose stamp file holds it needs no install."""
        text = "\n".join([sys.version.split()[0], *self.pins, *self.pip_args])
        return hashlib.sha256(text.encode()).hexdigest()


ENVS: dict[str, Env] = {
    e.name: e
    for e in (
        Env(
            "otel_openai_v2",
            (
                "opentelemetry-instrumentation-openai-v2==2.4b0",
                # 2.4b0 asks for util-genai>=0.4b0.dev but imports util.genai.instruments, gone in 1.2b0
                "opentelemetry-util-genai==1.1b0",
                # what pip resolved when the fixtures were captured (they record it): pinned so a
                # release of either cannot change a fresh machine's capture
                "opentelemetry-instrumentation==0.66b2",
                "opentelemetry-semantic-conventions==0.66b2",
                OPENAI,
                HTTPX,
                *OTEL_SDK,
            ),
            ("otel_openai_v2", "otel_openai_v2_latest"),
            ("opentelemetry-util-genai", "opentelemetry-instrumentation", "opentelemetry-semantic-conventions"),
        ),
        Env(
            "openllmetry",
            (
                "opentelemetry-instrumentation-openai==0.62.4",
                "opentelemetry-instrumentation-anthropic==0.62.4",
                "opentelemetry-semantic-conventions-ai==0.5.1",  # recorded by the fixtures, as above
                "opentelemetry-instrumentation==0.66b2",
                OPENAI,
                ANTHROPIC,
                *OTEL_SDK,
            ),
            ("openllmetry_openai", "openllmetry_anthropic"),
            ("opentelemetry-semantic-conventions-ai", "opentelemetry-instrumentation"),
        ),
        Env(
            "openinference",
            (
                "openinference-instrumentation-openai==0.1.66",
                "openinference-instrumentation-anthropic==3.1.0",
                "openinference-instrumentation==0.1.72",  # recorded by the fixtures, as above
                "openinference-semantic-conventions==0.1.42",
                OPENAI,
                ANTHROPIC,
                *OTEL_SDK,
            ),
            ("openinference_openai", "openinference_anthropic", "anthropic_native", "anthropic_native_openinference"),
            ("openinference-instrumentation", "openinference-semantic-conventions"),
        ),
        Env(
            "openlit",
            # openlit 1.45.0 wants openai<3 and anthropic<1, and its contrib instrumentations stop at
            # 0.66b1: without these pins pip backtracks for minutes and gives up.
            (
                "openlit==1.45.0",
                "openai==2.54.0",
                "anthropic==0.125.0",
                "opentelemetry-sdk==1.45.1",
                "opentelemetry-exporter-otlp==1.45.1",
                "opentelemetry-exporter-otlp-proto-http==1.45.1",  # recorded by the fixtures
                "opentelemetry-instrumentation==0.66b1",
                "opentelemetry-semantic-conventions==0.66b1",
            ),
            ("openlit_openai", "openlit_anthropic"),
            ("opentelemetry-exporter-otlp-proto-http",),
        ),
        Env(
            "langfuse",
            ("langfuse==5.0.4", OPENAI, ANTHROPIC, *OTEL_SDK),
            ("langfuse_openai", "langfuse_generation"),
        ),
        Env(
            "litellm",
            # litellm 1.110.2's SDK response-cache hit path imports its proxy code (fastapi, orjson)
            # and its audio helpers (soundfile): without them a cache hit raises ModuleNotFoundError.
            # openai pinned too: litellm takes any openai, and the fixtures record the one it ran with
            # (openai 3.60.0's release failed the capture check on a fresh machine)
            ("litellm==1.110.2", "fastapi==0.165.0", "orjson==3.13.0", "soundfile==0.14.0", OPENAI, HTTPX,
             *OTEL_SDK),
            ("litellm_otel", "litellm_otel_latest", "litellm_payload"),
            ("openai", "httpx"),
        ),
    )
}


def env_of(dialect: str) -> Env:
    for env in ENVS.values():
        if dialect in env.dialects:
            return env
    raise KeyError(f"no env captures dialect {dialect!r}")


def all_dialects() -> list[str]:
    return [d for env in ENVS.values() for d in env.dialects]
