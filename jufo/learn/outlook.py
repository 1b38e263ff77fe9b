"""The forecast that learns from history: what the real machine will do, with a range.

Two simulations of one snapshot: the walltime-only one (what ``jufo predict`` gives without a
history, and what ``squeue --start`` would say) and one with what the history taught —
predicted run times (``runtime``), start windows and user caps (``behaviour``). The second
gives the best estimate; its errors on earlier forecasts give the range (``calibration``).
Everything learned is what was known at the snapshot's time: a ``HistorySource`` answers
only for then.
"""

from __future__ import annotations

import functools
import io
import os
import pickle
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

from ..engine import jobsets
from ..io.accounting import JobRecord
from ..engine.prediction import Behaviour
from . import accuracy
from .behaviour import (CAP_DAYS, CAP_HOURS, MIN_WINDOW_WEEKS, WINDOW_WEEKS, KeptDay, kept_cap_window, learn_user_caps,
                        learn_windows, start_span, user_caps)
from .cancellation import CANCEL_DAYS, CancelOdds
from .fairshare import EVIDENCE_DAYS, LAG_DAYS, MIN_PAIRS, WEIGHT, WaitIndex, user_lags
from .calibration import (DEFAULT_COVERAGE, MIN_SCORED, Calibration, Scored, bucket, bucket_label, reach_toward,
                          reach_toward_now)
from ..engine.configuration import Configuration
from ..io.dates import date_writer, format_date, parse_date
from ..io.errors import Report
from ..io.slurm import never_ran, parse_tasks
from ..io.values import LATEST_EPOCH, MAX_COUNT, MAX_NODES, MAX_SECONDS, whole
from ..engine.prediction import Forecast, placement_pairs, simulate
from ..engine.snapshot import Snapshot
from .history import History, Observation
from ..engine.job import HELD_STATES, WAITING, Job
from .runtime import RuntimePredictor, RuntimeRules, accuracy as runtime_accuracy, early_share, in_end_order, reach
from ..engine.windows import DAY, WEEK, WeeklyWindows


class HistorySource(Protocol):
    """What a forecast at epoch time ``now`` may know of the past."""

    def records(self, now: int) -> list[JobRecord]:
        """Jobs as known at ``now`` (the waiting ones of the snapshot included)."""

    def scored(self, now: int) -> list[Scored]:
        """Earlier forecasts, with the real starts known at ``now``."""

    # and optionally ``runtimes(now)``: ``RuntimePredictor.learning`` of ``records(now)`` answered
    # from the source's own indexes (``History.runtimes``), or None; and ``kept_caps()`` with
    # ``keep_caps(days)``: the whole days of the user caps kept from one run to the next


@dataclass
class Learned:
    """What the history taught, for one snapshot time."""

    predictor: RuntimeRules
    windows: WeeklyWindows
    user_caps: dict[str, int]
    calibration: Calibration
    reach: float = 0.0  # how far toward their walls recent jobs ran beyond their predictions (runtime.reach)
    cancels: CancelOdds | None = None  # the odds that a waiting job is cancelled before it starts
    user_lags: dict[str, int] = field(default_factory=dict)  # a fair share the history shows (``fairshare``)

    @functools.cached_property
    def early(self) -> float:
        """How far short of their predictions recent jobs ended, in the mean (``runtime.early_share``
        of the shortfalls the predictor keeps): how far a range reaches toward now."""
        return early_share(self.predictor.shortfalls)


def user_caps_at(records: list[JobRecord], snap: Snapshot) -> dict[str, int]:
    """The user caps ``records`` teach at the snapshot (``behaviour.learn_user_caps``)."""
    return learn_user_caps(records, snap.epoch, snap.machine.total_cores)


# What the habits, cancellations and users' standing look back over: no job that ended before it teaches them
LOOKBACK = max(WINDOW_WEEKS * WEEK, (CAP_DAYS + 1) * DAY, CANCEL_DAYS * DAY, (EVIDENCE_DAYS + LAG_DAYS) * DAY)

# user caps, closed (wall class, slot) pairs, and the caps' whole days to keep (given days kept)
Habits = tuple[dict[str, int], set[tuple[int, int]], dict[int, KeptDay] | None]


def habits_at(records: list[JobRecord], snap: Snapshot, kept: dict[int, KeptDay] | None = None) -> Habits:
    """The user caps and the closed start windows ``records`` teach at the snapshot: the
    costliest things learned, and learned from the records alone (and the days of the caps
    an earlier run kept, if any: ``kept_cap_window``), so another process may learn them
    (``Aside``)."""
    if kept is None:
        return user_caps_at(records, snap), learn_windows(records, snap.epoch), None
    seconds, best, keep = kept_cap_window(records, snap.epoch, snap.machine.total_cores, kept)
    return user_caps(seconds, best), learn_windows(records, snap.epoch), keep


