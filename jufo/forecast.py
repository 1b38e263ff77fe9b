"""One prediction end to end: snapshot → scheduling objects → simulation → result data.

This is the glue the commands call; each step lives in its own module.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from . import __version__, dependency, jobsets
from .configuration import Configuration, check_keys
from .dates import DEFAULT_FORMAT, date_writer, parse_date
from .errors import InputError, Report
from .job import Job, JobReader
from .lml import Document
from .node import Machine, read_nodes, parse_nodelist
from .queue import Queue, read_queues
from .ranges import NodeCores, format_nested, format_whole_nodes, lowest, ranges_of
from .reservation import Reservation, cores_only, read_reservations
from .behaviour import Behaviour
from .simulation import Simulation
from .state import NodeState, SystemState
from .windows import AllRules, QueueWindows


@dataclass
class Snapshot:
    """The scheduling objects read from one document."""

    epoch: int  # system_time, epoch seconds
    date_format: str
    machine: Machine
    queues: dict[str, Queue]
    jobs: list[Job]
    reservations: list[Reservation]
    scheduler: dict[str, str]
    scheduler_label: str
    job_problems: list[str] = field(default_factory=list)
    throttles: dict[str, int] = field(default_factory=dict)  # job array → tasks running at once

    def fresh(self) -> Snapshot:
        """The same snapshot with its jobs as read, for another simulation of it."""
        return replace(self, jobs=[job.fresh() for job in self.jobs])


LATEST_SYSTEM_TIME = 221845392000  # 9000-01-01: room for a century of walls before the year 9999


def read_snapshot(doc: Document, report: Report, jobs: list[Job] | None = None) -> Snapshot | None:
    """Read system time, nodes, queues, jobs, reservations and scheduler keys. ``jobs``:
    already read (a trace replay builds them directly), in place of the document's.

    Fatal problems raise InputError, or, when the report collects them, reading goes on as
    far as it can (None only without a usable system_time).
    """
    for oid in doc.unknown_info_ids:
        report.warn(f"info {oid}", "oid", oid, "names no object; ignored")
    epoch, fmt = None, DEFAULT_FORMAT
    systems = doc.of_type("system")
    raw = next((o.data["system_time"] for o in systems if "system_time" in o.data), None)
    label = systems[0].label if systems else "system"
    if raw is None:
        report.error(label, "system_time", None, "missing; it is the time the prediction starts from")
    else:
        try:
            epoch, fmt = parse_date(raw)
            if epoch > LATEST_SYSTEM_TIME:
                raise ValueError("after the year 9000: predicted dates could not be written back")
        except ValueError as err:
            report.error(label, "system_time", raw, str(err))
    machine = read_nodes(doc.of_type("node"), report)
    if not machine.nodes and not report.errors:
        report.error("snapshot", "node", None, "no node objects: jufo needs the system's nodes")
    queues = read_queues(doc.of_type("queue"), report)
    scheduler: dict[str, str] = {}
    schedulers = doc.of_type("scheduler")
    for obj in schedulers:
        scheduler.update(obj.data)
    scheduler_label = schedulers[0].label if schedulers else "scheduler"
    if epoch is None:
        return None
    reservations = read_reservations(doc.of_type("reservation"), machine, epoch, report)
    reader = JobReader(epoch, machine.max_cores, report, nodes=machine.by_name)
    if jobs is None:
        jobs = [reader.read(obj) for obj in doc.of_type("job")]
    jobs, throttles = jobsets.expand_arrays(jobs, report)
    jobsets.combine_het(jobs)
    return Snapshot(epoch, fmt, machine, queues, jobs, reservations, scheduler, scheduler_label, reader.problems,
                    throttles)


@dataclass
class Forecast:
    """A finished prediction."""

    snapshot: Snapshot
    config: Configuration
    simulation: Simulation

    @property
    def jobs(self) -> list[Job]:
        return self.snapshot.jobs


def prepare(doc: Document, report: Report, overrides: dict[str, str] | None = None,
            jobs: list[Job] | None = None) -> tuple[Snapshot, Configuration] | None:
    """Read the snapshot and check the configuration; None if anything fatal was collected.
    ``overrides`` (a preset, then ``--set`` keys) win over the snapshot's scheduler object;
    ``jobs``: already read, in place of the document's (see ``read_snapshot``)."""
    snap = read_snapshot(doc, report, jobs)
    if snap is None:
        return None
    settings = {**snap.scheduler, **(overrides or {})}
    config = Configuration.read(settings, snap.scheduler_label, snap.jobs, report)
    if config is None or report.errors:
        return None
    return snap, config


