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
    return second_of_week(epoch) // HOUR


def slot_of(epoch: int) -> int:
    """Slot of an instant: the hour of the day on Mon-Fri (0-23), Saturday (24-47), Sunday (48-71).

    >>> slot_of(4 * DAY + 9 * HOUR), slot_of(2 * DAY + 9 * HOUR), slot_of(3 * DAY)
    (9, 33, 48)
    """
    day = (epoch // DAY + 3) % 7
    return (0 if day < 5 else day - 4) * 24 + epoch % DAY // HOUR


def second_of_week(epoch: int) -> int:
    """Seconds since Monday 00:00 (1970-01-01 was a Thursday).

    >>> second_of_week(0) == 3 * DAY, second_of_week(4 * DAY + 90)
    (True, 90)
    """
    return (epoch + 3 * DAY) % WEEK


def _ahead(points: list[int], x: int, period: int) -> int:
    """How far past ``x`` the next of the sorted ``points`` of a cycle of ``period`` lies.

    >>> _ahead([2, 5], 3, 7), _ahead([2, 5], 5, 7), _ahead([2, 5], 6, 7)
    (2, 4, 3)
    """
    i = bisect_right(points, x)
    return (points[i] - x) if i < len(points) else (points[0] + period - x)


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
        return t - (self.epoch + t) % HOUR + _ahead(self._changes, how, 168) * HOUR

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


# -- configured windows: a queue's opening hours and size caps by time of day ---------------------

DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
MINUTE = 60
UNCAPPED = 1 << 62


def parse_spans(text: str, with_value: bool = False) -> list[tuple[int, int, int]]:
    """``Mon-Fri 08:00-18:00, Sat 00:00-24:00`` as (start, end, value) in seconds of the week
    (Monday 00:00 = 0); a span crossing midnight (``22:00-06:00``) ends the next day. With
    ``with_value`` each span ends in ``:N`` (``Mon-Fri 08:00-18:00:64``) and a bare ``N``
    means all week. ValueError saying what is wrong.

    >>> parse_spans("Mon-Fri 08:00-18:00")[:2]
    [(28800, 64800, 0), (115200, 151200, 0)]
    >>> parse_spans("Sun 22:00-06:00")
    [(597600, 626400, 0)]
    >>> parse_spans("Sat 08:00-18:00:64, 16", True)[1]
    (0, 604800, 16)
    """
    spans = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        value = 0
        if with_value:
            body, _, number = part.rpartition(":")
            hours = part.partition(" ")[2]
            if not number.strip().isdigit() or (hours and hours.count(":") != 3):
                raise ValueError(f"{part!r}: ends in :N, the nodes allowed then (e.g. Mon-Fri 08:00-18:00:64)")
            value = int(number)
            if not body.strip():
                spans.append((0, WEEK, value))
                continue
            part = body.strip()
        days, _, hours = part.partition(" ")
        first, last = _days(days, part)
        lo, hi = _hours(hours.strip(), part)
        if hi <= lo:
            hi += DAY  # over midnight
        d = first
        while True:
            spans.append((d * DAY + lo, d * DAY + hi, value))
            if d == last:
                break
            d = (d + 1) % 7
    if not spans:
        raise ValueError(f"no span in {text!r} (e.g. {'Mon-Fri 08:00-18:00' + (':64' if with_value else '')})")
    return spans


def _days(text: str, part: str) -> tuple[int, int]:
    names = [d.lower() for d in DAY_NAMES]
    if text.lower() in ("daily", "mon-sun", "*"):
        return 0, 6
    first, _, last = text.partition("-")
    try:
        a = names.index(first.strip().lower()[:3]) if len(first.strip()) >= 3 else -1
        b = names.index(last.strip().lower()[:3]) if last else a
    except ValueError:
        a = b = -1
    if a < 0 or b < 0:
        raise ValueError(f"{part!r}: days as Mon, Mon-Fri, Sat-Sun or daily")
    return a, b


def _hours(text: str, part: str) -> tuple[int, int]:
    try:
        lo, hi = (t.strip() for t in text.split("-"))
        out = []
        for t in (lo, hi):
            h, m = t.split(":")
            if not (h.isdigit() and m.isdigit() and len(m) == 2 and (int(h) < 24 and int(m) < 60 or t == "24:00")):
                raise ValueError
            out.append(int(h) * HOUR + int(m) * MINUTE)
    except ValueError:
        raise ValueError(f"{part!r}: hours as HH:MM-HH:MM (24:00 ends a day)") from None
    return out[0], out[1]


class QueueWindows:
    """Configured start windows of queues (LoadLeveler/Moab class windows, Mallmann's batch
    windows): per queue, the hours it may start jobs (``windows``), a node cap by time of day
    (``maxnodes``), and with ``window_end=strict`` a job must also end before its window
    closes (or its cap falls below its size). Per queue the week is cut into segments of one
    cap (0 = closed); a job of n nodes may start where the cap is at least n (strict: over its
    whole wall). Monotone: a larger or longer job of the same queue never starts earlier.

    >>> from types import SimpleNamespace as J
    >>> w = QueueWindows({"day": ("Mon-Fri 08:00-18:00", None, False)}, epoch=4 * DAY)  # Monday 00:00
    >>> w.next_start(J(queue="day", nodes=1, wall=3600), 0)  # Monday 00:00: waits until 08:00
    28800
    >>> w.next_start(J(queue="night", nodes=1, wall=3600), 0)  # another queue: no window
    0
    """

    def __init__(self, config: dict[str, tuple[str | None, str | None, bool]], epoch: int) -> None:
        self.epoch = epoch
        self.config = config
        self.segments: dict[str, tuple[list[int], list[int]]] = {}  # queue -> (starts, caps)
        for queue, (windows, maxnodes, strict) in config.items():
            cuts = {0}
            opened = parse_spans(windows) if windows else [(0, WEEK, 0)]
            capped = parse_spans(maxnodes, True) if maxnodes else []
            for lo, hi, _ in opened + capped:
                cuts.update((lo % WEEK, hi % WEEK))
            starts = sorted(c for c in cuts if c < WEEK)
            caps = []
            for s in starts:
                cap = UNCAPPED if any(self._inside(s, lo, hi) for lo, hi, _ in opened) else 0
                for lo, hi, n in capped:
                    if self._inside(s, lo, hi):
                        cap = min(cap, n)
                caps.append(cap)
            starts, caps = self._merged(starts, caps)
            self.segments[queue] = (starts, caps)
        # where some queue's cap changes; none if every queue is open and uncapped all week
        self._changes = sorted({s for starts, caps in self.segments.values() if caps != [UNCAPPED] for s in starts})

    @staticmethod
    def _inside(s: int, lo: int, hi: int) -> bool:
        return lo <= s < hi or lo <= s + WEEK < hi

    @staticmethod
    def _merged(starts: list[int], caps: list[int]) -> tuple[list[int], list[int]]:
        out_s, out_c = [], []
        for s, c in zip(starts, caps):
            if not out_c or out_c[-1] != c:
                out_s.append(s)
                out_c.append(c)
        return out_s, out_c

    @property
    def active(self) -> bool:
        return bool(self._changes)

    def _segment(self, queue: str, t: int) -> tuple[list[int], list[int], int, int] | None:
        """The queue's segments, the index of the one holding ``t`` and ``t``'s week start."""
        seg = self.segments.get(queue)
        if seg is None:
            return None
        w = second_of_week(self.epoch + t)
        return seg[0], seg[1], bisect_right(seg[0], w) - 1, t - w

    def _first_open(self, queue: str, size: int, t: int) -> int | None:
        """Earliest time ≥ t where the cap is at least ``size``.  O(segments)."""
        found = self._segment(queue, t)
        if found is None:
            return t
        starts, caps, i, base = found
        for step in range(len(starts) + 1):
            k = (i + step) % len(starts)
            if caps[k] >= size:
                return max(t, base + starts[k] + (i + step) // len(starts) * WEEK)
        return None

    def _first_closed(self, queue: str, size: int, t: int, until: int) -> int | None:
        """First time in ``[t, until)`` where the cap is below ``size``, or None.  O(segments)."""
        starts, caps, i, base = self._segment(queue, t)  # type: ignore[misc]
        n = len(starts)
        step = 0
        while True:
            k, week = (i + step) % n, (i + step) // n
            at = max(t, base + starts[k] + week * WEEK)
            if at >= until:
                return None
            if caps[k] < size:
                return at
            step += 1
            if step > n and until - t > WEEK:  # a whole week without a closed segment
                return None

    def next_start(self, job: Job, t: int) -> int | None:
        """Earliest time ≥ ``t`` at which ``job`` may start; None: never.  O(segments²) at most."""
        config = self.config.get(job.queue)
        if config is None:
            return t
        size = max(job.nodes, 1)
        strict = config[2]
        for _ in range(len(self.segments[job.queue][0]) + 2):
            at = self._first_open(job.queue, size, t)
            if at is None or not strict:
                return at
            closed = self._first_closed(job.queue, size, at, at + max(job.wall, 1))
            if closed is None:
                return at
            t = closed
        return None  # every opening is shorter than the job

    def boundary_after(self, t: int) -> int | None:
        """The next change of any queue's cap after ``t``.  O(log changes)."""
        if not self._changes:
            return None
        return t + _ahead(self._changes, second_of_week(self.epoch + t), WEEK)

    def affects(self, job: Job) -> bool:
        return job.queue in self.config

    def why(self, job: Job) -> str:
        windows, maxnodes, strict = self.config[job.queue]
        parts = []
        if windows:
            parts.append(f"queue {job.queue} starts jobs {windows}")
        if maxnodes:
            parts.append(f"at most these nodes then: {maxnodes} (asks {job.nodes})")
        if strict:
            parts.append("a job must end inside (window_end=strict)")
        never = "never (no opening is long or wide enough): " if self.next_start(job, 0) is None else ""
        return "Window: " + never + "; ".join(parts) + " (queue windows)"


class AllRules:
    """Several start rules at once (configured queue windows and windows learned from history):
    a job starts where every rule lets it."""

    def __init__(self, rules: list) -> None:
        self.rules = rules

    @property
    def active(self) -> bool:
        return any(r.active for r in self.rules)

    def next_start(self, job: Job, t: int) -> int | None:
        """The first time every rule allows: each rule moves ``t`` on until none does (rules are
        periodic, so a week of moves without agreement means never)."""
        start = t
        while True:
            moved = False
            for rule in self.rules:
                at = rule.next_start(job, t)
                if at is None or at - start > 2 * WEEK + max(job.wall, 0):
                    return None
                if at != t:
                    t, moved = at, True
            if not moved:
                return t

    def boundary_after(self, t: int) -> int | None:
        times = [b for b in (r.boundary_after(t) for r in self.rules) if b is not None]
        return min(times) if times else None

    def why(self, job: Job) -> str:
        text = "; ".join(r.why(job) for r in self.rules if getattr(r, "affects", lambda j: True)(job))
        if self.next_start(job, 0) is None and not text.startswith("Window: never"):
            text = "Window: never (the windows together leave no opening that fits): " + text.removeprefix("Window: ")
        return text
