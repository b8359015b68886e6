"""Request bodies for the OTLP/HTTP server: framing (length or chunked) and capped inflate.

Every reader stops at the cap: ``BodyTooLarge`` (HTTP 413) is raised on a
declared ``Content-Length`` over it before reading, on chunks adding up past
it, and while inflating, so a gzip bomb stops at the cap. ``BadBody`` (HTTP
400) is bad framing or a corrupt compressed body; ``LengthRequired`` (HTTP
411) a body with neither ``Content-Length`` nor chunked framing. A reader
returns None when the client went away mid-body.
"""

from __future__ import annotations

import zlib
from email.message import Message
from io import BufferedIOBase

GZIP_WBITS = 16 + zlib.MAX_WBITS
ZLIB_WBITS = zlib.MAX_WBITS
_INFLATE_STEP = 1 << 20


class BodyTooLarge(Exception):
    """The (decompressed) body is over the cap: HTTP 413."""


class BadBody(Exception):
    """Bad framing or a corrupt compressed body: HTTP 400."""


class LengthRequired(BadBody):
    """Neither Content-Length nor chunked framing: HTTP 411."""


def inflate_capped(data: bytes, wbits: int, cap: int) -> bytes:
    """Decompress at most ``cap`` bytes; ``BodyTooLarge`` beyond, ``BadBody`` if corrupt."""
    inflater = zlib.decompressobj(wbits)
    out = bytearray()
    pending = data
    try:
        while pending:
            room = cap + 1 - len(out)
            out += inflater.decompress(pending, min(room, _INFLATE_STEP))
            if len(out) > cap:
                raise BodyTooLarge
            pending = inflater.unconsumed_tail
            if inflater.eof:
                break
        if not inflater.eof:
            out += inflater.flush()
            if len(out) > cap:
                raise BodyTooLarge
            if not inflater.eof:
                raise BadBody("truncated compressed body")
    except zlib.error:
        raise BadBody("corrupt compressed body") from None
    if inflater.unused_data.strip(b"\x00"):
        raise BadBody("trailing data after the compressed body")
    return bytes(out)


def read_body(headers: Message, rfile: BufferedIOBase, cap: int) -> bytes | None:
    """The request body as framed by ``headers``; every raise ends the connection."""
    if "chunked" in (headers.get("Transfer-Encoding") or "").lower():
        return read_chunked(rfile, cap)
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


def read_chunked(rfile: BufferedIOBase, cap: int) -> bytes | None:
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
        chunk = rfile.read(size)
        if len(chunk) != size:
            return None
        out += chunk
        if rfile.readline(8) not in (b"\r\n", b"\n"):
            raise BadBody("bad chunk framing")


__all__ = [
    "GZIP_WBITS",
    "ZLIB_WBITS",
    "BadBody",
    "BodyTooLarge",
    "LengthRequired",
    "inflate_capped",
    "read_body",
    "read_chunked",
]