def learn(source: HistorySource, snap: Snapshot, coverage: float, records: list[JobRecord],
          habits_aside: Callable[[], Habits | None] | None = None,
          kept: dict[int, KeptDay] | None = None, runtimes: tuple | None = None,
          meanwhile: Callable[[RuntimeRules, CancelOdds | None], None] | None = None) -> Learned:
    """Learn run times, habits and the calibration from what was known at the snapshot
    (``records``: the source's records then, all of them unless ``runtimes`` are given, then
    those of the last ``LOOKBACK`` at least; ``kept``: the days of the user caps it kept;
    ``runtimes``: the run-time rules it answers, ``History.runtimes``). ``habits_aside``, if
    given, gives the user caps and start windows another process learned from the same
    records (None: learn them here); they are asked for last, after the run times, the
    calibration and the users' standing learned here, and after ``meanwhile(run-time rules,
    cancellation odds)``, the caller's own work that needs no habits. The caps' days are kept
    again where they changed."""
    now = snap.epoch
    predictor, overruns = runtimes if runtimes is not None else RuntimePredictor.learning(in_end_order(records))
    cancels = CancelOdds(records, now)
    if hasattr(source, "scored_samples"):  # a history's rows, read into what the calibration takes
        samples, outcomes = source.scored_samples(now)
        calibration = Calibration.of_samples(samples, coverage, outcomes)
    else:
        calibration = Calibration(source.scored(now), coverage)
    if meanwhile is not None:
        meanwhile(predictor, cancels)
    lags = user_lags(records, now)  # (here, not aside: a child's habits take longer than the rest here)
    habits = habits_aside() if habits_aside is not None else None
    if habits is None:
        habits = habits_at(records, snap, kept)
    caps, closed, keep = habits
    if keep is not None and keep != kept:  # (the same days as read: nothing to write)
        source.keep_caps(keep)
    return Learned(predictor, WeeklyWindows(closed, now), caps, calibration, reach(overruns, coverage), cancels, lags)


def behaviour_for(snap: Snapshot, learned: Learned) -> Behaviour:
    """The habits to simulate, and each job's predicted run time (``job_runtimes``)."""
    return Behaviour(learned.windows, learned.user_caps, *job_runtimes(snap, learned.predictor, learned.cancels),
                     learned.user_lags)


def job_runtimes(snap: Snapshot, predictor: RuntimeRules, cancels: CancelOdds | None
                 ) -> tuple[dict[str, tuple[int, str]], dict[str, float]]:
    """Each job's predicted run time (running jobs: given how long they have run), and each
    waiting job's odds of being cancelled before it starts."""
    runtimes = {}
    odds = {}
    for job in snap.jobs:
        if job.running:
            runtimes[job.id] = predictor.predict(job.owner, job.queue, job.wall, job.total_cores,
                                                 elapsed=max(0, -(job.started or 0)))
        elif job.reason is None:
            runtimes[job.id] = predictor.predict(job.owner, job.queue, job.wall, job.total_cores)
            if cancels:
                odds[job.id] = cancels.odds(job.owner, max(0, -job.queued))
    return runtimes, odds


@dataclass
class Outlook:
    """A history-informed forecast: the walltime-only one, the learned one, and the ranges."""

    wall: dict[str, int | None]  # each job's start in the walltime-only forecast (``wall_starts``)
    learned: Forecast
    behaviour: Behaviour
    knowledge: Learned
    coverage: float
    ranges: dict[str, tuple[int, int, int, str]]  # job id → (best, lo, hi, bucket), epoch seconds

    @property
    def jobs(self) -> list[Job]:
        return self.learned.jobs

    @property
    def snapshot(self) -> Snapshot:
        return self.learned.snapshot

    @property
    def config(self) -> Configuration:
        return self.learned.config

    @property
    def simulation(self):
        return self.learned.simulation


