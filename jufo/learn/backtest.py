"""Backtests: forecast a real trace's waiting queue at regular times and compare with what
really happened — the judge of every forecast jufo makes.

At each time ``T`` (``--every`` seconds from ``--from`` to ``--to``): the snapshot of the
queue as ``swf2lml --at T`` draws it; a history holding only what the accounting showed at
``T`` (jobs finished by then, starts before then, the waiting jobs' submits; the last
``keep`` days, as a real history file keeps); and the forecasts made at earlier times, scored
with the starts known at ``T``. Three forecasts of every waiting job are compared with its
real start: the walltime-only simulation, "it starts now", and the history forecast with its
calibrated range.

Snapshots are independent in what costs time (the simulations): phase 1 runs them on local
processes (``jobs``) or a Dask cluster; phase 2, the calibration, is cheap and runs in time
order. Results do not depend on the engine. What the history taught at each snapshot is not
relearned from the records each time: each process builds the learners' indexes over the
whole trace once (``knowledge``) and asks them as of the snapshot's time, which gives what
learning from the records known then gives.
"""

from __future__ import annotations

import bisect
import hashlib
import signal
import statistics
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import InvalidStateError, ProcessPoolExecutor
from dataclasses import dataclass, field, replace

from ..io import accounting
from ..io import lml
from ..io import swf
from ..io.accounting import JobRecord
from .calibration import Scored, ScoredWindow, held, reach_toward, reach_toward_now
from ..io.errors import InputError, Report
from ..engine.snapshot import prepare, trace_snapshot
from .history import KEEP_DAYS, SCORED_LIMIT
from ..engine.prediction import simulate
from .knowledge import TraceKnowledge
from . import accuracy
from .accuracy import error_stats
from .outlook import DEFAULT_COVERAGE, behaviour_for, wall_starts

FORECASTERS = ("walltime", "starts now", "history")


@dataclass(frozen=True)
class Settings:
    """What a backtest runs: the trace, how it becomes a snapshot, and the scheduler keys."""

    trace: str
    nodes: int | None = None
    cores: int = 1
    overrides: tuple[tuple[str, str], ...] = ()
    layout: swf.Layout | None = None  # a real machine's nodes and partitions (--machine)
    keep_days: int = KEEP_DAYS
    # how the snapshot times were chosen, so that every process knows them all and learns the
    # user caps once: ("every", start, stop, seconds) or ("submits", start, stop, 0)
    when: tuple[str, int | None, int | None, int] | None = None


@dataclass(frozen=True)
class Raw:
    """One waiting job at one snapshot, before calibration (epoch seconds)."""

    made: int
    job: str
    learned: int | None  # simulated start with learned habits
    wall: int | None  # walltime-only simulated start
    actual: int  # the real start (never used by the forecast)
    submit: int
    upper: int | None = None  # where its range should reach at least (calibration.reach_toward)
    step: int = 0  # the planning grid's step (Slurm's bf_resolution): the range spans half of it either side
    lower: int | None = None  # where its range should reach down to at least (calibration.reach_toward_now)


class TraceSource:
    """A HistorySource over a trace: at ``now``, only what the accounting showed then."""

    def __init__(self, records: list[JobRecord], keep_days: int = KEEP_DAYS, submits: list[int] | None = None) -> None:
        """With ``submits``, ``records`` are already sorted (``by_submit``) and ``submits`` are
        their submit times: a backtest makes a source for each snapshot, and sorting HPC2N's
        202,876 records each time took a sixth of it."""
        self.by_submit = by_submit(records) if submits is None else records
        self.submits = [r.submit for r in self.by_submit] if submits is None else submits
        self.keep = keep_days * 86400
        self.scored_list: list[Scored] = []

    def records(self, now: int) -> list[JobRecord]:
        """Finished jobs (ended in the last ``keep`` days), running ones without their end,
        the waiting ones without their start, and those cancelled while pending with the end
        when they left (as ``History.records``)."""
        lo = bisect.bisect_left(self.submits, now - 2 * self.keep)
        hi = bisect.bisect_right(self.submits, now)
        out = []
        for rec in self.by_submit[lo:hi]:
            if rec.never_ran and rec.end <= now:
                out.append(rec)  # cancelled while pending: it waited until it left, and never ran
            elif rec.start is None or rec.start >= now:
                out.append(JobRecord(rec.id, rec.user, rec.group, rec.account, rec.queue, rec.qos, rec.nodes,
                                     rec.cores, rec.wall, rec.submit))
            elif rec.end is not None and rec.end > now:
                out.append(replace(rec, end=None))
            elif rec.end is None or rec.end >= now - self.keep:
                out.append(rec)
        return out

    def scored(self, now: int) -> list[Scored]:
        return self.scored_list


