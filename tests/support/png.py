"""A small PNG reader for the browser tests: enough to tell a rendered page from a blank one.

Reads 8-bit greyscale/RGB/RGBA, non-interlaced images (what Chromium's screenshots are),
undoing the five row filters of the PNG specification; stdlib only (zlib).
"""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from pathlib import Path
from typing import NamedTuple

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type -> samples per pixel


class Image(NamedTuple):
    """Decoded pixels: ``rows`` of ``width * channels`` bytes each."""

    width: int
    height: int
    channels: int
    rows: list[bytes]

    def pixels(self, step: int = 1) -> Counter[bytes]:
        """How often each colour occurs (every ``step``-th pixel of every ``step``-th row)."""
        size = self.channels
        found: Counter[bytes] = Counter()
        for row in self.rows[::step]:
            found.update(row[i:i + size] for i in range(0, len(row), size * step))
        return found


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _unfilter(kind: int, line: bytearray, prior: bytes, bpp: int) -> bytes:
    if kind == 0:
        return bytes(line)
    if kind == 2:
        return bytes((x + y) & 0xFF for x, y in zip(line, prior, strict=True))
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + ((left + prior[i]) >> 1)) & 0xFF
        elif kind == 4:
            line[i] = (line[i] + _paeth(left, prior[i], prior[i - bpp] if i >= bpp else 0)) & 0xFF
        else:
            raise ValueError(f"unknown PNG row filter {kind}")
    return bytes(line)


def read_png(path: Path) -> Image:
    data = path.read_bytes()
    if not data.startswith(SIGNATURE):
        raise ValueError(f"{path}: not a PNG")
    offset, idat, header = len(SIGNATURE), [], b""
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        chunk = data[offset + 8:offset + 8 + length]
        offset += 12 + length
        if kind == b"IHDR":
            header = chunk
        elif kind == b"IDAT":
            idat.append(chunk)
        elif kind == b"IEND":
            break
    width, height, depth, colour, _compression, _filter, interlace = struct.unpack(">IIBBBBB", header)
    if depth != 8 or interlace or colour not in CHANNELS:
        raise ValueError(f"{path}: only 8-bit non-interlaced PNGs are read here")
    channels = CHANNELS[colour]
    stride = width * channels
    raw = zlib.decompress(b"".join(idat))
    rows: list[bytes] = []
    prior = bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        prior = _unfilter(raw[start], bytearray(raw[start + 1:start + 1 + stride]), prior, channels)
        rows.append(prior)
    return Image(width, height, channels, rows)
