"""Start windows: the times of the week at which a job may start.

Many centres only start long jobs at night or at weekends (KTH's SP2: at most 4 h on weekday
daytime, and no job across 07:00 or 16:00); the batch system holds such jobs back although
they would fit. A ``WeeklyWindows`` table says, per *wall class* (requested run time in
powers of two hours) and *slot* (hour of the day on Mon–Fri, Saturday or Sunday), whether a
job may start. The simulation asks ``next_start(job, t)``: the earliest time at or after ``t``
(seconds from time zero) at which the job may start.

Weekdays and hours are those of the snapshot's own clock (dates are read as wall-clock time).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .job import Job

HOUR, DAY, WEEK = 3600, 86400, 7 * 86400
CLASS_EDGES = (1, 2, 4, 8, 16, 32, 64)  # hours: class c holds walls in (edge[c-1], edge[c]]
CLASSES = len(CLASS_EDGES) + 1
DAY_TYPES = ("Mon-Fri", "Sat", "Sun")
SLOTS = 24 * len(DAY_TYPES)


def wall_class(wall: int) -> int:
    """Class of a requested run time: 0 for ≤ 1 h, 1 for ≤ 2 h, …, 7 for more than 64 h.

    >>> [wall_class(w) for w in (60, 3600, 3601, 4 * 3600, 100 * 3600)]
    [0, 0, 1, 2, 7]
    """
    return bisect_left(CLASS_EDGES, wall / HOUR)


def class_label(c: int) -> str:
    """Human text for a wall class.

    >>> class_label(0), class_label(3), class_label(7)
    ('jobs of up to 1 h', 'jobs of 4-8 h', 'jobs of more than 64 h')
    """
    if c == 0:
        return f"jobs of up to {CLASS_EDGES[0]} h"
    if c >= len(CLASS_EDGES):
        return f"jobs of more than {CLASS_EDGES[-1]} h"
    return f"jobs of {CLASS_EDGES[c - 1]}-{CLASS_EDGES[c]} h"


def hour_of_week(epoch: int) -> int:
    """0 = Monday 00:00-00:59 … 167 = Sunday 23:00-23:59 (1970-01-01 was a Thursday).

    >>> hour_of_week(0), hour_of_week(4 * DAY + 3 * HOUR)
    (72, 3)
    """
    return ((epoch // DAY + 3) % 7) * 24 + epoch % DAY // HOUR


def slot_of(epoch: int) -> int:
    """Slot of an instant: the hour of the day on Mon-Fri (0-23), Saturday (24-47), Sunday (48-71).

    >>> slot_of(4 * DAY + 9 * HOUR), slot_of(2 * DAY + 9 * HOUR), slot_of(3 * DAY)
    (9, 33, 48)
    """
    day = (epoch // DAY + 3) % 7
    return (0 if day < 5 else day - 4) * 24 + epoch % DAY // HOUR


def _slot_of_hour(how: int) -> int:
    day, hour = divmod(how, 24)
    return (0 if day < 5 else day - 4) * 24 + hour


class StartRule(Protocol):
    """What the simulation asks of a start policy that depends on the time. Answers must be
    monotone in the request: a job no smaller and no shorter of the same queue never may
    start where a smaller one may not (the per-pass failure memo relies on it)."""

    def next_start(self, job: Job, t: int) -> int | None:
        """Earliest time ≥ ``t`` at which ``job`` may start; None: never."""

    def boundary_after(self, t: int) -> int | None:
        """The next time after ``t`` at which some answer of ``next_start`` may change."""

    def why(self, job: Job) -> str:
        """Why ``job`` may not start at some times (for its reason)."""


class WeeklyWindows:
    """Closed (wall class, slot) pairs over a week, for a snapshot whose time zero is ``epoch``.

    Closing is monotone: a slot closed to a class is closed to every longer class too.

    >>> w = WeeklyWindows({(3, h) for h in range(0, 16)}, epoch=4 * DAY)  # Monday 00:00
    >>> w.start_after(5 * HOUR, 2 * HOUR)  # a 5 h job at Monday 02:00 waits until 16:00
    57600
    >>> w.start_after(HOUR, 2 * HOUR), w.start_after(5 * HOUR, 17 * HOUR)
    (7200, 61200)
    >>> w.boundary_after(2 * HOUR)
    57600
    """

    def __init__(self, closed: Iterable[tuple[int, int]], epoch: int, source: str = "learned from history") -> None:
        self.epoch = epoch
        self.source = source
        table = [[False] * SLOTS for _ in range(CLASSES)]
        for c, s in closed:
            for longer in range(c, CLASSES):
                table[longer][s] = True
        for c in range(CLASSES):  # a class closed everywhere says nothing usable: leave it open
            if all(table[c]):
                table[c] = [False] * SLOTS
        self.closed = table
        # per class and hour of the week: hours until the class may start (None: never)
        self._wait: list[list[int]] = []
        changes: set[int] = set()
        for c in range(CLASSES):
            open_hours = [not table[c][_slot_of_hour(h)] for h in range(168)]
            wait = [0] * 168
            for h in range(168):
                k = 0
                while not open_hours[(h + k) % 168]:
                    k += 1
                wait[h] = k
            self._wait.append(wait)
            changes.update(h for h in range(168) if open_hours[h] != open_hours[h - 1])
        self._changes = sorted(changes)

    @property
    def active(self) -> bool:
        """Does the table hold any job back?"""
        return bool(self._changes)

    def next_start(self, job: Job, t: int) -> int | None:
        return self.start_after(job.wall, t)

    def start_after(self, wall: int, t: int) -> int:
        """Earliest time ≥ ``t`` at which a job of ``wall`` seconds may start.  O(1)."""
        wait = self._wait[wall_class(wall)][hour_of_week(self.epoch + t)]
        if not wait:
            return t
        return t - (self.epoch + t) % HOUR + wait * HOUR

    def boundary_after(self, t: int) -> int | None:
        """O(log changes)."""
        if not self._changes:
            return None
        how = hour_of_week(self.epoch + t)
        i = bisect_right(self._changes, how)
        ahead = (self._changes[i] - how) if i < len(self._changes) else (self._changes[0] + 168 - how)
        return t - (self.epoch + t) % HOUR + ahead * HOUR

    def why(self, job: Job) -> str:
        c = wall_class(job.wall)
        return f"Window: {class_label(c)} do not start {self.describe(c)} ({self.source})"

    def describe(self, c: int) -> str:
        """The closed hours of one class, e.g. ``Mon-Fri 00:00-16:00, Sat 05:00-06:00``."""
        parts = []
        for d, name in enumerate(DAY_TYPES):
            row = self.closed[c][d * 24:(d + 1) * 24]
            h = 0
            while h < 24:
                if row[h]:
                    end = h
                    while end < 24 and row[end]:
                        end += 1
                    parts.append(f"{name} {h:02d}:00-{end:02d}:00")
                    h = end
                else:
                    h += 1
        return "on " + ", ".join(parts) if parts else "never"

    def rows(self) -> list[tuple[str, str]]:
        """(class, closed hours) for every class with closed hours, for ``history show``."""
        out = []
        for c in range(CLASSES):
            if any(self.closed[c]) and (c == 0 or self.closed[c] != self.closed[c - 1]):
                who = "all jobs" if c == 0 else f"jobs of more than {CLASS_EDGES[c - 1]} h"
                out.append((who, self.describe(c)))
        return out
