"""A minimal DevTools-protocol client over Chromium's ``--remote-debugging-pipe`` (stdlib only).

The browser reads commands on file descriptor 3 and writes replies and events on 4, each a JSON
message ended by a NUL byte. Enough to open a page at a given viewport and evaluate expressions
in it: what a layout check needs (widths, overflow) that a DOM dump cannot tell.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.support.browser import FLAGS, chromium


class DevTools:
    """One headless browser and one page, driven over the pipe."""

    def __init__(self, profile: Path, timeout: float = 60.0) -> None:
        profile.mkdir(parents=True, exist_ok=True)
        self.timeout = timeout
        to_browser_read, self._write = os.pipe()
        self._read, from_browser_write = os.pipe()
        # the child must find them as fds 3 and 4
        self.proc = subprocess.Popen(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=lambda: _as_3_and_4(to_browser_read, from_browser_write))
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session = ""

    def __enter__(self) -> DevTools:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def _message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise AssertionError("no answer from chromium over the DevTools pipe")
            chunk = os.read(self._read, 1 << 16)
            if not chunk:
                raise AssertionError("chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        found: dict[str, Any] = json.loads(raw)
        return found

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command (to the page once attached) and wait for its reply, keeping events on the way."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if self.session and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            for index, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(index)
            self.events.append(self._message(deadline))

    def open(self, url: str, width: int, height: int) -> None:
        """A new page of ``width`` x ``height`` CSS pixels (a phone's when narrow) showing ``url``, loaded."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=width < 600)
        self.call("Network.enable")
        self.call("Page.enable")
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        reply = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in reply:
            raise AssertionError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def requested(self) -> list[str]:
        """The URLs the page asked the network for (``Network.requestWillBeSent`` events so far)."""
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                self.call("Browser.close")
        except (AssertionError, OSError):
            pass
        finally:
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            os.close(self._write)
            os.close(self._read)


def _as_3_and_4(read_end: int, write_end: int) -> None:
    """In the child before exec: the browser's command pipe on fd 3, its reply pipe on fd 4."""
    read_copy, write_copy = os.dup(read_end), os.dup(write_end)  # out of the way of 3 and 4
    os.dup2(read_copy, 3)
    os.dup2(write_copy, 4)
