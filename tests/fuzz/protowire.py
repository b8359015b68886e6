"""Protobuf wire surgery for fuzzing a protobuf reader: messages split into fields and joined again,
mutated byte-wise or field-wise at any depth with the lengths around a change kept right (so the
change can sit deep), and a failing body shrunk field by field, then byte by byte.

Used by ``tests/fuzz/fuzz_views.py``; knows nothing of OTLP beyond a few names and numbers it likes
to try (``NUMBERS``, ``STRINGS``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator


def _varint(value: int) -> bytes:
    """``value`` as a protobuf varint (two's complement, 10 bytes, for a negative one). Written here, not
    imported from the tests: importing them imports the decoder, which must load the extension under test."""
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_varint(data: bytes, at: int) -> tuple[int, int] | None:
    value = 0
    for i in range(10):
        if at + i >= len(data):
            return None
        value |= (data[at + i] & 0x7F) << (7 * i)
        if data[at + i] < 0x80:
            return value & (2**64 - 1), at + i + 1
    return None


Field = tuple[bytes, int, bytes]  # (tag bytes, wire type or -1 for bytes already encoded, value)


def split(data: bytes) -> list[Field] | None:
    """A message's fields, None when ``data`` does not split cleanly."""
    fields: list[Field] = []
    at = 0
    while at < len(data):
        tag = _read_varint(data, at)
        if tag is None:
            return None
        wire, start = tag[0] & 7, tag[1]
        if wire in (0, 2):
            number = _read_varint(data, start)
            if number is None:
                return None
            begin, end = (start, number[1]) if wire == 0 else (number[1], number[1] + number[0])
        elif wire in (1, 5):
            begin, end = start, start + (8 if wire == 1 else 4)
        elif wire in (3, 4):
            begin = end = start
        else:
            return None
        if end > len(data):
            return None
        fields.append((data[at:start], wire, data[begin:end]))
        at = end
    return fields


def join(fields: list[Field]) -> bytes:
    return b"".join(tag + (_varint(len(value)) if wire == 2 else b"") + value for tag, wire, value in fields)


NUMBERS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 16, 31, 32, 33, 2**29 - 1)
STRINGS = (b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xed\x9f\xbf", b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80",
           b"\xe0\x9f\xbf", b"\xf0\x8f\xbf\xbf", b"\xc3", "\u00e9".encode(), b"", b"gen_ai.request.model", b"tenant.id")
SIZES = (0, 1, 2**31 - 1, 2**31, 2**32, 2**32 + 1, 2**63, 2**64 - 1)


def _tag(rng: random.Random, number: int, wire: int) -> bytes:
    tag = _varint(number << 3 | wire)
    pad = rng.choice((0, 0, 0, 5 - len(tag), 6 - len(tag)))  # overlong: 5 bytes is upb's most, 6 too many
    return tag if pad <= 0 else bytes(b | 0x80 for b in tag) + b"\x80" * (pad - 1) + b"\x00"


def _value(rng: random.Random, wire: int) -> bytes:
    if wire == 0:
        return rng.choice((_varint(rng.getrandbits(64)), b"\xff" * 9 + b"\x01", b"\xff" * 10 + b"\x01", b"\x80\x00"))
    return rng.randbytes({1: 8, 5: 4}.get(wire, rng.choice((0, 1, 3))))