PRESET_LIMIT = 16 * 2**20  # bytes: a preset is one scheduler object


def load_preset(name: str) -> dict[str, str]:
    """Scheduler keys of a preset: an LML file with one scheduler object, by path or by the
    name of a file in ``configs/`` (``juropa-moab``). InputError (exit 2) if there is none."""
    from pathlib import Path

    from .lml import read

    path = Path(name)
    if not path.exists():
        local = Path(__file__).resolve().parent.parent / "configs" / f"{name.removesuffix('.xml')}.xml"
        if local.exists():
            path = local
        else:
            from importlib import resources

            try:
                packaged = resources.files("jufo.configs") / f"{name.removesuffix('.xml')}.xml"
                found = packaged.is_file()
            except ModuleNotFoundError:
                found = False
            if not found:
                raise InputError(name, "--config", name, "no such file, nor a preset of that name in configs/")
            path = Path(str(packaged))
    doc = read(str(path), limit=PRESET_LIMIT)
    schedulers = doc.of_type("scheduler")
    if not schedulers:
        raise InputError(str(path), "scheduler", None, "a preset needs one scheduler object")
    settings: dict[str, str] = {}
    for obj in schedulers:
        settings.update(obj.data)
    check_keys(settings, str(path))
    return settings


def predict(doc: Document, report: Report, overrides: dict[str, str] | None = None,
            progress=None, jobs: list[Job] | None = None) -> Forecast | None:
    """Simulate the document's scheduler. None only when collecting errors (validate).
    ``progress(started, queued)`` is called now and then during long runs; ``jobs`` see
    ``read_snapshot``."""
    prepared = prepare(doc, report, overrides, jobs)
    if prepared is None:
        return None
    snap, config = prepared
    return simulate(snap, config, report, progress)


def queue_windows(snap: Snapshot) -> QueueWindows | None:
    """The queues' configured start windows and node caps by time of day, if any queue has them."""
    config = {q.name: (q.windows, q.maxnodes, q.window_end) for q in snap.queues.values()
              if q.windows or q.maxnodes}
    if not config:
        return None
    windows = QueueWindows(config, snap.epoch)
    return windows if windows.active else None


def simulate(snap: Snapshot, config: Configuration, report: Report, progress=None,
             behaviour: Behaviour | None = None) -> Forecast:
    """Run the configured scheduler over the snapshot's jobs, with learned habits if given
    (run times where the snapshot gives none, start windows, user caps)."""
    state = config.make_state(snap.machine, snap.queues)
    sim = config.make_simulation(state, snap.epoch, report)
    for reason, caps in limit_caps(snap.jobs).items():
        state.limits.limit_users(caps, source=f" (the batch system says {reason})")
    if snap.throttles:
        state.limits.throttle(snap.throttles)
    if behaviour is not None:
        for job in snap.jobs:
            predicted = behaviour.runtimes.get(job.id)
            if predicted is not None and job.actual is None:
                job.actual = min(predicted[0], job.wall)
        if behaviour.user_caps:
            running = Counter(job.owner for job in snap.jobs if job.running)
            caps = {user: max(cap, running[user]) for user, cap in behaviour.user_caps.items()}
            state.limits.limit_users(caps, source=" (learned from history)")
        if behaviour.windows is not None and behaviour.windows.active:
            sim.rules = behaviour.windows
    configured = queue_windows(snap)
    if configured is not None:
        sim.rules = configured if sim.rules is None else AllRules([configured, sim.rules])
    running = [job for job in snap.jobs if job.running]
    reservations: list[Any] = snap.reservations
    if not isinstance(state, NodeState):
        reservations = cores_only(snap.reservations, snap.machine)
    sim.progress = progress
    waiting = [job for job in snap.jobs if not job.running and job.reason is None and job.leader is None]
    if sim.rules is not None:  # a queue window no opening of which fits the job: it never starts
        for job in waiting:
            if sim.rules.next_start(job, 0) is None:
                job.reason = sim.rules.why(job)
        waiting = [job for job in waiting if job.reason is None]
    sim.run(running, lambda job: place_running(job, state, report), reservations, waiting,
            dependency.resolve(snap.jobs))
    jobsets.follow_leaders(snap.jobs)
    return Forecast(snap, config, sim)


def limit_caps(jobs: list[Job]) -> dict[str, dict[str, int]]:
    """Users the batch system holds back by a per-user or association limit (Slurm's
    ``QOSMaxJobsPerUserLimit``, ``AssocGrpCpuLimit``, ...): they may run no more jobs at
    once than they run now. By reason, user → cap; users running nothing are not capped
    (what holds them back is not theirs to free)."""
    running = Counter(job.owner for job in jobs if job.running)
    out: dict[str, dict[str, int]] = {}
    for job in jobs:
        if job.limited and job.reason is None and running[job.owner] and job.owner:
            out.setdefault(job.limited, {})[job.owner] = running[job.owner]
    return out