# what a node keeps (not its state then)
MACHINE_NODE_KEYS = ("ncores", "gpus", "physmem", "availmem", "switch", "weight")


def machine_layout(path: str) -> swf.Layout:
    """The nodes and partitions of a machine's raw LML snapshot (``jufo slurm snapshot``, or
    LLview's) for a backtest of its accounting: each node's cores, partitions (``classes``),
    GPUs, memory, switch and weight, but not its state at that moment; each queue with its limits.
    InputError for a file without nodes, or with a bad value (as ``predict`` reads them)."""
    from ..engine.node import read_nodes

    doc = lml.read(path)
    found = doc.of_type("node")
    if not found:
        raise InputError(path, None, None, "no node objects: --machine takes a raw LML snapshot of the machine "
                                           "(jufo slurm snapshot -o FILE writes one)")
    try:
        machine = read_nodes(found, Report(quiet=True))
    except InputError as err:  # say which file: the accounting is named elsewhere
        raise InputError(f"--machine {path}", None, None, str(err)) from None
    nodes, members = [], {}
    for node, obj in zip(machine.nodes, found):
        data = {k: obj.data[k] for k in MACHINE_NODE_KEYS if obj.data.get(k, "").strip()}
        if node.classes is not None:
            data["classes"] = "".join(f"[{q}:{c}]" for q, c in node.classes.items())
            for queue, limit in node.classes.items():
                cores = min(limit, node.ncores)  # not node.limit: its state then does not count
                if cores > 0:  # "[debug:0]": the node takes no job of it
                    positions, usable = members.setdefault(queue, ([], []))
                    positions.append(node.index)
                    usable.append(cores)
        nodes.append((node.name, tuple(data.items())))
    queues = tuple((obj.id, tuple(obj.data.items())) for obj in doc.of_type("queue"))
    digest = hashlib.sha256(repr((nodes, queues)).encode()).hexdigest()
    return swf.Layout(tuple(nodes), queues, tuple(n.ncores for n in machine.nodes),
                      tuple((q, tuple(p), tuple(c)) for q, (p, c) in sorted(members.items())), digest)


def missing_partitions(settings: Settings) -> dict[str, int]:
    """Jobs per partition of the accounting that the ``--machine`` layout does not have (they
    are left out of the snapshots); InputError when that is every job."""
    layout = settings.layout
    if layout is None:
        return {}
    trace = _load(settings)[0]
    missing: dict[str, int] = {}
    for job in trace.jobs:
        queue = trace.queue_of(job)
        if layout.room(queue) is None:
            missing[queue] = missing.get(queue, 0) + 1
    if trace.jobs and sum(missing.values()) == len(trace.jobs):
        have = ", ".join(q for q, _, _ in layout.members) or "none"
        raise InputError(settings.trace, "Partition", ", ".join(sorted(missing)),
                         f"no job ran in a partition of the --machine snapshot (its partitions: {have})")
    return dict(sorted(missing.items()))


def by_submit(records: list[JobRecord]) -> list[JobRecord]:
    """``records`` in the order ``TraceSource`` reads them: by submit time, then id."""
    return sorted(records, key=lambda r: (r.submit, r.id))


_TRACES: dict[tuple, tuple] = {}  # per trace, cores per node and layout
_INDEXES: dict[tuple, swf.TraceIndex] = {}  # per trace and machine: which jobs each snapshot holds
_KNOWLEDGE: dict[tuple, TraceKnowledge] = {}  # per trace, history and machine: the learners' indexes


