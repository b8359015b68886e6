"""A LiteLLM callback that appends every call's StandardLoggingPayload as one JSON line to a file.

The exporter tails that file (``--format litellm``); this module runs inside LiteLLM (SDK or proxy)
and is the only place of this package that imports ``litellm``.

File: ``$LLM_SAVINGS_LITELLM_LOG`` (default ``litellm-payloads.jsonl`` in the working directory), read
when each line is written, so it may be set after import.

Several processes and workers may append to the same file: each line is written with ONE
``os.write`` on a descriptor opened with ``O_APPEND``. On Linux, ``O_APPEND`` makes the seek to the
end and the write one atomic step with respect to other appenders of a regular file on a local
file system, so whole lines never interleave whatever their length (the ``PIPE_BUF`` limit is for
pipes and FIFOs, not regular files). A short write (disk full, a signal) is finished with further
writes and can then interleave; NFS gives no such guarantee at all. Keep the file local.

LiteLLM SDK::

    import litellm
    from exporter.integrations.litellm_logger import proxy_handler_instance
    litellm.callbacks = [proxy_handler_instance]

LiteLLM proxy (``config.yaml``)::

    litellm_settings:
      callbacks: exporter.integrations.litellm_logger.proxy_handler_instance

The proxy splits that value at its last dot into a module and an instance name
(``litellm.proxy.types_utils.utils.get_instance_fn``): it first looks for the file
``<directory of config.yaml>/exporter/integrations/litellm_logger.py`` and loads it by path,
otherwise it imports ``exporter.integrations.litellm_logger``, so either install this package in the
proxy's environment (``pip install llm-savings-exporter``) or copy this one file to that place beside
the config. Set ``LLM_SAVINGS_LITELLM_LOG`` in the proxy's environment.
"""

from __future__ import annotations

import json
import os
from typing import Any

from litellm.integrations.custom_logger import CustomLogger  # type: ignore[import-not-found, unused-ignore]

ENV_PATH = "LLM_SAVINGS_LITELLM_LOG"
CACHE_TYPE_KEY = "cache_type"  # added to a cache hit's line: the payload does not say which cache answered
DEFAULT_PATH = "litellm-payloads.jsonl"


def log_path() -> str:
    return os.environ.get(ENV_PATH) or DEFAULT_PATH


def encode_line(payload: Any) -> bytes:
    """One JSON line; values JSON does not know (datetimes, enums) are written as their ``str``."""
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, default=str)
    return (text.replace("\n", "\\n") + "\n").encode("utf-8")


def cache_type() -> str | None:
    """The type of LiteLLM's configured response cache (``local``, ``redis-semantic`` ...), if any."""
    import litellm  # type: ignore[import-not-found, unused-ignore]

    kind = getattr(getattr(litellm, "cache", None), "type", None)
    value = getattr(kind, "value", kind)
    return value if isinstance(value, str) else None


def with_cache_type(payload: Any) -> Any:
    """A cache hit's payload with ``cache_type`` added (a copy), so the exporter can tell an exact
    key cache from a semantic one; any other payload as it is."""
    if not isinstance(payload, dict) or payload.get("cache_hit") is not True or CACHE_TYPE_KEY in payload:
        return payload
    kind = cache_type()
    return payload if kind is None else {**payload, CACHE_TYPE_KEY: kind}


def append_line(path: str, line: bytes) -> None:
    """Append ``line`` with a single ``write`` on an ``O_APPEND`` descriptor (see the module docstring)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        written = os.write(fd, line)
        while written < len(line):  # only on a short write: disk full or an interrupted write
            written += os.write(fd, line[written:])
    finally:
        os.close(fd)


class PayloadFileLogger(CustomLogger):  # type: ignore[misc, unused-ignore]
    """Writes ``kwargs["standard_logging_object"]`` of every successful and failed call."""

    def __init__(self, path: str | None = None) -> None:
        super().__init__()
        self._path = path

    def _write(self, kwargs: Any) -> None:
        payload = kwargs.get("standard_logging_object") if isinstance(kwargs, dict) else None
        if payload is None:
            return
        append_line(self._path or log_path(), encode_line(with_cache_type(payload)))

    def log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        self._write(kwargs)

    def log_failure_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        self._write(kwargs)

    async def async_log_success_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        self._write(kwargs)

    async def async_log_failure_event(self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any) -> None:
        self._write(kwargs)


proxy_handler_instance = PayloadFileLogger()
