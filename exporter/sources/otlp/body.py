"""Request bodies for the OTLP/HTTP server: framing (length or chunked) and capped inflate.

Every reader stops at the cap: ``BodyTooLarge`` (HTTP 413) is raised on a
declared ``Content-Length`` over it before reading, on chunks adding up past
it, and while inflating, so a gzip bomb stops at the cap. ``BadBody`` (HTTP
400) is bad framing or a corrupt compressed body; ``LengthRequired`` (HTTP
411) a body with neither ``Content-Length`` nor chunked framing. A reader
returns None when the client went away mid-body.

Memory: ``ByteBudget`` bounds the bytes every request in flight holds
together. A request reserves what it will hold (``Reservation.grow``) before
reading it: its declared ``Content-Length``, each chunk of a chunked body,
each step of an inflate, and the decode working set (``DECODE_FACTOR`` times
the decoded size); ``OverBudget`` (HTTP 503 + ``Retry-After``) when the budget
cannot cover it. A request alone in flight is always admitted, so a body up
to ``max_body_bytes`` is never refused forever.
"""

from __future__ import annotations

import threading
import zlib
from email.message import Message
from io import BufferedIOBase

GZIP_WBITS = 16 + zlib.MAX_WBITS
ZLIB_WBITS = zlib.MAX_WBITS
_INFLATE_STEP = 1 << 20
# Decoding and mapping a body costs ~8x its size on top of the body itself (measured: one
# 15 MB ExportTraceServiceRequest of 20,000 spans raises the receiver's peak RSS by 125 MiB).
DECODE_FACTOR = 8


class BodyTooLarge(Exception):
    """The (decompressed) body is over the cap: HTTP 413."""


class BadBody(Exception):
    """Bad framing or a corrupt compressed body: HTTP 400."""


class LengthRequired(BadBody):
    """Neither Content-Length nor chunked framing: HTTP 411."""


class OverBudget(Exception):
    """The bytes in flight would pass ``max_inflight_bytes``: HTTP 503 + Retry-After."""


class ByteBudget:
    """Bytes held by requests in flight, capped; a request alone always fits."""

    def __init__(self, limit: int) -> None:
        if limit <= 0:
            raise ValueError("the in-flight byte budget must be positive")
        self.limit = limit
        self._used = 0
        self._holders = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        with self._lock:
            return self._used

    def reservation(self) -> Reservation:
        return Reservation(self)

    def _grow(self, reservation: Reservation, n: int) -> bool:
        """Add ``n`` bytes (negative gives back) to ``reservation``; False if over the limit."""
        with self._lock:
            holder = reservation.held > 0
            if n > 0 and self._used + n > self.limit and self._holders != (1 if holder else 0):
                return False
            self._used += n
            reservation.held += n
            self._holders += (reservation.held > 0) - holder
            return True

    def _release(self, reservation: Reservation) -> None:
        with self._lock:
            if reservation.held:
                self._used -= reservation.held
                self._holders -= 1
                reservation.held = 0


class Reservation:
    """One request's share of a ``ByteBudget``; ``release`` (or ``with``) gives it back."""

    def __init__(self, budget: ByteBudget) -> None:
        self.budget = budget
        self.held = 0

    def grow(self, n: int) -> None:
        """Reserve ``n`` more bytes (a negative ``n`` gives some back), or raise ``OverBudget``."""
        n = max(n, -self.held)
        if n and not self.budget._grow(self, n):
            raise OverBudget

    def release(self) -> None:
        self.budget._release(self)

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def inflate_capped(
    data: bytes, wbits: int, cap: int, reservation: Reservation | None = None
) -> bytes:
    """Decompress at most ``cap`` bytes; ``BodyTooLarge`` beyond, ``BadBody`` if corrupt.

    With a ``reservation``, each step is reserved before it is inflated
    (``OverBudget`` when it cannot be).
    """
    inflater = zlib.decompressobj(wbits)
    out = bytearray()
    pending = data
    try:
        while pending:
            step = min(cap + 1 - len(out), _INFLATE_STEP)
            if reservation is not None:
                reservation.grow(step)
            before = len(out)
            out += inflater.decompress(pending, step)
            if reservation is not None:
                reservation.grow(len(out) - before - step)  # give back what was not used
            if len(out) > cap:
                raise BodyTooLarge
            pending = inflater.unconsumed_tail
            if inflater.eof:
                break
        if not inflater.eof:
            tail = inflater.flush()
            if reservation is not None:
                reservation.grow(len(tail))
            out += tail
            if len(out) > cap:
                raise BodyTooLarge
            if not inflater.eof:
                raise BadBody("truncated compressed body")
    except zlib.error:
        raise BadBody("corrupt compressed body") from None
    if inflater.unused_data.strip(b"\x00"):
        raise BadBody("trailing data after the compressed body")
    return bytes(out)


def read_body(
    headers: Message, rfile: BufferedIOBase, cap: int, reservation: Reservation | None = None
) -> bytes | None:
    """The request body as framed by ``headers``; every raise ends the connection.

    A ``Content-Length`` body is reserved by the caller before this is called
    (so it can refuse without reading); a chunked one is reserved chunk by
    chunk here.
    """
    if "chunked" in (headers.get("Transfer-Encoding") or "").lower():
        return read_chunked(rfile, cap, reservation)
    length_header = headers.get("Content-Length")
    if length_header is None:
        raise LengthRequired("Content-Length or chunked Transfer-Encoding is required")
    try:
        length = int(length_header)
    except ValueError:
        raise BadBody("Content-Length is not a number") from None
    if length < 0:
        raise BadBody("Content-Length is negative")
    if length > cap:
        raise BodyTooLarge
    data = rfile.read(length)
    return data if len(data) == length else None


def declared_length(headers: Message) -> int | None:
    """The ``Content-Length`` of a body that is not chunked, when it is a valid number."""
    if "chunked" in (headers.get("Transfer-Encoding") or "").lower():
        return None
    try:
        length = int(headers.get("Content-Length") or "")
    except ValueError:
        return None
    return length if length >= 0 else None


def read_chunked(
    rfile: BufferedIOBase, cap: int, reservation: Reservation | None = None
) -> bytes | None:
    """A chunked body, trailers skipped."""
    out = bytearray()
    while True:
        line = rfile.readline(1024)
        if not line:
            return None
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise BadBody("bad chunk size") from None
        if size < 0:
            raise BadBody("bad chunk size")
        if size == 0:
            while True:  # trailers up to the blank line
                trailer = rfile.readline(8192)
                if not trailer:
                    return None
                if trailer in (b"\r\n", b"\n"):
                    return bytes(out)
        if len(out) + size > cap:
            raise BodyTooLarge
        if reservation is not None:
            reservation.grow(size)
        chunk = rfile.read(size)
        if len(chunk) != size:
            return None
        out += chunk
        if rfile.readline(8) not in (b"\r\n", b"\n"):
            raise BadBody("bad chunk framing")


__all__ = [
    "DECODE_FACTOR",
    "GZIP_WBITS",
    "ZLIB_WBITS",
    "BadBody",
    "BodyTooLarge",
    "ByteBudget",
    "LengthRequired",
    "OverBudget",
    "Reservation",
    "declared_length",
    "inflate_capped",
    "read_body",
    "read_chunked",
]