def _load(settings: Settings):
    """The trace and its records (sorted for ``TraceSource``), read once per process."""
    key = (settings.trace, settings.cores, settings.layout)
    if key not in _TRACES:
        if accounting.is_sacct(settings.trace):  # a site's own accounting, sacct --parsable2
            read, _ = accounting.read_sacct(accounting.text_lines(settings.trace), settings.trace)
            trace = swf.trace_of_records(read, settings.trace)
        else:
            trace = swf.read(settings.trace)
        layout = settings.layout
        per_queue = None if layout is None else (lambda q: (room := layout.room(q)) and room[2])
        records = by_submit(accounting.from_swf(trace, settings.cores, per_queue))
        _TRACES[key] = (trace, records, [r.submit for r in records], {str(j.number): j for j in trace.jobs})
    return _TRACES[key]


def snapshot_forecasts(settings: Settings, at: int) -> list[Raw]:
    """Phase 1 for one snapshot ``at`` seconds after the trace's start: both simulations."""
    trace, records, submits, by_number = _load(settings)
    conv = swf.Conversion(at=at, nodes=settings.nodes, cores=settings.cores, settings=dict(settings.overrides),
                          layout=settings.layout)
    key = (settings.trace, settings.nodes, settings.cores, settings.layout)
    if key not in _INDEXES:
        _INDEXES[key] = swf.TraceIndex(trace, conv)
    objects, jobs, _ = trace_snapshot(trace, conv, _INDEXES[key])
    report = Report(quiet=True)
    prepared = prepare(lml.from_objects(objects), report, None, jobs)
    assert prepared is not None
    snap, config = prepared
    source = TraceSource(records, settings.keep_days, submits)
    wall = simulate(snap.fresh(), config, report)
    capacity = snap.machine.total_cores
    known = (settings.trace, settings.keep_days, capacity, settings.when)
    if known not in _KNOWLEDGE:
        _KNOWLEDGE.clear()  # one backtest at a time: the indexes of another are not kept
        _KNOWLEDGE[known] = TraceKnowledge(records, settings.keep_days * 86400, capacity,
                                           [trace.epoch + t for t in snapshot_times(trace, settings.when)])
    knowledge = _KNOWLEDGE[known].learn(source, snap, DEFAULT_COVERAGE)
    learned_snap = snap.fresh()
    learned = simulate(learned_snap, config, report, behaviour=behaviour_for(learned_snap, knowledge))
    walls = wall_starts(wall)
    out = []
    for job in learned.jobs:
        if job.running:
            continue
        real = by_number[job.key]
        if real.cancelled:  # it waited as Slurm showed it, but never started: nothing to score
            continue
        plain = walls[job.id]
        start = None if job.start is None else snap.epoch + job.start
        wall_start = None if plain is None else snap.epoch + plain
        out.append(Raw(snap.epoch, job.key, start, wall_start, trace.epoch + real.start, trace.epoch + real.submit,
                       None if start is None else reach_toward(start, wall_start, knowledge.reach), config.resolution,
                       None if start is None else reach_toward_now(snap.epoch, start, knowledge.early)))
    return out


MAX_SNAPSHOTS = 100_000  # a daily backtest of 270 years; beyond, --every or --from/--to must narrow it
RETRO_EVERY = 3600  # seconds between retro-forecasts: the history keeps a job's forecast once an hour
DASK_CONNECT = 10  # seconds to reach a Dask scheduler (a closed port, or a web server that never answers)