def outlook(snap: Snapshot, config: Configuration, report: Report, source: HistorySource,
            coverage: float = DEFAULT_COVERAGE, progress: Callable | None = None, processes: int = 1) -> Outlook:
    """Both simulations of ``snap`` and the calibrated ranges. With ``processes`` ≥ 2 (and
    ``fork``), a child process learns the user caps and start windows from the records read
    here and then runs the walltime-only simulation, while this one learns the rest and runs
    the learned simulation: the same forecast, sooner on two cores."""
    def walltime_here() -> dict[str, int | None]:
        return wall_starts(simulate(snap.fresh(), config, report, progress))

    child = None
    runtimes = source.runtimes(snap.epoch) if hasattr(source, "runtimes") else None  # a history's indexes answer
    # then the rest learns over the last LOOKBACK only, and reads no older jobs
    records = source.records(snap.epoch) if runtimes is None else source.records(snap.epoch, snap.epoch - LOOKBACK)
    kept = source.kept_caps() if hasattr(source, "kept_caps") else None  # read here: a child has no history
    if processes >= 2 and hasattr(os, "fork"):
        try:
            child = Aside(snap, config, report, records, kept)
        except OSError:  # no process or pipe to be had (limits): everything here
            pass
    try:
        if child is None:
            walls = walltime_here()
        learned_snap = snap.fresh()
        early: list[tuple[dict, dict]] = []  # the snapshot's run times, worked out while the child learns habits

        def meanwhile(predictor: RuntimeRules, cancels: CancelOdds | None) -> None:
            early.append(job_runtimes(learned_snap, predictor, cancels))

        knowledge = learn(source, snap, coverage, records, None if child is None else child.habits, kept, runtimes,
                          meanwhile)
        runs, odds = early[0]
        behaviour = Behaviour(knowledge.windows, knowledge.user_caps, runs, odds, knowledge.user_lags)
        learned = simulate(learned_snap, config, Report(quiet=True), progress, behaviour)
        if child is not None:
            walls = child.starts()
            if walls is None:  # the child failed: the same simulation here, with its own errors
                walls = walltime_here()
    finally:
        if child is not None:
            child.stop()
    ranges = {}
    for job in learned.jobs:
        if job.start is not None and not job.running:
            plain = walls.get(job.id)
            upper = reach_toward(snap.epoch + job.start, None if plain is None else snap.epoch + plain, knowledge.reach)
            lower = reach_toward_now(snap.epoch, snap.epoch + job.start, knowledge.early)
            found = knowledge.calibration.range(snap.epoch, snap.epoch + job.start, upper, config.resolution, lower)
            if found is not None:
                ranges[job.id] = found
    return Outlook(walls, learned, behaviour, knowledge, coverage, ranges)


def wall_starts(forecast: Forecast) -> dict[str, int | None]:
    """Each job's start in a walltime-only forecast (seconds after the snapshot; None: none)."""
    return {job.id: job.start for job in forecast.jobs}


class Aside:
    """Work of a forecast done in a forked child process: the user caps and start windows
    learned from the records (``habits``), then the walltime-only simulation of the snapshot.

    The child sends back each result as soon as it has it, as one pickle through a pipe: the
    habits, then the starts with the simulation's warnings and what it printed on stderr. The
    parent writes that text and keeps the warnings when it takes the starts, so its output
    and stderr are as in one process. If the child fails in any way, ``habits`` and
    ``starts`` give None, and the caller does that work itself. That way an error surfaces
    exactly as without the child. ``stop`` kills a child that is still running: on a timeout,
    on SIGTERM, or on an error in the parent."""

    def __init__(self, snap: Snapshot, config: Configuration, report: Report, records: list[JobRecord],
                 kept: dict[int, KeptDay] | None = None) -> None:
        self.pid: int | None = None
        self.report = report
        self.pipe: io.BufferedReader | None = None
        read, write = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            raise
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.close(read)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                sys.stderr = io.StringIO()
                with os.fdopen(write, "wb") as pipe:
                    pickle.dump(habits_at(records, snap, kept), pipe, pickle.HIGHEST_PROTOCOL)
                    pipe.flush()
                    own = Report(collect=report.collect, quiet=report.quiet)
                    starts = wall_starts(simulate(snap.fresh(), config, own))
                    pickle.dump((starts, own.warnings, sys.stderr.getvalue()), pipe, pickle.HIGHEST_PROTOCOL)
                code = 0
            finally:
                os._exit(code)
        self.pid = pid
        os.close(write)
        self.pipe = os.fdopen(read, "rb")

    def _next(self):
        """The child's next result; None where it failed (the pipe then stays at its end, so
        every later read fails too)."""
        if self.pipe is None:
            return None
        try:
            return pickle.load(self.pipe)
        except Exception:  # noqa: BLE001 - it ended early (failed, or killed), mid-pickle perhaps
            return None

    def habits(self) -> Habits | None:
        """Wait for the user caps and start windows the child learned; None where it failed."""
        return self._next()

    def starts(self) -> dict[str, int | None] | None:
        """Wait for the child's walltime-only starts (after ``habits``), and for its end; None
        where it failed."""
        found = self._next()
        self.pipe.close()
        self.pipe = None
        _, status = os.waitpid(self.pid, 0)
        self.pid = None  # reaped; until then ``stop`` kills and reaps it
        if status != 0 or found is None:
            return None
        starts, warnings, text = found
        if text:
            sys.stderr.write(text)
        self.report.warnings.extend(warnings)
        return starts

    def stop(self) -> None:
        """Kill the child if it still runs, and close the pipe."""
        if self.pipe is not None:
            self.pipe.close()
            self.pipe = None
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            self.pid = None


