"""The forecast that learns from history: what the real machine will do, with a range.

Two simulations of one snapshot: the walltime-only one (what ``jufo predict`` gives without a
history, and what ``squeue --start`` would say) and one with what the history taught —
predicted run times (``runtime``), start windows and user caps (``behaviour``). The second
gives the best estimate; its errors on earlier forecasts give the range (``calibration``).
Everything learned is what was known at the snapshot's time: a ``HistorySource`` answers
only for then.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from .accounting import JobRecord
from .behaviour import Behaviour, learn_user_caps, learn_windows
from .calibration import Calibration, Scored
from .configuration import Configuration
from .dates import format_date, parse_date
from .errors import Report
from .forecast import Forecast, Snapshot, resource_pairs, simulate
from .history import Observation
from .job import HELD_STATES, WAITING, Job
from .runtime import RuntimePredictor
from .windows import WeeklyWindows

DEFAULT_COVERAGE = 0.8


class HistorySource(Protocol):
    """What a forecast at epoch time ``now`` may know of the past."""

    def records(self, now: int) -> list[JobRecord]:
        """Jobs as known at ``now`` (the waiting ones of the snapshot included)."""

    def scored(self, now: int) -> list[Scored]:
        """Earlier forecasts, with the real starts known at ``now``."""


@dataclass
class Learned:
    """What the history taught, for one snapshot time."""

    predictor: RuntimePredictor
    windows: WeeklyWindows
    user_caps: dict[str, int]
    calibration: Calibration
    records: int  # job records it rests on


def learn(source: HistorySource, snap: Snapshot, coverage: float) -> Learned:
    """Learn run times, habits and the calibration from what was known at the snapshot."""
    now = snap.epoch
    records = source.records(now)
    finished = sorted((r for r in records if r.end is not None and r.start is not None), key=lambda r: (r.end, r.id))
    predictor = RuntimePredictor(finished)
    windows = WeeklyWindows(learn_windows(records, now), now)
    caps = learn_user_caps(records, now, snap.machine.total_cores)
    return Learned(predictor, windows, caps, Calibration(source.scored(now), coverage), len(records))


def behaviour_for(snap: Snapshot, learned: Learned) -> Behaviour:
    """The habits to simulate, and each job's predicted run time (running jobs: given how
    long they have run)."""
    runtimes = {}
    for job in snap.jobs:
        if job.running:
            runtimes[job.id] = learned.predictor.predict(job.owner, job.queue, job.wall, job.total_cores,
                                                         elapsed=max(0, -(job.started or 0)))
        elif job.reason is None:
            runtimes[job.id] = learned.predictor.predict(job.owner, job.queue, job.wall, job.total_cores)
    return Behaviour(learned.windows, learned.user_caps, runtimes)


@dataclass
class Outlook:
    """A history-informed forecast: the walltime-only one, the learned one, and the ranges."""

    wall: Forecast
    learned: Forecast
    behaviour: Behaviour
    knowledge: Learned
    coverage: float
    ranges: dict[str, tuple[int, int, int, str]]  # job id → (best, lo, hi, bucket), epoch seconds

    @property
    def jobs(self) -> list[Job]:
        return self.learned.jobs

    @property
    def config(self) -> Configuration:
        return self.learned.config

    @property
    def simulation(self):
        return self.learned.simulation


def outlook(snap: Snapshot, config: Configuration, report: Report, source: HistorySource,
            coverage: float = DEFAULT_COVERAGE, progress: Callable | None = None) -> Outlook:
    """Both simulations of ``snap`` and the calibrated ranges."""
    wall = simulate(snap.fresh(), config, report, progress)
    knowledge = learn(source, snap, coverage)
    learned_snap = snap.fresh()
    behaviour = behaviour_for(learned_snap, knowledge)
    learned = simulate(learned_snap, config, Report(quiet=True), progress, behaviour)
    ranges = {}
    for job in learned.jobs:
        if job.start is not None and not job.running:
            found = knowledge.calibration.range(snap.epoch, snap.epoch + job.start)
            if found is not None:
                ranges[job.id] = found
    return Outlook(wall, learned, behaviour, knowledge, coverage, ranges)


def results(look: Outlook) -> dict[str, list[tuple[str, str]]]:
    """Each job's data: the best estimate as ``jufo_starttime``, its range, the walltime-only
    forecast, the predicted run time and which models decided."""
    snap = look.learned.snapshot
    machine = snap.machine

    def when(epoch: int) -> str:
        return format_date(epoch, snap.date_format)

    walls = {job.id: job for job in look.wall.jobs}
    out: dict[str, list[tuple[str, str]]] = {}
    for job in look.learned.jobs:
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
            pairs.append(("jufo_endtime", when(end)))
            plain = walls[job.id]
            if not job.running and plain.start is not None:
                pairs.append(("jufo_starttime_wall", when(snap.epoch + plain.start)))
            pairs.extend(resource_pairs(job.resources, machine))
            if job.topdog:
                pairs.append(("jufo_topdog", "1"))
            if job.backfilled:
                pairs.append(("jufo_backfilled", "1"))
            if runtime is not None:
                pairs.append(("jufo_runtime", str(runtime[0])))
            pairs.append(("jufo_model", model_text(look, job, runtime, found if not job.running else None)))
        elif job.reason:
            pairs.append(("jufo_reason", job.reason))
            if walls[job.id].start is not None:
                pairs.append(("jufo_starttime_wall", when(snap.epoch + walls[job.id].start)))
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
        parts.append("start=simulated" + (f" with learned {' and '.join(habits)}" if habits else ""))
        if found:
            parts.append(f"range={found[3]}, {look.coverage:.0%} calibrated on "
                         f"{look.knowledge.calibration.total} forecasts")
        else:
            parts.append("range=none: too few earlier forecasts to calibrate")
    return ";".join(parts)


def observations(snap: Snapshot) -> list[Observation]:
    """What the snapshot shows of each job, for the history: queued (held ones and ones with
    bad input included: they are in the queue), running since its dispatch date, or ended
    (adapters keep finished jobs for a while, with their start and end)."""
    out = []
    for job in snap.jobs:
        d = job.data
        submit = snap.epoch + job.queued if d.get("queuedate") else None
        wall = job.wall if job.wall > 0 or job.running else None
        record = JobRecord(job.key, job.owner, job.group, d.get("account", ""), job.queue, d.get("qos", ""),
                           job.nodes, job.total_cores, wall, submit)
        if job.running:
            out.append(Observation(replace(record, start=snap.epoch + (job.started or 0)), "running"))
        elif job.state == WAITING or job.state in HELD_STATES:
            out.append(Observation(record, "queued"))
        else:
            ended = _ended(d)
            if ended is not None:
                out.append(Observation(replace(record, start=ended[0], end=ended[1]), "ended"))
    return out


def _ended(data: dict[str, str]) -> tuple[int, int] | None:
    """Start and end of a finished job a snapshot still lists (``dispatchdate``/``starttime``
    and ``endtime``), if both are readable."""
    try:
        start = parse_date(data.get("dispatchdate") or data.get("starttime") or "")[0]
        end = parse_date(data.get("endtime") or "")[0]
    except ValueError:
        return None
    return (start, end) if end >= start else None


def forecast_rows(look: Outlook) -> list[tuple]:
    """The rows the history keeps of this forecast (see ``History.record_forecasts``)."""
    epoch = look.learned.snapshot.epoch
    walls = {job.id: job for job in look.wall.jobs}
    rows = []
    for job in look.learned.jobs:
        if job.running or job.start is None:
            continue
        found = look.ranges.get(job.id)
        plain = walls[job.id].start
        runtime = look.behaviour.runtimes.get(job.id)
        rows.append((job.key, epoch + job.start, None if plain is None else epoch + plain,
                     found[0] if found else epoch + job.start, found[1] if found else None,
                     found[2] if found else None, look.coverage if found else None,
                     runtime[0] if runtime else None, runtime[1] if runtime else "wall"))
    return rows
