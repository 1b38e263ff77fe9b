"""Numbers and sizes read from input: whole, finite, and within what a machine can mean.

Every count, duration and size in a snapshot, trace or option passes through here, so a tiny
input cannot ask for gigabytes (``ncores="1e10"``) or overflow later arithmetic (``wall=1e17``),
and ``inf``/``nan``/400-digit values are a clear error naming the key instead of a crash.
"""

from __future__ import annotations

import math

MAX_CORES_PER_NODE = 1 << 20  # far beyond any node; a core mask of this size is 128 KiB
MAX_NODES = 10_000_000  # far beyond any machine (Fugaku: 158,976 nodes)
MAX_COUNT = 1 << 40  # any other count: cores of a job, GPUs, tasks
MAX_SECONDS = 100 * 366 * 86400  # a wall or run time of a century
LATEST_EPOCH = 221845392000  # 9000-01-01: room for a century of walls before the year 9999
MAX_MEMORY_MB = 1 << 40  # an exabyte
MAX_INPUT_BYTES = 1 << 30  # an input file; LML of 100,000 nodes is a few hundred MB
_MAX_DIGITS = 40


def whole(text: str, lo: int = 0, hi: int = MAX_COUNT) -> int:
    """A whole number written as ``16`` or ``16.000``, within ``[lo, hi]``; ValueError saying why.

    >>> whole("16.000"), whole(" 7 ")
    (16, 7)
    >>> for bad in ("inf", "nan", "1e10", "2.5", "9" * 400):
    ...     try:
    ...         whole(bad, 1, 1000)
    ...     except ValueError as err:
    ...         print(err)
    not a finite number
    not a finite number
    more than 1,000
    not a whole number
    too long for a number
    """
    n = int(text) if plain_digits(text) else _number(text)
    if n < lo:
        raise ValueError(f"less than {lo:,}")
    if n > hi:
        raise ValueError(f"more than {hi:,}")
    return n


def plain_digits(text: str) -> bool:
    """Is ``text`` the usual spelling of a count or duration, ASCII digits only and short
    enough for ``int`` to read at once?  Callers skip their general parser then.

    >>> plain_digits("16"), plain_digits(" 16"), plain_digits("١٦"), plain_digits("9" * 19)
    (True, False, False, False)
    """
    return text.isdigit() and text.isascii() and len(text) <= 18


def _number(text: str) -> int:
    """``whole`` for any spelling but plain digits: signs, blanks, ``16.000``, and what is bad."""
    text = text.strip()
    if len(text) > _MAX_DIGITS:
        raise ValueError("too long for a number")
    try:
        value = float(text)
    except ValueError:
        raise ValueError("not a number") from None
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    if value != int(value):
        raise ValueError("not a whole number")
    return int(value)


def read_limited(fh, source: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """All of a binary stream; InputError for one larger than ``limit`` bytes (``/dev/zero``)."""
    from .errors import InputError

    buf = bytearray()
    while len(buf) <= limit:  # in chunks: read(limit) would reserve the whole limit at once
        chunk = fh.read(1 << 20)
        if not chunk:
            return bytes(buf)
        buf += chunk
    raise InputError(source, None, None, f"larger than {limit // 2**20:,} MiB: not a file jufo reads")


def count_of(obj, key: str, default: int, lo: int = 0, hi: int = MAX_COUNT) -> int:
    """``obj.data[key]`` of an LML object as ``whole`` (``default`` when missing or empty);
    InputError naming the object, key and value otherwise."""
    from .errors import InputError

    raw = obj.data.get(key)
    if raw is None or not raw.strip():
        return default
    try:
        return whole(raw, lo, hi)
    except ValueError as err:
        raise InputError(obj.label, key, raw, str(err)) from None