def results(look: Outlook) -> dict[str, list[tuple[str, str]]]:
    """Each job's data: the best estimate as ``jufo_starttime``, its range, the walltime-only
    forecast, the predicted run time and which models decided."""
    snap = look.learned.snapshot
    machine = snap.machine

    when = date_writer(snap.date_format)

    walls = look.wall
    # array tasks: their simulated starts onto the array record (ranges are per task, not written)
    out: dict[str, list[tuple[str, str]]] = jobsets.aggregate(look.learned.jobs, lambda s: when(snap.epoch + s))
    for job in look.learned.jobs:
        if job.parent is not None:
            continue
        pairs: list[tuple[str, str]] = []
        runtime = look.behaviour.runtimes.get(job.id)
        if job.start is not None or job.running:
            found = look.ranges.get(job.id)
            if job.running:
                start = None
            else:
                start = found[0] if found else snap.epoch + job.start
                pairs.append(("jufo_starttime", when(start)))
                if found:
                    pairs += [("jufo_starttime_lo", when(found[1])), ("jufo_starttime_hi", when(found[2]))]
            end = snap.epoch + job.end + (start - snap.epoch - job.start if start is not None else 0)
            if start is not None and runtime is not None and look.behaviour.cancel_odds.get(job.id):
                end = start + min(runtime[0], job.wall)  # it runs whole if it runs (held shorter for its odds)
            pairs.append(("jufo_endtime", when(end)))
            plain = walls[job.id]
            if not job.running and plain is not None:
                pairs.append(("jufo_starttime_wall", when(snap.epoch + plain)))
            pairs.extend(placement_pairs(job, machine))
            if runtime is not None:
                pairs.append(("jufo_runtime", str(runtime[0])))
            pairs.append(("jufo_model", model_text(look, job, runtime, found if not job.running else None)))
        elif job.reason:
            pairs.append(("jufo_reason", job.reason))
            if walls[job.id] is not None:
                pairs.append(("jufo_starttime_wall", when(snap.epoch + walls[job.id])))
        out[job.id] = pairs
    return out


def model_text(look: Outlook, job: Job, runtime: tuple[int, str] | None, found) -> str:
    """``runtime=…;start=…;range=…``: which predictor or fallback decided each part."""
    parts = [f"runtime={runtime[1] if runtime else 'actualruntime' if job.actual is not None else 'wall'}"]
    if not job.running:
        habits = []
        if look.behaviour.windows is not None and look.behaviour.windows.active:
            habits.append("windows")
        if look.behaviour.user_caps:
            habits.append("user caps")
        if look.behaviour.cancel_odds:
            habits.append("cancellations")
        if look.learned.simulation.sorter.lags:
            habits.append("users' standing")
        moved = found[0] - look.snapshot.epoch - job.start if found and job.start is not None else 0
        parts.append("start=simulated" + (f" with learned {' and '.join(habits)}" if habits else "")
                     + (f", {abs(moved)} s {'later' if moved > 0 else 'earlier'} toward where real starts fell"
                        if moved else ""))
        if found:
            calibration = look.knowledge.calibration
            raised = ""
            if calibration.level > calibration.coverage:
                raised = (f", cut to hold {calibration.level:.0%} of them as the latest ranges held "
                          f"{calibration.held_lately:.0%}")
            parts.append(f"range={found[3]}, {look.coverage:.0%} calibrated on {calibration.total} forecasts{raised}")
        else:
            parts.append("range=none: too few earlier forecasts to calibrate")
    return ";".join(parts)