def times(trace, every: int, start: int | None, stop: int | None) -> list[int]:
    """Snapshot times, seconds after the trace's start: ``start`` (default: the first submit
    plus ``every``), then every ``every`` seconds up to ``stop`` (default: the last submit);
    only times at which some job waits (empty stretches of a trace are skipped). InputError
    for a trace without a usable job, or more than ``MAX_SNAPSHOTS`` snapshots."""
    if not trace.jobs:
        raise InputError("trace", None, None, f"no usable job ({trace.unusable:,} lines without a run time or size)")
    first = min(j.submit for j in trace.jobs)
    last = max(j.submit for j in trace.jobs)
    begin = first + every if start is None else start
    end = min(last if stop is None else stop, last + every)
    count = max(0, (end - begin) // every + 1)
    if count > MAX_SNAPSHOTS:
        raise InputError("trace", "--every", str(every), f"{count:,} snapshots from {begin:,} to {end:,} s, more than "
                         f"{MAX_SNAPSHOTS:,}: choose a larger --every or a shorter --from/--to")
    spans = sorted((j.submit, j.start) for j in trace.jobs)
    out, k, reach = [], 0, -1  # reach: the latest start among jobs submitted so far
    for t in range(begin, end + 1, every):
        while k < len(spans) and spans[k][0] <= t:
            reach = max(reach, spans[k][1])
            k += 1
        if reach >= t:  # some job submitted by t starts at t or later: it waits at t
            out.append(t)
    return out


def submit_times(trace, start: int | None, stop: int | None) -> list[int]:
    """The distinct submit times from ``start`` to ``stop`` (default: the whole trace), for a
    backtest that asks at each job's submit what would happen to it (``at_submit``).
    InputError for none, or more than ``MAX_SNAPSHOTS``."""
    if not trace.jobs:
        raise InputError("trace", None, None, f"no usable job ({trace.unusable:,} lines without a run time or size)")
    out = sorted({j.submit for j in trace.jobs if (start is None or j.submit >= start)
                  and (stop is None or j.submit <= stop)})
    if not out:
        raise InputError("trace", "--from", str(start), f"no job submitted from {start} to {stop} s")
    if len(out) > MAX_SNAPSHOTS:
        raise InputError("trace", "--at-submit", None, f"{len(out):,} submit times, more than {MAX_SNAPSHOTS:,}: "
                         "narrow --from/--to")
    return out


def _probe_dask(address: str) -> None:
    """A plain-TCP Dask scheduler speaks first: its handshake arrives as soon as one connects.
    Anything else at the address (a web server waits for a request) would hold Dask's own
    connect for ever, so refuse it here: InputError (exit 2) unless the first bytes come within
    ``DASK_CONNECT`` seconds. (``tls://`` and websockets are left to Dask.)"""
    import socket

    scheme, _, rest = address.rpartition("://")
    if scheme not in ("", "tcp"):
        return
    host, _, port = rest.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=DASK_CONNECT) as conn:
            conn.settimeout(DASK_CONNECT)
            if conn.recv(1):
                return
            why = "it closed the connection without a word"
    except TimeoutError:
        why = f"nothing answered within {DASK_CONNECT} s"
    except OSError as err:
        why = err.strerror or str(err)
    raise InputError("--dask", None, address, f"no Dask scheduler there: {why}")


def snapshot_times(trace, when: tuple[str, int | None, int | None, int] | None) -> list[int]:
    """The snapshot times (seconds after the trace's start) ``Settings.when`` describes."""
    if when is None:
        return []
    kind, start, stop, every = when
    return submit_times(trace, start, stop) if kind == "submits" else times(trace, every, start, stop)


def _quiet_worker() -> None:
    """A worker process dies quietly when the command stops it (SIGTERM's default action) and
    leaves Ctrl-C to the command: with the handlers it inherited, each busy worker printed a
    traceback under the command's one-line error."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Stop the workers now and cancel what they had not begun. The pool's manager thread may
    then try to fail a future that is already cancelled and print InvalidStateError's traceback
    under the command's one-line error (CPython gh-107219, fixed in 3.12): that one is dropped."""
    previous = threading.excepthook

    def hook(args) -> None:
        if args.exc_type is not InvalidStateError:
            previous(args)

    threading.excepthook = hook
    try:
        for process in list((pool._processes or {}).values()):
            process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
    finally:
        threading.excepthook = previous


