"""Dates in LML: the three accepted spellings, conversion to epoch seconds and back.

Snapshots carry no time zone, so every date is read and written as UTC wall-clock time;
only differences matter to the simulation, and writing back in the same convention keeps
the output's dates in the snapshot's own clock.
"""

from __future__ import annotations

import calendar
import re
import time

# (pattern, strftime format) in the order they are tried.
FORMATS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\d\d/\d\d/\d\d-\d\d:\d\d:\d\d"), "%m/%d/%y-%H:%M:%S"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"), "%Y-%m-%d %H:%M:%S"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"), "%Y-%m-%dT%H:%M:%S"),
)
DEFAULT_FORMAT = FORMATS[0][1]


def parse_date(text: str) -> tuple[int, str]:
    """Epoch seconds of ``text`` and the strftime format it was written in; ValueError if none fits.

    >>> parse_date("01/02/12-15:00:00")
    (1325516400, '%m/%d/%y-%H:%M:%S')
    >>> parse_date("2012-01-02T15:00:00")[0]
    1325516400
    """
    text = text.strip()
    for pattern, fmt in FORMATS:
        if pattern.fullmatch(text):
            try:
                return calendar.timegm(time.strptime(text, fmt)), fmt
            except ValueError as err:
                raise ValueError(f"not a valid date ({err})") from None
    raise ValueError("not a date in a known format (MM/DD/YY-HH:MM:SS, YYYY-MM-DD HH:MM:SS, YYYY-MM-DDTHH:MM:SS)")


def format_date(epoch: int, fmt: str) -> str:
    """Write epoch seconds in ``fmt``.

    >>> format_date(1325516405, "%m/%d/%y-%H:%M:%S")
    '01/02/12-15:00:05'
    """
    return time.strftime(fmt, time.gmtime(epoch))


_DURATION = re.compile(r"(?:(\d+)-)?(\d+):(\d\d):(\d\d)")


def parse_seconds(text: str) -> int:
    """A duration: whole seconds (``3600``, ``3600.0``), ``HH:MM:SS`` or ``D-HH:MM:SS``.

    ValueError for anything else, negative values included.

    >>> parse_seconds("90"), parse_seconds("01:00:00"), parse_seconds("1-00:00:10")
    (90, 3600, 86410)
    """
    text = text.strip()
    m = _DURATION.fullmatch(text)
    if m:
        days = int(m.group(1) or 0)
        return ((days * 24 + int(m.group(2))) * 60 + int(m.group(3))) * 60 + int(m.group(4))
    value = float(text)  # ValueError propagates
    if value != value or value < 0 or value in (float("inf"),):
        raise ValueError("not a non-negative number of seconds")
    if value != int(value):
        raise ValueError("not a whole number of seconds")
    return int(value)