def observations(snap: Snapshot) -> list[Observation]:
    """What the snapshot shows of each job, for the history: queued (held ones and ones with
    bad input included: they are in the queue), running since its dispatch date, ended
    (adapters keep finished jobs for a while, with their start and end), or gone: cancelled
    while pending, which Slurm lists as starting and ending at once, on no nodes. No date is
    later than the snapshot's own time: a queue date, start or end after it (a skewed clock, or
    garbage) is taken as that time, so one bad date cannot move the history's newest time ahead
    and lock the next runs out of it (``History.check_time``)."""
    now = snap.epoch
    out = []
    for job in snap.jobs:
        d = job.data
        if job.running or job.state == WAITING:
            submit = min(now, snap.epoch + job.queued) if d.get("queuedate") else None
            wall, nodes, cores = job.wall if job.wall > 0 or job.running else None, job.nodes, job.total_cores
        else:  # held or finished: the reader did not size them (they are not scheduled), so read here
            submit, wall = _date(d.get("queuedate"), now), _count(d.get("wall"), MAX_SECONDS)
            nodes, cores = _count(d.get("numnodes"), MAX_NODES) or 1, _count(d.get("totalcores"), MAX_COUNT) or 1
        record = JobRecord(job.key, job.owner, job.group, d.get("account", ""), job.queue, d.get("qos", ""),
                           nodes, cores, wall, submit)
        if job.running:
            out.append(Observation(replace(record, start=min(now, snap.epoch + (job.started or 0))), "running"))
        elif job.state == WAITING or job.state in HELD_STATES:
            out.append(Observation(record, "queued"))
        else:
            ended = _ended(d, now)
            if ended is not None and never_ran(d.get("detailedstatus") or d.get("state") or "", *ended,
                                                d.get("nodelist", "")):
                # cancelled while pending; an array record, with the tasks a snapshot showed waiting
                out += [Observation(replace(record, id=key, end=ended[1]), "gone") for key in _task_keys(d, job.key)]
            elif ended is not None:
                out.append(Observation(replace(record, start=ended[0], end=ended[1]), "ended"))
    return out


def _task_keys(data: dict[str, str], key: str) -> list[str]:
    """The history's keys of a finished record: an array record's tasks (``7_5``, as a snapshot
    names the waiting tasks it expands), else the record's own key.

    >>> _task_keys({"ArrayJobId": "7", "ArrayTaskId": "5-7%2"}, "7"), _task_keys({}, "8")
    (['7_5', '7_6', '7_7'], ['8'])
    """
    array, spec = data.get("ArrayJobId", ""), data.get("ArrayTaskId", "")
    if not array or not spec or spec.isdigit():
        return [key]
    try:
        return [f"{array}_{task}" for task in parse_tasks(spec)[0]]
    except ValueError:
        return [key]


def _date(text: str | None, now: int) -> int | None:
    """An absolute date of the snapshot's data, at most ``now`` (the snapshot's time), or None
    where missing or unreadable.

    >>> _date("01/10/12-11:00:00", 1326196800), _date("9999-12-31 23:59:59", 1326196800), _date("x", 0)
    (1326193200, 1326196800, None)
    """
    try:
        return min(now, parse_date(text)[0]) if text else None
    except ValueError:
        return None


def _count(text: str | None, hi: int) -> int | None:
    """A whole number of the snapshot's data in ``[0, hi]``, or None where missing or unreadable.

    >>> _count("16", 99), _count("16.000", 99), _count("x", 99), _count(None, 99), _count("1e30", 99)
    (16, 16, None, None, None)
    """
    try:
        return whole(text or "", 0, hi)
    except ValueError:
        return None


def _ended(data: dict[str, str], now: int) -> tuple[int, int] | None:
    """Start and end of a finished job a snapshot still lists (``dispatchdate``/``starttime``
    and ``endtime``), if both are readable and the end is not after ``now``, the snapshot's
    time (a job cannot have finished later than the snapshot that lists it as finished).

    >>> _ended({"starttime": "01/10/12-11:00:00", "endtime": "01/10/12-11:30:00"}, 1326196800)
    (1326193200, 1326195000)
    >>> _ended({"starttime": "01/10/12-11:00:00", "endtime": "9999-12-31 23:59:59"}, 1326196800)
    """
    try:
        start = parse_date(data.get("dispatchdate") or data.get("starttime") or "")[0]
        end = parse_date(data.get("endtime") or "")[0]
    except ValueError:
        return None
    return (start, end) if start <= end <= now else None


def forecast_rows(look: Outlook) -> list[tuple]:
    """The rows the history keeps of this forecast (see ``History.record_forecasts``)."""
    epoch = look.learned.snapshot.epoch
    walls = look.wall
    rows = []
    for job in look.learned.jobs:
        if job.running or job.start is None:
            continue
        found = look.ranges.get(job.id)
        plain = walls[job.id]
        runtime = look.behaviour.runtimes.get(job.id)
        rows.append((job.key, epoch + job.start, None if plain is None else epoch + plain,
                     found[0] if found else epoch + job.start, found[1] if found else None,
                     found[2] if found else None, look.coverage if found else None,
                     runtime[0] if runtime else None, runtime[1] if runtime else "wall", system_estimate(job)))
    return rows


