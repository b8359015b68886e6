"""A local fake OpenAI/Anthropic provider with deterministic usage and recorded ground truth.

Stdlib only. Serves on 127.0.0.1 (ephemeral port by default):

- ``POST /v1/chat/completions``  OpenAI Chat Completions, JSON or SSE (``stream_options.include_usage``
  adds the final usage chunk)
- ``POST /v1/responses``         OpenAI Responses, JSON or SSE (response.created ... response.completed)
- ``POST /v1/messages``          Anthropic Messages, JSON or SSE (message_start ... message_stop)

The usage of a call is chosen by its scenario (``tests.support.fake_usage.SCENARIOS``): the
``X-Fake-Scenario`` header, else the last ``[scenario:NAME]`` marker in the last user message, else
``plain``. Scenario ``error`` answers HTTP 400. Every call gets a fresh id and is recorded in
:attr:`FakeProvider.calls` with its normalised usage.

Use it as a context manager (``with FakeProvider() as fp: fp.base_url``) or run it:
``python -m tests.support.fake_provider --port 8080``.
"""

from __future__ import annotations

import argparse
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.support import fake_payloads as p
from tests.support.fake_usage import (
    ERROR_SCENARIO,
    REASONING,
    SCENARIO_HEADER,
    SCENARIOS,
    Usage,
    anthropic_truth,
    openai_truth,
    scenario_of,
)

ENDPOINTS = {
    "/v1/chat/completions": "openai.chat_completions",
    "/v1/responses": "openai.responses",
    "/v1/messages": "anthropic.messages",
}
_ID_PREFIX = {"openai.chat_completions": "chatcmpl-", "openai.responses": "resp_", "anthropic.messages": "msg_"}


SERVED_TIERS = ("default", "flex", "priority", "scale")  # what OpenAI answers in ``service_tier``


def served_tier(body: dict[str, Any]) -> str:
    """The tier a chat completion reports, like OpenAI: the requested one, ``default`` for ``auto`` or none."""
    tier = body.get("service_tier")
    return tier if isinstance(tier, str) and tier in SERVED_TIERS else "default"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json")

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/health", "/v1/models"):
            self._json(200, {"object": "list", "data": []})
        else:
            self._json(404, p.openai_error("not found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        path = self.path.split("?", 1)[0].rstrip("/")
        endpoint = ENDPOINTS.get(path)
        if endpoint is None:
            self._json(404, p.openai_error(f"no route {path}"))
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._json(400, p.openai_error("body is not JSON"))
            return
        scenario = scenario_of(body, self.headers.get(SCENARIO_HEADER))
        model = str(body.get("model", "unknown"))
        stream = bool(body.get("stream"))
        rid = _ID_PREFIX[endpoint] + uuid.uuid4().hex[:24]
        anthropic = endpoint == "anthropic.messages"
        if scenario == ERROR_SCENARIO or scenario not in SCENARIOS:
            self.server.record(endpoint, model, None, stream, scenario, None)
            err = p.anthropic_error if anthropic else p.openai_error
            self._json(400, err(f"fake provider: scenario {scenario!r} fails"))
            return
        truth = anthropic_truth(scenario) if anthropic else openai_truth(scenario)
        reasoning = REASONING.get(scenario, 0) if endpoint == "openai.responses" else 0
        self.server.record(endpoint, model, rid, stream, scenario, truth, reasoning)
        if endpoint == "openai.chat_completions":
            include = bool((body.get("stream_options") or {}).get("include_usage"))
            if stream:
                self._send(200, p.chat_stream(rid, model, truth, include), "text/event-stream")
            else:
                self._json(200, p.chat_completion(rid, model, truth, served_tier(body)))
        elif endpoint == "openai.responses":
            if stream:
                self._send(200, p.responses_stream(rid, model, truth, reasoning), "text/event-stream")
            else:
                self._json(200, p.response_object(rid, model, truth, reasoning, True))
        elif stream:
            self._send(200, p.anthropic_stream(rid, model, truth), "text/event-stream")
        else:
            self._json(200, p.anthropic_message(rid, model, truth))


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, addr: tuple[str, int], verbose: bool) -> None:
        super().__init__(addr, _Handler)
        self.verbose = verbose
        self.lock = threading.Lock()
        self.calls: list[dict[str, Any]] = []

    def record(
        self,
        endpoint: str,
        model: str,
        rid: str | None,
        stream: bool,
        scenario: str,
        usage: Usage | None,
        reasoning: int = 0,
    ) -> None:
        call: dict[str, Any] = {
            "endpoint": endpoint,
            "stream": stream,
            "model": model,
            "response_id": rid,
            "scenario": scenario,
            "usage": usage.as_dict() if usage else None,
        }
        if reasoning:
            call["reasoning_output"] = reasoning  # part of output, reported by the Responses API
        with self.lock:
            self.calls.append(call)


class FakeProvider:
    """The fake provider in a background thread; ``base_url`` ends without ``/v1``."""

    def __init__(self, port: int = 0, verbose: bool = False) -> None:
        self._server = _Server(("127.0.0.1", port), verbose)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def calls(self) -> list[dict[str, Any]]:
        with self._server.lock:
            return list(self._server.calls)

    def take_calls(self) -> list[dict[str, Any]]:
        """The calls recorded so far, forgetting them."""
        with self._server.lock:
            calls, self._server.calls = self._server.calls, []
        return calls

    def start(self) -> FakeProvider:
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-provider", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: ephemeral)")
    ap.add_argument("--verbose", action="store_true", help="log every request")
    args = ap.parse_args(argv)
    server = _Server(("127.0.0.1", args.port), args.verbose)
    print(f"fake provider on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