def run_phase1(settings: Settings, ats: list[int], workers: int = 1, dask: str | None = None,
               progress: Callable[[int, int], None] | None = None) -> list[list[Raw]]:
    """Phase 1 for every snapshot, in ``ats`` order, on one process, ``workers`` processes
    or the Dask cluster at ``dask``."""
    if dask is not None:
        from dask.distributed import Client  # optional: pip install 'jufo[dask]'

        _probe_dask(dask)
        try:
            client = Client(dask, timeout=DASK_CONNECT, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as err:  # refused, unreachable, not a Dask scheduler
            raise InputError("--dask", None, dask, f"no Dask scheduler answered there within {DASK_CONNECT} s "
                             f"({type(err).__name__}: {str(err)[:200]})") from None
        with client:
            futures = client.map(snapshot_forecasts, [settings] * len(ats), ats, pure=True)
            return client.gather(futures)
    if workers <= 1:
        out = []
        for i, at in enumerate(ats):
            out.append(snapshot_forecasts(settings, at))
            if progress:
                progress(i + 1, len(ats))
        return out
    pool = ProcessPoolExecutor(workers, initializer=_quiet_worker)
    try:
        out = []
        for i, result in enumerate(pool.map(snapshot_forecasts, [settings] * len(ats), ats, chunksize=1)):
            out.append(result)
            if progress:
                progress(i + 1, len(ats))
        pool.shutdown()
        return out
    except BaseException:  # a --timeout, SIGTERM or Ctrl-C: stop the workers now, not after their snapshots
        _stop_pool(pool)
        raise


@dataclass
class Forecast:
    """One scored forecast of the backtest (epoch seconds)."""

    raw: Raw
    best: int
    lo: int | None
    hi: int | None


def calibrate(per_snapshot: list[list[Raw]], coverage: float, keep_days: int = KEEP_DAYS) -> list[Forecast]:
    """Phase 2: each snapshot's ranges from the forecasts of earlier snapshots, scored with
    what was known at its time (a start before it, else still waiting: censored) — as
    ``Calibration`` scores them, the forecasts kept sorted between snapshots in a
    ``ScoredWindow`` rather than gathered and sorted again at each."""
    out: list[Forecast] = []
    window = ScoredWindow(keep_days * 86400, SCORED_LIMIT)
    for raws in per_snapshot:
        if not raws:
            continue
        now = raws[0].made
        window.advance(now)
        calibration = window.calibration(now, coverage, _settled(out, now, now - keep_days * 86400))
        for r in raws:
            if r.learned is None:
                out.append(Forecast(r, r.learned, None, None))
                continue
            found = calibration.range(now, r.learned, r.upper, r.step, r.lower)
            if found is None:
                out.append(Forecast(r, r.learned, None, None))
            else:
                out.append(Forecast(r, found[0], found[1], found[2]))
        for r in raws:
            if r.learned is not None:
                window.add(r.made, r.learned, r.actual, r.job or str(r.made))
    return out


def _settled(done: list[Forecast], now: int, since: int) -> Iterator[tuple[str, bool]]:
    """``(job, held)`` of the ranges given before ``now`` (and after ``since``) that are settled
    at ``now``, newest first, as ``calibration.settled`` reads them from a history."""
    for f in reversed(done):
        if f.raw.made < since:
            return
        found = held(f.lo, f.hi, f.raw.actual if f.raw.actual < now else None, now)
        if found is not None:
            yield f.raw.job or str(f.raw.made), found


def range_stats(forecasts: list[Forecast]) -> dict[str, float]:
    """Share of real starts inside the range and the range's median width, over forecasts
    that have one; and the share that have one."""
    return accuracy.range_stats([(f.lo, f.hi, f.raw.actual) for f in forecasts])


@dataclass
class Summary:
    """The backtest's figures, overall and by real wait."""

    snapshots: int
    forecasts: int
    unpredicted: int  # waiting jobs one of the simulations gave no start
    median_wait: float
    overall: dict[str, dict[str, float]] = field(default_factory=dict)
    by_wait: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    cancelled: int = 0  # jobs cancelled while pending: queued until they left, none of their forecasts scored
    unrequested: int = 0  # jobs without a requested time (SWF's -1, sacct's UNLIMITED): in no snapshot


def summarize(forecasts: list[Forecast], snapshots: int) -> Summary:
    """Figures of the three forecasters over the forecasts both simulations gave a start."""
    usable = [f for f in forecasts if f.raw.learned is not None and f.raw.wall is not None]
    summary = Summary(snapshots, len(usable), len(forecasts) - len(usable),
                      statistics.median(f.raw.actual - f.raw.made for f in usable) if usable else 0.0)

    def figures(group: list[Forecast]) -> dict[str, dict[str, float]]:
        rows = {
            "walltime": [(f.raw.made, f.raw.wall, f.raw.actual) for f in group],
            "starts now": [(f.raw.made, f.raw.made, f.raw.actual) for f in group],
            "history": [(f.raw.made, f.best, f.raw.actual) for f in group],
        }
        out = {name: error_stats(r) for name, r in rows.items()}
        out["history"].update(range_stats(group))
        return out

    summary.overall = figures(usable)
    for label, group in accuracy.by_wait_class(usable, lambda f: f.raw.actual - f.raw.made).items():
        summary.by_wait[label] = figures(group)
    return summary


def backtest(settings: Settings, every: int, start: int | None = None, stop: int | None = None,
             coverage: float = DEFAULT_COVERAGE, workers: int = 1, dask: str | None = None,
             progress: Callable[[int, int], None] | None = None,
             at_submit: bool = False) -> tuple[Summary, list[Forecast]]:
    """The whole protocol: phase 1 on the chosen engine, phase 2, figures. With
    ``at_submit``, a snapshot at each submit time instead of every ``every`` seconds, and only
    the jobs submitted at that second are scored: the what-if question ("if I submit this now,
    when does it start?") asked of every job, as ``jufo whatif`` answers it (the ranges still
    learn from every waiting job's forecast)."""
    trace = _load(settings)[0]
    settings = replace(settings, when=("submits", start, stop, 0) if at_submit else ("every", start, stop, every))
    ats = snapshot_times(trace, settings.when)
    if not any(j.wait > 0 for j in trace.jobs):
        raise InputError(settings.trace, "wait time (field 3)", None, f"no job of its {len(trace.jobs):,} waited (field 3 is 0 or "
                         "-1, unknown, on every line): a backtest compares forecasts with the real starts, and "
                         "this trace records none that waited")
    if all(j.requested < 0 for j in trace.jobs):
        raise InputError(settings.trace, "requested time (field 9; sacct: Timelimit)", None,
                         f"unknown for all {len(trace.jobs):,} jobs: the walltime forecast plans each job for its "
                         "requested time, and this trace records none")
    if not ats:
        raise InputError("trace", "--from" if start is not None or stop is not None else "--every", None,
                         f"no job waits at any snapshot time from {start if start is not None else 'the start'} "
                         f"to {stop if stop is not None else 'the end'}: nothing to forecast")
    raw = run_phase1(settings, ats, workers, dask, progress)
    forecasts = calibrate(raw, coverage, settings.keep_days)
    if at_submit:
        forecasts = [f for f in forecasts if f.raw.submit == f.raw.made]
    return replace(summarize(forecasts, len(ats)), cancelled=sum(j.cancelled for j in trace.jobs),
                   unrequested=sum(j.requested < 0 for j in trace.jobs)), forecasts


def retro_forecasts(settings: Settings, start: int | None, stop: int | None, workers: int = 1,
                    progress: Callable[[int, int], None] | None = None) -> list[tuple[int, list[tuple]]]:
    """Forecasts as jufo would have made them every hour from ``start`` to ``stop`` (seconds
    after the trace's start), each knowing only what the accounting showed then — the
    backtest's phase 1 — as rows for ``History.record_forecasts`` (model ``retro``): a history
    imported from accounting then has scored forecasts, and ranges, from its first run.
    Job ids are the accounting's own (``Trace.ids``). ``[(made, rows)]`` in time order."""
    trace = _load(settings)[0]
    settings = replace(settings, when=("every", start, stop, RETRO_EVERY))
    ats = snapshot_times(trace, settings.when)
    ids = trace.ids or {}
    out = []
    for raws in run_phase1(settings, ats, workers, None, progress):
        rows = [(ids.get(int(r.job), r.job) if r.job.isdigit() else r.job, r.learned, r.wall, r.learned,
                 None, None, None, None, "retro", None) for r in raws if r.learned is not None]
        if rows:
            out.append((raws[0].made, rows))
    return out


def table(summary: Summary, title: str) -> str:
    """The backtest as text: one block overall, one per real-wait class."""
    lines = [title,
             f"  {summary.snapshots} snapshots, {summary.forecasts:,} forecasts "
             f"({summary.unpredicted} without a simulated start left out); median real wait "
             f"{summary.median_wait:,.0f} s"]
    if summary.cancelled:
        lines.append(f"  {summary.cancelled:,} jobs cancelled before they started: queued until they left, "
                     "none of their forecasts scored")
    if summary.unrequested:
        lines.append(f"  {summary.unrequested:,} jobs without a requested time (-1; sacct: UNLIMITED) left out of every "
                     "snapshot: they neither wait nor hold processors there")
    lines += accuracy.blocks_text([("all forecasts", summary.overall), *summary.by_wait.items()], FORECASTERS)
    return "\n".join(lines)