def system_estimate(job: Job) -> int | None:
    """The batch system's own estimate of a waiting job's start (its ``starttime``: Slurm's
    ``StartTime``), epoch seconds; None where the snapshot gives none. Kept by the history
    to compare with (``history show``), never read by a forecast.

    >>> from jufo.engine.job import Job
    >>> system_estimate(Job("1", 0, {"starttime": "01/02/12-15:00:00"}, "Pending"))
    1325516400
    >>> system_estimate(Job("2", 1, {"starttime": "Unknown"}, "Pending")), system_estimate(Job("3", 2, {}, "Pending"))
    (None, None)
    >>> system_estimate(Job("4", 3, {"starttime": "9999-12-31T23:59:59"}, "Pending"))  # beyond any date jufo keeps
    """
    try:
        estimate = parse_date(job.data.get("starttime") or "")[0]
    except ValueError:
        return None
    return estimate if abs(estimate) <= LATEST_EPOCH else None


def taught(history: History, coverage: float = DEFAULT_COVERAGE, top: int = 10, days: int | None = None) -> dict:
    """What the history has taught, as of the newest time it knows (``jufo history show``):
    run-time accuracy per user/queue and queue, start windows, user caps, how late real
    starts came against the simulation by horizon, how the ranges fared so far, and how the
    forecasts fared against the real starts, next to the batch system's own estimate."""
    now = history.latest()
    out: dict = {"history": history.path, "counts": history.stats(),
                 "as_of": None if now is None else format_date(now, "%Y-%m-%dT%H:%M:%S")}
    if now is None:
        return out
    records = history.records(now + 1)
    by_user = runtime_accuracy(records, lambda r: f"{r.user}/{r.queue}")
    out["runtime_by_user_queue"] = dict(sorted(by_user.items(), key=lambda kv: (-kv[1]["jobs"], kv[0]))[:top])
    out["runtime_by_queue"] = runtime_accuracy(records, lambda r: r.queue or "-")
    out["windows"] = WeeklyWindows(learn_windows(records, now + 1), now).rows()
    out["windows_basis_days"] = round(start_span(records, now + 1) / 86400, 3)  # days of starts they rest on
    capacity = history.meta("capacity")
    hours: dict[str, int] = {}
    out["user_caps"] = learn_user_caps(records, now + 1, int(capacity), evidence=hours) if capacity else None
    out["user_caps_basis_hours"] = {user: round(seconds / 3600, 1) for user, seconds in sorted(hours.items())}
    cancels = CancelOdds(records, now + 1)
    out["cancellations"] = {"days": CANCEL_DAYS, "left_queue": len(cancels.all_left),
                            "cancelled": len(cancels.all_cancelled),
                            "by_user": {user: {"left_queue": len(cancels.left[user]), "cancelled": len(ages)}
                                        for user, ages in sorted(cancels.cancelled.items(),
                                                                 key=lambda kv: (-len(kv[1]), kv[0]))[:top]}}
    waits = WaitIndex(records)
    evidence = pairs, by_submit, by_standing = waits.evidence(now + 1)
    lags = waits.lags(now + 1, evidence)
    out["users_standing"] = {"days": EVIDENCE_DAYS, "pairs": pairs, "in_submit_order": by_submit,
                             "in_standing_order": by_standing, "learned": bool(lags),
                             "lags": dict(sorted(lags.items(), key=lambda kv: (-abs(kv[1]), kv[0]))[:top])}
    calibration = Calibration(history.scored(now + 1), coverage)
    horizons = []
    for b in sorted(calibration.groups):
        samples = calibration.groups[b]
        band = calibration.band(b)
        resolved = [r for r, seen in samples if seen]
        horizons.append({"horizon": bucket_label(b), "forecasts": len(samples), "started": len(resolved),
                         "median_ratio": band.median if band else None,
                         "lasting_bias": band.bias if band else None,
                         "range_ratio": [band.low, band.high] if band else None})
    out["lateness_by_horizon"] = horizons
    out["range_level"] = {"coverage": coverage, "level": calibration.level, "held_lately": calibration.held_lately}
    predictor, overruns = RuntimePredictor.learning(in_end_order(records))
    overruns = [o for o in overruns if o is not None]
    out["range_reach"] = {"reach": reach(overruns, coverage), "jobs": len(overruns),
                          "toward_now": early_share(predictor.shortfalls), "toward_now_jobs": len(predictor.shortfalls)}
    fared: dict[str, dict[str, list[bool]]] = {"all": {}, "by_horizon": {}, "by_user_queue": {}}
    for user, queue, made, predicted, lo, hi, start in history.range_outcomes():
        inside = lo <= start <= hi
        fared["all"].setdefault("all", []).append(inside)
        fared["by_user_queue"].setdefault(f"{user}/{queue}", []).append(inside)
        fared["by_horizon"].setdefault(bucket_label(bucket(max(0, predicted - made))), []).append(inside)
    out["range_coverage_so_far"] = {
        part: {k: {"forecasts": len(v), "in_range": sum(v) / len(v)}
               for k, v in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:top]}
        for part, groups in fared.items()}
    out["forecasts_so_far"] = {**accuracy.so_far(history.outcomes(None if days is None else now + 1 - days * 86400)),
                               "days": days}
    return out


