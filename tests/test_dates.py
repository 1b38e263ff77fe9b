"""The fast date reader agrees with strptime everywhere it answers."""

import calendar
import random
import time

import pytest

from jufo.dates import FORMATS, _fast, parse_date


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
