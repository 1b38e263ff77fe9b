"""The fast date reader agrees with strptime everywhere it answers."""

import calendar
import random
import time

import pytest

from jufo.io.dates import FORMATS, _fast, parse_date


def test_fast_path_agrees_with_strptime():
    rng = random.Random(7)
    for _ in range(20000):
        t = rng.randint(-31536000, 3124137599)  # the range a two-digit year can spell
        for _, fmt in FORMATS:
            text = time.strftime(fmt, time.gmtime(t))
            assert _fast(text) == (calendar.timegm(time.strptime(text, fmt)), fmt), text


@pytest.mark.parametrize("text", ["2012-02-30 00:00:00", "2013-02-29 00:00:00", "13/01/12-00:00:00",
                                  "2012-01-01 24:00:00", "2012-1-01 00:00:00", "2012/01/01 00:00:00"])
def test_invalid_dates_refused(text):
    assert _fast(text) is None
    with pytest.raises(ValueError):
        parse_date(text)


def test_the_date_writer_agrees_with_format_date():
    """``date_writer`` formats each day once and appends the time: the same text as
    ``format_date`` for every format, across days, years a two-digit year cannot spell
    (written as YYYY-MM-DD) and before 1970; other formats are passed to ``format_date``."""
    from jufo.io.dates import date_writer, format_date

    rng = random.Random(11)
    for fmt in [f for _, f in FORMATS] + ["%d.%m.%Y %H:%M", "%j %H:%M:%S"]:
        write = date_writer(fmt)
        day = rng.randint(-10**9, 4 * 10**9)
        for t in [rng.randint(-3 * 10**9, 5 * 10**9) for _ in range(3000)] + [day + i * 997 for i in range(300)]:
            assert write(t) == format_date(t, fmt), (fmt, t)