def taught_text(info: dict) -> str:
    """``taught`` as the text ``history show`` prints."""
    c = info["counts"]
    states = ", ".join(f"{c[k]:,} {k[5:]}" for k in sorted(c) if k.startswith("jobs_"))
    lines = [f"{info['history']}: {c['jobs']:,} jobs ({states}), {c['snapshots']:,} snapshots, "
             f"{c['forecasts']:,} forecasts"]
    if info["as_of"] is None:
        return "\n".join(lines + ["nothing learned yet: import accounting (jufo history import) or predict with --history"])
    lines.append(f"as of {info['as_of']}")
    lines.append("\nRun times: each finished job predicted from the jobs ended by its submit")
    if not info["runtime_by_queue"]:
        lines.append("  not learned yet: no finished job with a wall and a run time")
    else:
        lines.append(f"  {'user/queue':24} {'jobs':>7} {'median |error|':>15} {'bias':>10} {'within 10%':>11} "
                     f"{'wall: |error|':>14}")
    for title, rows in (("", info["runtime_by_user_queue"]), ("queue ", info["runtime_by_queue"])):
        for key, a in rows.items():
            lines.append(f"  {title + key:24} {a['jobs']:>7,} {a['median_abs_error']:>13,.0f} s {a['bias']:>8,.0f} s "
                         f"{a['within_10pct']:>11.0%} {a['wall_median_abs_error']:>12,.0f} s")
    days = info["windows_basis_days"]
    span = f"{days:,.1f} days" if days >= 2 else f"{days * 24:,.1f} hours"
    lines.append(f"\nStart windows learned (last {WINDOW_WEEKS} weeks; the starts span {span})")
    if days < MIN_WINDOW_WEEKS * 7:
        lines.append(f"  not learned yet: windows need {MIN_WINDOW_WEEKS} weeks of starts (each weekday hour "
                     f"seen {MIN_WINDOW_WEEKS} times); jobs start at any hour until then")
    else:
        lines += [f"  {who} do not start {when}" for who, when in info["windows"]] or [
            "  none: every hour saw the starts its share of waiting jobs predicts"]
    caps = info["user_caps"]
    lines.append(f"\nUser caps learned (most jobs at once while some waited and the machine had room, last "
                 f"{CAP_DAYS} days; a cap needs {CAP_HOURS} h of such waiting)")
    if caps is None:
        lines.append("  not learned yet: no snapshot or trace has told the machine's size")
    elif not caps:
        lines.append("  none: no user waited that long with room free while running jobs")
    else:
        basis = info["user_caps_basis_hours"]
        shown = sorted(caps.items(), key=lambda kv: (kv[1], -basis.get(kv[0], 0), kv[0]))[:20]
        lines.append("  " + ", ".join(f"{u} {k} ({basis.get(u, 0):,.0f} h)" for u, k in shown)
                     + (f" … ({len(caps)} users)" if len(caps) > 20 else ""))
    cancelled = info.get("cancellations")
    if cancelled is not None:
        lines.append(f"\nCancelled while pending (jobs that left the queue in the last {cancelled['days']} days)")
        if not cancelled["cancelled"]:
            lines.append(f"  none of {cancelled['left_queue']:,}: every waiting job is expected to run")
        else:
            lines.append(f"  {cancelled['cancelled']:,} of {cancelled['left_queue']:,}; a waiting job holds its nodes "
                         f"in the forecast for the share of its run time its user's record expects it to run")
            lines.append("  " + ", ".join(f"{u} {v['cancelled']:,} of {v['left_queue']:,}"
                                          for u, v in cancelled["by_user"].items()))
    standing = info.get("users_standing")
    if standing is not None:
        lines.append(f"\nUsers' standing (pairs of two users' jobs of one shape that waited together, last "
                     f"{standing['days']} days)")
        pairs = standing["pairs"]
        if pairs < MIN_PAIRS:
            lines.append(f"  not learned yet: {pairs:,} pairs, {MIN_PAIRS} needed; waiting jobs keep the submit order")
        else:
            lines.append(f"  {pairs:,} pairs: {standing['in_submit_order'] / pairs:.0%} started in submit order, "
                         f"{standing['in_standing_order'] / pairs:.0%} in the order of their users' recent waits")
            lines.append(f"  learned: where the priority is the submit order, a waiting job is ordered as if queued "
                         f"{WEIGHT} × its user's standing later (how much longer than most the user's jobs of the "
                         f"last {LAG_DAYS} days waited, shrunk): " + ", ".join(
                             f"{u} {v / WEIGHT / 3600:+,.1f} h" for u, v in standing["lags"].items())
                         if standing["learned"] else "  none: the submit order explains as much")
    lines.append("\nReal starts against the simulation, by horizon: real wait ≈ ratio × (simulated wait + 10 min) − 10 min")
    if not info["lateness_by_horizon"]:
        lines.append(f"  not learned yet: no forecast scored against a real start (predict --history records "
                     f"them; a horizon needs {MIN_SCORED} before it has its own range)")
    else:
        lines.append(f"  {'horizon':30} {'forecasts':>9} {'started':>8} {'median ratio':>13} {'lasting bias':>13} "
                     f"{'range ratio':>16}")
    for h in info["lateness_by_horizon"]:
        ratio = f"{h['median_ratio']:.2f}" if h["median_ratio"] else "-"
        bias = f"{h['lasting_bias']:.2f}" if h.get("lasting_bias") else "-"
        rng = f"{h['range_ratio'][0]:.2f}-{h['range_ratio'][1]:.2f}" if h["range_ratio"] else "-"
        thin = " (borrows from its neighbours)" if h["forecasts"] < MIN_SCORED else ""
        lines.append(f"  {h['horizon']:30} {h['forecasts']:>9,} {h['started']:>8,} {ratio:>13} {bias:>13} {rng:>16}{thin}")
    if info["lateness_by_horizon"]:
        lines.append("  a forecast's wait moves halfway (in log ratio) toward its horizon's lasting bias: the median "
                     "ratio where the newer and the older half of its forecasts agree")
    level = info["range_level"]
    if level["held_lately"] is not None:
        raised = (f"so the range ratios are cut to hold {level['level']:.0%}" if level["level"] > level["coverage"]
                  else "no need to widen them")
        lines.append(f"  the latest {level['coverage']:.0%} ranges held {level['held_lately']:.0%} of real starts: "
                     f"{raised}")
    toward = info.get("range_reach")
    if toward and toward["reach"] > 0:
        lines.append(f"  a range's upper end reaches at least {toward['reach']:.0%} of the way to the walltime forecast: "
                     f"as far as {level['coverage']:.0%} of the latest {toward['jobs']} jobs ran beyond their "
                     f"predicted run times toward their walls")
    if toward and toward.get("toward_now", 0) > 0:
        lines.append(f"  a range's lower end reaches at least {toward['toward_now']:.0%} of the way to now: as far "
                     f"short of their predicted run times as the latest {toward['toward_now_jobs']} jobs ended, "
                     f"in the mean")
    lines.append("\nRanges so far: share of started jobs whose real start fell inside")
    so_far = info["range_coverage_so_far"]
    if not so_far["all"]:
        lines.append("  none yet: no forecast with a range has seen its job start")
    for part, title in (("all", ""), ("by_horizon", "by horizon"), ("by_user_queue", "by user/queue")):
        if so_far[part] and title:
            lines.append(f"  {title}")
        for key, v in so_far[part].items():
            lines.append(f"  {'  ' if title else ''}{key:28} {v['forecasts']:>9,} {v['in_range']:>8.0%}")
    scored = info.get("forecasts_so_far")
    if scored is not None:
        days = scored.get("days")
        window = "" if days is None else f" (made in the last {days:,} day{'' if days == 1 else 's'})"
        lines.append(f"\nForecasts so far{window}: each kept forecast whose job has started, against its real start "
                     "(error = real - forecast, s), by real wait; the batch system's own estimate where the "
                     "snapshot had one, and the history forecast on those same forecasts")
        if not scored["forecasts"]:
            lines.append("  none yet: no kept forecast has seen its job start")
        else:
            estimated = scored["overall"]["batch system"]["count"]
            if not estimated:
                lines.append("  (no batch-system estimate kept: the snapshots gave none, or the history is older)")
            shown = accuracy.SO_FAR if estimated else accuracy.SO_FAR[:3]
            lines += accuracy.blocks_text([("all forecasts", scored["overall"]), *scored["by_wait"].items()],
                                          shown, counts=True)
            lines.append("  by partition, most forecasts first (ten at most): median |err| (forecasts)")
            lines += accuracy.queues_text(scored["by_queue"], shown)
    return "\n".join(lines)