def place_running(job: Job, state: SystemState, report: Report) -> Any:
    """Resources a running job holds: its node list, else the lowest free cores.

    Cores a node list claims that another running job already holds are counted once, with
    a warning. Without node sharing a running job holds its nodes whole.
    """
    if not isinstance(state, NodeState):
        return job.total_cores
    machine = state.machine
    shape = machine.shape
    if job.nodelist:
        try:
            entries = parse_nodelist(job.nodelist, machine, job.total_cores)
        except ValueError as err:
            report.warn(job.label, "nodelist", job.nodelist, f"{err}; placing the job on the lowest free cores")
        else:
            wanted = NodeCores()
            for node, mask, count in entries:
                if not state.sharing:
                    mask = shape[node]
                elif mask is None:
                    count = count if count is not None else job.cores_per_node
                    free = state.free.mask(node, shape)
                    mask = lowest(free, count) or lowest(shape[node], count) or shape[node]
                wanted.add_node(node, mask, shape)
            taken = state.used_now(wanted)
            if taken:
                report.warn(job.label, "nodelist", job.nodelist,
                            "claims cores another running job holds; they are counted once")
                wanted.subtract(taken, shape)
            return wanted
    found = state.place_now(job)
    if found is None:
        report.warn(job.label, "nodelist", job.nodelist, "no free cores left for this running job; it holds none")
        return NodeCores()
    return found


def results(forecast: Forecast) -> dict[str, list[tuple[str, str]]]:
    """The data each job object gets: dates, resources, flags, or the reason for no start."""
    snap = forecast.snapshot
    machine = snap.machine

    write, epoch = date_writer(snap.date_format), snap.epoch

    def when(seconds: int) -> str:
        return write(epoch + seconds)

    out: dict[str, list[tuple[str, str]]] = jobsets.aggregate(snap.jobs, when)
    for job in snap.jobs:  # (dates without a call of ours each: 57,000 on KTH)
        if job.parent is not None:
            continue  # an array task: written onto its array record
        pairs: list[tuple[str, str]] = []
        if job.start is not None or job.running:
            if not job.running:
                pairs.append(("jufo_starttime", write(epoch + job.start)))
            pairs.append(("jufo_endtime", write(epoch + job.end)))
            if job.resources is not None:
                pairs.extend(resource_pairs(job.resources, machine))
            if job.topdog:
                pairs.append(("jufo_topdog", "1"))
            if job.backfilled:
                pairs.append(("jufo_backfilled", "1"))
        elif job.reason:
            pairs.append(("jufo_reason", job.reason))
        out[job.id] = pairs
    return out


def resource_pairs(resources: Any, machine: Machine) -> list[tuple[str, str]]:
    """``jufo_nodelist`` and ``jufo_ranges`` for node sets, ``jufo_resources`` for counts."""
    if isinstance(resources, NodeCores):
        if not resources.part and machine.uniform_cores is not None:  # whole nodes: by runs of nodes
            labels = machine.labels
            runs = ranges_of(resources.full)
            return [("jufo_nodelist", "".join(["".join(labels[lo:hi + 1]) for lo, hi in runs])),
                    ("jufo_ranges", format_whole_nodes(runs, machine.uniform_cores))]
        pairs = resources.pairs(machine.shape)
        names = "".join(f"({machine.nodes[n].name},{mask.bit_count()})" for n, mask in pairs)
        return [("jufo_nodelist", names), ("jufo_ranges", format_nested(pairs))]
    return [("jufo_resources", f"cores={resources}")]


__all__ = ["InputError", "Forecast", "Snapshot", "predict", "read_snapshot", "results"]


def provenance(doc: Document, config: Configuration) -> dict[str, list[tuple[str, str]]]:
    """What the system object gets, so a stale output can be told from a fresh one: the jufo
    version, when the run happened (UTC; ``SOURCE_DATE_EPOCH`` pins it for reproducible
    output) and the effective scheduler settings."""
    systems = doc.of_type("system")
    if not systems:
        return {}
    version = __version__  # (not importlib.metadata's lookup: 17 ms of imports and a scan of site-packages)
    pinned = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    now = int(pinned) if pinned.isdigit() else int(time.time())
    settings = ";".join(f"{k}={v}" for k, v in sorted(config.settings.items()))
    return {systems[0].id: [("jufo_version", version),
                            ("jufo_generated", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))),
                            ("jufo_settings", settings)]}