def _mutate_level(fields: list[Field], rng: random.Random, donors: list[bytes]) -> list[Field]:
    """One field-wise change to a message's fields."""
    at = rng.randrange(len(fields) + 1)
    op = rng.randrange(11)
    if op == 0 and fields:
        del fields[at % len(fields)]
    elif op == 1 and fields:
        fields.insert(at, fields[rng.randrange(len(fields))])
    elif op == 2:
        rng.shuffle(fields)
    elif op == 3:  # a value from another body, at any depth
        donor = split(rng.choice(donors)) or []
        while donor and rng.random() < 0.7:
            inner = [f for f in donor if f[1] == 2]
            donor = split(rng.choice(inner)[2]) or [] if inner else []
        if donor:
            fields.insert(at, rng.choice(donor))
    elif op == 4:
        fields.insert(at, (_tag(rng, rng.choice(NUMBERS), 2), 2, rng.choice(STRINGS)))
    elif op == 5:  # a known or unknown number under any wire type
        wire = rng.choice((0, 1, 2, 5, 6, 7))
        fields.insert(at, (_tag(rng, rng.choice(NUMBERS), wire), -1 if wire > 5 else wire, _value(rng, wire)))
    elif op == 6:  # groups around the fields that follow: matched, or cut, or ending another number
        number, depth = rng.choice(NUMBERS), rng.choice((1, 2, rng.randrange(1, 105)))
        ends = (_tag(rng, number, 4), _tag(rng, number + 1, 4), b"")
        body = _tag(rng, number, 3) * depth + join(fields[at:]) + rng.choice(ends) * depth
        fields[at:] = [(b"", -1, body)]
    elif op == 7:  # submessages around a field, 1-100 deep (an AnyValue in arrays reads as one)
        if fields:
            tag, wire, value = fields[at % len(fields)]
            inner = join([(tag, wire, value)])
            for _ in range(rng.choice((1, 2, rng.randrange(1, 60)))):
                inner = b"\x2a" + _varint(len(join([(b"\x0a", 2, inner)]))) + join([(b"\x0a", 2, inner)])
            fields[at % len(fields)] = (b"", -1, inner)
    elif op == 8 and fields:  # a length that lies, enclosed in right ones
        tag, wire, value = fields[at % len(fields)]
        size = rng.choice((*SIZES, len(value) + 1, max(len(value) - 1, 0)))
        fields[at % len(fields)] = (b"", -1, _tag(rng, rng.choice(NUMBERS), 2) + _varint(size) + value)
    elif op == 9:
        fields.insert(at, (_tag(rng, rng.choice(NUMBERS), rng.choice((3, 4))), -1, b""))
    elif fields:  # cut a field's value short
        tag, wire, value = fields[at % len(fields)]
        fields[at % len(fields)] = (b"", -1, join([(tag, wire, value)])[: rng.randrange(1 + len(value) + len(tag))])
    return fields


def _mutate_message(data: bytes, rng: random.Random, donors: list[bytes]) -> bytes | None:
    fields = split(data)
    if fields is None:
        return None
    inner = [i for i, (_, wire, value) in enumerate(fields) if wire == 2 and value]
    if inner and rng.random() < 0.75:  # go down a submessage, keeping the lengths around it right
        i = rng.choice(inner)
        changed = _mutate_message(fields[i][2], rng, donors)
        if changed is not None:
            fields[i] = (fields[i][0], 2, changed)
            return join(fields)
    return join(_mutate_level(fields, rng, donors))


def _mutate_bytes(data: bytes, rng: random.Random, donors: list[bytes]) -> bytes:
    buf = bytearray(data)
    at = rng.randrange(len(buf) + 1)
    op = rng.randrange(6)
    if op == 0 and buf:
        buf[at % len(buf)] ^= 1 << rng.randrange(8)
    elif op == 1 and buf:
        buf[at % len(buf)] = rng.choice((0x00, 0x01, 0x7F, 0x80, 0xFF, rng.randrange(256)))
    elif op == 2:
        buf[at:at] = rng.randbytes(rng.randrange(1, 8))
    elif op == 3:
        del buf[at : at + rng.randrange(1, 16)]
    elif op == 4:
        buf[at:at] = rng.choice((_varint(rng.choice(SIZES)), b"\xff" * 10 + b"\x01", *STRINGS))
    else:
        donor = rng.choice(donors)
        buf[at:] = donor[rng.randrange(len(donor) + 1) :]
    return bytes(buf)


def mutate(data: bytes, rng: random.Random, donors: list[bytes], most: int = 1 << 20) -> bytes:
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        changed = _mutate_message(data, rng, donors) if rng.random() < 0.65 else None
        data = changed if changed is not None else _mutate_bytes(data, rng, donors)
    return data[:most]


def without_a_field(data: bytes) -> Iterator[bytes]:
    """``data`` less one field, at any depth (the lengths around it kept right)."""
    fields = split(data) or []
    for i in range(len(fields)):
        yield join(fields[:i] + fields[i + 1 :])
    for i, (tag, wire, value) in enumerate(fields):
        if wire == 2:
            for smaller in without_a_field(value):
                yield join([*fields[:i], (tag, 2, smaller), *fields[i + 1 :]])


def shrink(body: bytes, fails: Callable[[bytes], bool]) -> bytes:
    """A smaller body that still fails: fields deleted, then chunks of bytes, halving their size."""
    while (smaller := next((b for b in without_a_field(body) if fails(b)), None)) is not None:
        body = smaller
    size = max(len(body) // 2, 1)
    while size >= 1:
        at = 0
        while at < len(body):
            smaller = body[:at] + body[at + size :]
            if fails(smaller):
                body = smaller
            else:
                at += size
        size //= 2
    return body


__all__ = ["Field", "join", "mutate", "shrink", "split", "without_a_field"]
