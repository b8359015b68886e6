"""Response bodies and SSE streams shaped like the real OpenAI and Anthropic APIs."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.support.fake_usage import Usage, anthropic_usage, chat_usage, responses_usage

REPLY = "Fake reply from the local provider."
_PIECES = ["Fake reply", " from the", " local provider."]


def sse(events: list[tuple[str | None, Any]]) -> bytes:
    """``event:``/``data:`` frames; a None event name writes a bare ``data:`` frame."""
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        out.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(out).encode()


# --- OpenAI Chat Completions ---------------------------------------------------------------------


def chat_completion(rid: str, model: str, u: Usage, service_tier: str = "default") -> dict[str, Any]:
    return {
        "id": rid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": REPLY, "refusal": None, "annotations": []},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": chat_usage(u),
        "service_tier": service_tier,
        "system_fingerprint": "fp_fake",
    }


def chat_stream(rid: str, model: str, u: Usage, include_usage: bool) -> bytes:
    base = {"id": rid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
            "service_tier": "default", "system_fingerprint": "fp_fake"}
    extra = {"usage": None} if include_usage else {}

    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice], **extra}

    events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": "", "refusal": None}, None))]
    events += [(None, chunk({"content": p}, None)) for p in _PIECES]
    events.append((None, chunk({}, "stop")))
    if include_usage:
        events.append((None, {**base, "choices": [], "usage": chat_usage(u)}))
    events.append((None, "[DONE]"))
    return sse(events)


# --- OpenAI Responses ----------------------------------------------------------------------------


def _message_item(mid: str, done: bool) -> dict[str, Any]:
    content = [{"type": "output_text", "text": REPLY, "annotations": [], "logprobs": []}] if done else []
    status = "completed" if done else "in_progress"
    return {"id": mid, "type": "message", "status": status, "role": "assistant", "content": content}


def response_object(rid: str, model: str, u: Usage | None, reasoning: int, done: bool) -> dict[str, Any]:
    return {
        "id": rid,
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed" if done else "in_progress",
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": [_message_item("msg_" + rid[5:], True)] if done else [],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": responses_usage(u, reasoning) if (done and u is not None) else None,
        "user": None,
        "metadata": {},
    }


def responses_stream(rid: str, model: str, u: Usage, reasoning: int) -> bytes:
    mid = "msg_" + rid[5:]
    part_empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    part_done = {**part_empty, "text": REPLY}
    ref = {"item_id": mid, "output_index": 0, "content_index": 0}
    evs: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": response_object(rid, model, None, 0, False)}),
        ("response.in_progress", {"response": response_object(rid, model, None, 0, False)}),
        ("response.output_item.added", {"output_index": 0, "item": _message_item(mid, False)}),
        ("response.content_part.added", {**ref, "part": part_empty}),
    ]
    evs += [("response.output_text.delta", {**ref, "delta": p, "logprobs": []}) for p in _PIECES]
    evs += [
        ("response.output_text.done", {**ref, "text": REPLY, "logprobs": []}),
        ("response.content_part.done", {**ref, "part": part_done}),
        ("response.output_item.done", {"output_index": 0, "item": _message_item(mid, True)}),
        ("response.completed", {"response": response_object(rid, model, u, reasoning, True)}),
    ]
    return sse([(name, {"type": name, "sequence_number": i, **data}) for i, (name, data) in enumerate(evs)])


# --- Anthropic Messages --------------------------------------------------------------------------


def anthropic_message(rid: str, model: str, u: Usage) -> dict[str, Any]:
    return {
        "id": rid,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": REPLY}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": anthropic_usage(u),
    }


def anthropic_stream(rid: str, model: str, u: Usage) -> bytes:
    start = {**anthropic_message(rid, model, u), "content": [], "stop_reason": None, "usage": anthropic_usage(u, 1)}
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("ping", {"type": "ping"}),
    ]
    events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "text_delta", "text": p}}) for p in _PIECES]
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": u.output}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return sse(events)


# --- errors --------------------------------------------------------------------------------------


def openai_error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}


def anthropic_error(message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
