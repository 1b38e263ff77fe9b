"""One prediction of a snapshot: the configured scheduler run over its jobs, and the data each
job object gets back (simulate → result data).

``simulate`` takes what the forecast that learns hands over as a ``Behaviour`` (run times,
user caps, start windows); the engine knows nothing of how those were learned.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from collections.abc import Callable
from typing import Any

from ..io.dates import date_writer
from ..io.errors import Report
from . import dependency, jobsets
from .configuration import YES_NO, Configuration
from .job import Job
from .node import Machine, parse_nodelist
from .ranges import NodeCores, format_nested, format_whole_nodes, lowest, ranges_of
from .reservation import cores_only
from .simulation import Simulation
from .snapshot import Snapshot
from .node_state import NodeState
from .plan import plan_pending
from .state import SystemState
from .windows import AllRules, QueueWindows, WeeklyWindows


@dataclass
class Behaviour:
    """Learned habits handed to the simulation, and the run-time model name per job."""

    windows: WeeklyWindows | None = None
    user_caps: dict[str, int] = field(default_factory=dict)
    runtimes: dict[str, tuple[int, str]] = field(default_factory=dict)  # job id → (seconds, model)
    # waiting job id → the odds it is cancelled before it starts: the simulation holds its nodes
    # for that share less of its run time, the work the queue can expect of it
    cancel_odds: dict[str, float] = field(default_factory=dict)
    # owner → seconds later its waiting jobs are ordered, as if queued then (a fair share the
    # history shows); applied only where the priority is the submit order (``JobSorter.order_by_standing``)
    user_lags: dict[str, int] = field(default_factory=dict)


@dataclass
class Forecast:
    """A finished prediction."""

    snapshot: Snapshot
    config: Configuration
    simulation: Simulation

    @property
    def jobs(self) -> list[Job]:
        return self.snapshot.jobs


def queue_windows(snap: Snapshot) -> QueueWindows | None:
    """The queues' configured start windows and node caps by time of day, if any queue has them."""
    config = {q.name: (q.windows, q.maxnodes, q.window_end) for q in snap.queues.values()
              if q.windows or q.maxnodes}
    if not config:
        return None
    windows = QueueWindows(config, snap.epoch)
    return windows if windows.active else None


# Reservations the simulation with learned run times keeps at most (per queue with
# topdogs_per_queue). There every job ends before its wall, and each early end moves or remakes
# every reservation: with Slurm's default of 500 (bf_max_job_test) on a JUROPA-size queue of
# 1,600 jobs, predict --history took minutes, with 20 it takes 6 s. Deeper jobs start where
# they fit without delaying the first 20, or once among them. On the three Slurm lab records
# the history forecast is the same with 20 as with every job reserved (median absolute error
# 42, 38 and 68 s; within 5 min 97.2, 96.2 and 96.5 %); with 10 it begins to differ.
LEARNED_TOPDOGS = 20


def simulate(snap: Snapshot, config: Configuration, report: Report, progress=None,
             behaviour: Behaviour | None = None) -> Forecast:
    """Run the configured scheduler over the snapshot's jobs, with learned habits if given
    (run times where the snapshot gives none, start windows, user caps)."""
    state = config.make_state(snap.machine, snap.queues)
    sim = config.make_simulation(state, snap.epoch, report)
    if behaviour is not None and sim.policy.maxtopdogs > LEARNED_TOPDOGS:
        sim.policy = replace(sim.policy, maxtopdogs=LEARNED_TOPDOGS)
    held: dict[str, set[str]] = {}  # kind → users held to a QOS's MaxTRESPU of it
    for qos, (cores, nodes) in qos_tres_caps(snap.jobs, snap.qos_tres).items():
        state.limits.limit_user_tres(cores, nodes, source=f" (MaxTRESPU of QOS {qos})")
        held.setdefault("cores", set()).update(cores)
        held.setdefault("nodes", set()).update(nodes)
    in_capped: set[str] = set()  # users with a job of an account held to its QOS's MaxJobsPA or MaxTRESPA
    for qos, (jobs, cores, nodes) in qos_account_caps(snap.jobs, snap.qos_account_limits, snap.qos_account_tres).items():
        state.limits.limit_accounts(jobs, cores, nodes, source=f" (MaxJobsPA/MaxTRESPA of QOS {qos})")
        capped = {*jobs, *cores, *nodes}
        in_capped.update(job.owner for job in snap.jobs if job.data.get("account", "").strip() in capped)
    groups = qos_group_caps(snap.jobs, snap.qos_group_limits, snap.qos_group_tres)
    for qos, (jobs, cores, nodes, source) in groups.items():
        state.limits.limit_qos({qos: jobs} if jobs else {}, {qos: cores} if cores else {},
                               {qos: nodes} if nodes else {}, source=source)
    for reason, caps in limit_caps(snap.jobs).items():
        kind = TRES_REASONS.get(reason)
        if reason in GROUP_REASONS:  # the QOS's, held as such (``qos_group_caps``): not the user's
            continue
        if kind is not None:  # the exact limit is known: not "no more jobs than now"
            caps = {user: cap for user, cap in caps.items() if user not in held.get(kind, ())}
        elif reason in ACCOUNT_REASONS:  # the account's, where its limit is known
            caps = {user: cap for user, cap in caps.items() if user not in in_capped}
        if caps:
            state.limits.limit_users(caps, source=f" (the batch system says {reason})")
    for qos, caps in qos_caps(snap.jobs, snap.qos_limits).items():
        state.limits.limit_users(caps, source=f" (MaxJobsPU of QOS {qos})")
    if snap.throttles:
        state.limits.throttle(snap.throttles)
    if behaviour is not None:
        for job in snap.jobs:
            predicted = behaviour.runtimes.get(job.id)
            if predicted is not None and job.actual is None:
                job.actual = min(predicted[0], job.wall)
                odds = behaviour.cancel_odds.get(job.id)
                if odds:
                    job.actual = round(job.actual * (1 - odds))
                job.learned = job.actual < job.wall  # (one predicted at its wall ends there, as without a history)
        if behaviour.user_caps:
            running = Counter(job.owner for job in snap.jobs if job.running)
            caps = {user: max(cap, running[user]) for user, cap in behaviour.user_caps.items()}
            state.limits.limit_users(caps, source=" (learned from history)")
        if behaviour.windows is not None and behaviour.windows.active:
            sim.rules = behaviour.windows
        if behaviour.user_lags:
            sim.sorter.order_by_standing(behaviour.user_lags, [job for job in snap.jobs if not job.running])
    configured = queue_windows(snap)
    if configured is not None:
        sim.rules = configured if sim.rules is None else AllRules([configured, sim.rules])
    if not config.exclusive_given and config.sharing and isinstance(state, NodeState):
        found = exclusive_by_evidence(snap.jobs, snap.machine)
        for queue in sorted(found - config.exclusive_queues):
            report.warn(f"queue {queue}", None, None, "every running job of it holds whole nodes, so its waiting "
                        "jobs are taken to as well (Slurm's OverSubscribe=EXCLUSIVE; scheduler key "
                        "exclusive_queues says which queues do, 'none' for none)")
        config = replace(config, exclusive_queues=config.exclusive_queues | found)
    whole_nodes(snap.jobs, snap.machine, config.exclusive_queues)
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
    forecast = Forecast(snap, config, sim)
    # the walltime-only forecast: what Slurm plans. Not where jobs carry their real run times (a
    # replay, swf2lml --actual): that is the simulation of what happens, which one plan made at
    # time zero with walltimes is not (a lab's replay was 613 s off Slurm's residences with it)
    if behaviour is None and config.plan == "slurm" and not any(job.actual is not None for job in snap.jobs):
        plan_pending(snap, config, sim)
    jobsets.follow_leaders(snap.jobs)
    return forecast


EVIDENCE_RUNNING = 3  # running jobs a queue needs before its whole-node habit counts


def exclusive_by_evidence(jobs: list[Job], machine: Machine) -> frozenset[str]:
    """Queues that evidently give whole nodes (Slurm's ``OverSubscribe=EXCLUSIVE``, which
    LLview 2's files do not say): at least ``EVIDENCE_RUNNING`` running jobs, each holding
    every core of every node its node list names, and a waiting job asking for fewer cores
    per node than that (else it makes no difference). A queue whose jobs share nodes, or
    whose node lists do not give cores, is not one.  O(running jobs' node list entries)."""
    whole: dict[str, bool] = {}
    seen: Counter = Counter()
    for job in jobs:
        if not job.running or whole.get(job.queue) is False:
            continue
        entries = None
        if job.nodelist:
            try:
                entries = parse_nodelist(job.nodelist, machine, job.total_cores)
            except ValueError:
                entries = None
        ok = bool(entries)
        for node, mask, count in entries or ():
            held = _entry_cores(mask, count)
            if held is None or held < (machine.nodes[node].limit(job.queue) or machine.nodes[node].ncores):
                ok = False
                break
        whole[job.queue] = ok
        seen[job.queue] += ok
    found = {q for q, ok in whole.items() if ok and seen[q] >= EVIDENCE_RUNNING}
    if not found:
        return frozenset()
    widest = {q: max((n.limit(q) for n in machine.nodes), default=0) for q in found}
    return frozenset(q for q in found if any(not job.running and job.queue == q and job.reason is None
                                             and 0 < job.cores_per_node < widest[q] for job in jobs))


def whole_nodes(jobs: list[Job], machine: Machine, queues: frozenset[str]) -> None:
    """Waiting jobs of an exclusive queue, or that asked for whole nodes themselves (``exclusive``,
    from Slurm's ``--exclusive``), take every core of each node: Slurm shows a pending exclusive
    job with one core per node, and packing others beside it would start them too early.
    Idempotent, so a second simulation of the same jobs gives the same sizes.  O(jobs)."""
    sizes: dict[str, int] = {}
    for job in jobs:
        asked = YES_NO.get(job.data.get("exclusive", "").strip().lower())
        if job.running or not (job.queue in queues or asked):
            continue
        size = sizes.get(job.queue)
        if size is None:
            size = sizes[job.queue] = max((n.limit(job.queue) for n in machine.nodes), default=0) or machine.max_cores
        job.cores_per_node = size
        job.total_cores = job.nodes * size


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


def one_qos_users(jobs: list[Job], holder: Callable[[Job], str] = lambda job: job.owner
                  ) -> dict[str, tuple[str, list[Job]]]:
    """Users whose running and waiting jobs are all of one QOS: user → (the QOS, its running
    jobs). jufo caps a user over all queues, so only these can be held to a QOS's limits.
    ``holder``: whose jobs they are (the owner; a job's account for the limits per account).

    >>> bob = [Job("b1", 5, {"qos": "normal"}, "Running", owner="bob"), Job("b2", 6, {"qos": "long"}, "Idle", owner="bob")]
    >>> {u: (q, len(r)) for u, (q, r) in one_qos_users(bob[:1] + [Job("c", 7, {}, "Idle", owner="cy")]).items()}
    {'bob': ('normal', 1), 'cy': ('', 0)}
    >>> one_qos_users(bob)
    {}
    """
    kinds: dict[str, set[str]] = {}
    running: dict[str, list[Job]] = {}
    for job in jobs:
        who = holder(job)
        if who and (job.running or job.waiting):
            kinds.setdefault(who, set()).add(job.data.get("qos", "").strip())
            mine = running.setdefault(who, [])
            if job.running:
                mine.append(job)
    return {user: (next(iter(qos)), running[user]) for user, qos in kinds.items() if len(qos) == 1}


def qos_caps(jobs: list[Job], limits: dict[str, int]) -> dict[str, dict[str, int]]:
    """Users whose QOS lets them run at most so many jobs at once (``limits``: Slurm's
    ``MaxJobsPU`` by QOS, from the snapshot's class objects): by QOS, user → cap, for the
    users of ``one_qos_users``; a cap below what the user runs now is raised to that.

    >>> ann = [Job(str(k), k, {"qos": "normal"}, "Running" if k < 2 else "Idle", owner="ann") for k in range(4)]
    >>> bob = [Job("b1", 5, {"qos": "normal"}, "Idle", owner="bob"), Job("b2", 6, {"qos": "long"}, "Idle", owner="bob")]
    >>> qos_caps(ann + bob, {"normal": 3}), qos_caps(ann, {"normal": 1}), qos_caps(ann, {})
    ({'normal': {'ann': 3}}, {'normal': {'ann': 2}}, {})
    """
    out: dict[str, dict[str, int]] = {}
    for user, (qos, running) in (one_qos_users(jobs) if limits else {}).items():
        if qos in limits:
            out.setdefault(qos, {})[user] = max(limits[qos], len(running))
    return out


def qos_account_caps(jobs: list[Job], limits: dict[str, int], tres: dict[str, dict[str, int]]
                     ) -> dict[str, tuple[dict[str, int], dict[str, int], dict[str, int]]]:
    """Accounts whose QOS lets their users together run at most so many jobs, cores and nodes at
    once (Slurm's ``MaxJobsPA`` and ``MaxTRESPA``, from the snapshot's class objects): by QOS,
    (account → jobs, account → cores, account → nodes), for the accounts whose running and
    waiting jobs are all of one QOS (jufo caps an account over all queues); a cap below what the
    account holds now is raised to that.  O(jobs).

    >>> a = [Job(str(k), k, {"qos": "normal", "account": "p1"}, "Running" if k < 3 else "Idle", owner=f"u{k % 2}")
    ...      for k in range(5)]
    >>> for job in a:
    ...     job.nodes, job.total_cores = 1, 4
    >>> qos_account_caps(a, {"normal": 2}, {"normal": {"cores": 20}})
    {'normal': ({'p1': 3}, {'p1': 20}, {})}
    >>> qos_account_caps(a + [Job("b", 9, {"qos": "long", "account": "p1"}, "Idle", owner="u0")], {"normal": 2}, {})
    {}
    """
    if not limits and not tres:
        return {}
    out: dict[str, tuple[dict[str, int], dict[str, int], dict[str, int]]] = {}
    for account, (qos, held) in one_qos_users(jobs, lambda job: job.data.get("account", "").strip()).items():
        if qos not in limits and qos not in tres:
            continue
        caps = out.setdefault(qos, ({}, {}, {}))
        if qos in limits:
            caps[0][account] = max(limits[qos], len(held))
        most = tres.get(qos, {})
        if "cores" in most:
            caps[1][account] = max(most["cores"], sum(job.total_cores for job in held))
        if "nodes" in most:
            caps[2][account] = max(most["nodes"], sum(job.nodes for job in held))
    return out


# Slurm's reasons for a job a user's QOS MaxTRESPU holds back, and the resource each counts
TRES_REASONS = {"QOSMaxCpuPerUserLimit": "cores", "QOSMaxNodePerUserLimit": "nodes"}
# ... and those for a job its account's QOS MaxJobsPA or MaxTRESPA holds back (job_state_reason.c)
ACCOUNT_REASONS = {"MaxJobsPerAccount", "MaxCpuPerAccount", "MaxNodePerAccount"}


# Slurm's reasons for a job its QOS's GrpJobs or GrpTRES holds back (all the QOS's jobs
# together), and what each counts
GROUP_REASONS = {"QOSGrpJobsLimit": 0, "QOSGrpCpuLimit": 1, "QOSGrpNodeLimit": 2}


def qos_group_caps(jobs: list[Job], limits: dict[str, int], tres: dict[str, dict[str, int]]
                   ) -> dict[str, tuple[int | None, int | None, int | None, str]]:
    """QOS whose jobs together may run at most so many jobs, cores and nodes at once: by QOS,
    (jobs, cores, nodes, where it is known from). Known from the snapshot's class objects
    (``limits``, ``tres``: Slurm's ``GrpJobs`` and ``GrpTRES`` cpu= and node=); where they do
    not say, read off a waiting job the batch system holds for one (``QOSGrpJobsLimit``,
    ``QOSGrpCpuLimit``, ``QOSGrpNodeLimit``): its QOS is at that limit, so the jobs it runs now
    are as many as it may run, and the cores or nodes it holds now are at most one job short of
    its limit: the cap is what it holds now, or its largest waiting job's need where that is
    more (the limit lets every job of the QOS run, or it would wait for ever). A cap below
    what the QOS holds now is raised to that.  O(jobs).

    >>> a = [Job(str(k), k, {"qos": "long"}, "Running" if k < 3 else "Idle", owner=f"u{k % 2}") for k in range(5)]
    >>> for job in a:
    ...     job.nodes, job.total_cores = 1, 4
    >>> qos_group_caps(a, {"long": 2}, {"long": {"cores": 20}})
    {'long': (3, 20, None, ' (GrpJobs/GrpTRES of QOS long)')}
    >>> a[4].limited = "QOSGrpCpuLimit"; qos_group_caps(a, {}, {})
    {'long': (None, 12, None, ' (the batch system says QOSGrpCpuLimit)')}
    >>> a[3].total_cores = 16; qos_group_caps(a, {}, {})  # (12 held now: the limit lets 16 run)
    {'long': (None, 16, None, ' (the batch system says QOSGrpCpuLimit)')}
    """
    held: dict[str, list[int]] = {}
    largest: dict[str, list[int]] = {}  # QOS → the most one waiting job of it needs: [1, cores, nodes]
    for job in jobs:
        qos = job.data.get("qos", "").strip()
        if job.running:
            use = held.setdefault(qos, [0, 0, 0])
            use[0] += 1
            use[1] += job.total_cores
            use[2] += job.nodes
        elif job.reason is None:
            most = largest.setdefault(qos, [1, 0, 0])
            most[1] = max(most[1], job.total_cores)
            most[2] = max(most[2], job.nodes)
    out: dict[str, tuple[int | None, int | None, int | None, str]] = {}
    for qos in sorted({*limits, *tres}):
        use = held.get(qos, [0, 0, 0])
        caps = (limits.get(qos), tres.get(qos, {}).get("cores"), tres.get(qos, {}).get("nodes"))
        out[qos] = (*(None if cap is None else max(cap, used) for cap, used in zip(caps, use)),
                    f" (GrpJobs/GrpTRES of QOS {qos})")
    said: dict[str, dict[int, str]] = {}  # QOS → what its waiting jobs' reasons say it is at
    for job in jobs:
        kind = GROUP_REASONS.get(job.limited or "")
        qos = job.data.get("qos", "").strip()
        if kind is not None and job.reason is None and qos and qos not in out and held.get(qos, [0])[0]:
            said.setdefault(qos, {})[kind] = job.limited
    for qos, kinds in sorted(said.items()):
        caps = [max(held[qos][kind], largest[qos][kind]) if kind in kinds else None for kind in range(3)]
        out[qos] = (*caps, f" (the batch system says {'/'.join(kinds[k] for k in sorted(kinds))})")
    return out


def qos_tres_caps(jobs: list[Job], limits: dict[str, dict[str, int]]) -> dict[str, tuple[dict[str, int], dict[str, int]]]:
    """Users whose QOS lets them hold at most so many cores or nodes at once (``limits``:
    Slurm's ``MaxTRESPU`` by QOS, ``snapshot.read_qos_tres``): by QOS, (user → cores,
    user → nodes), for the users of ``one_qos_users``; a cap below what the user holds now is
    raised to that.

    >>> ann = [Job(str(k), k, {"qos": "normal"}, "Running" if k < 2 else "Idle", owner="ann") for k in range(4)]
    >>> for job in ann:
    ...     job.nodes, job.total_cores = 2, 8
    >>> qos_tres_caps(ann, {"normal": {"cores": 20}}), qos_tres_caps(ann, {"normal": {"cores": 10, "nodes": 3}})
    ({'normal': ({'ann': 20}, {})}, {'normal': ({'ann': 16}, {'ann': 4})})
    """
    out: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
    for user, (qos, running) in (one_qos_users(jobs) if limits else {}).items():
        if qos in limits:
            caps = out.setdefault(qos, ({}, {}))
            if "cores" in limits[qos]:
                caps[0][user] = max(limits[qos]["cores"], sum(job.total_cores for job in running))
            if "nodes" in limits[qos]:
                caps[1][user] = max(limits[qos]["nodes"], sum(job.nodes for job in running))
    return out


def place_running(job: Job, state: SystemState, report: Report) -> Any:
    """Resources a running job holds: its node list, else the lowest free cores.

    Cores a node list claims that another running job already holds are counted once, with
    a warning. Without node sharing a running job holds its nodes whole.
    """
    machine = state.machine
    if not isinstance(state, NodeState):
        return _counted_cores(job, machine)
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


def _counted_cores(job: Job, machine) -> int:
    """The cores a running job holds among the counted ones (``AttributeState``): all of them,
    but those its node list puts on nodes that take no new job (a draining node's job holds
    no core any other job could have had)."""
    if not job.nodelist or machine.usable_nodes == machine.all_nodes:
        return job.total_cores
    try:
        entries = parse_nodelist(job.nodelist, machine, job.total_cores)
    except ValueError:
        return job.total_cores
    usable = 0
    for node, mask, count in entries:
        if machine.nodes[node].usable:
            held = _entry_cores(mask, count)
            usable += held if held is not None else job.cores_per_node
    return min(usable, job.total_cores)


def _entry_cores(mask: int | None, count: int | None) -> int | None:
    """The cores one ``parse_nodelist`` entry gives a job: its core mask's, else its count;
    None where the node list names the node alone."""
    return mask.bit_count() if mask is not None else count


def results(forecast: Forecast) -> dict[str, list[tuple[str, str]]]:
    """The data each job object gets: dates, resources, flags, or the reason for no start."""
    snap = forecast.snapshot
    machine = snap.machine

    write, epoch = date_writer(snap.date_format), snap.epoch

    def when(seconds: int) -> str:
        return write(epoch + seconds)

    out: dict[str, list[tuple[str, str]]] = jobsets.aggregate(snap.jobs, when)
    held: dict[str, Any] = {}  # each array record: the resources its tasks are planned on, together
    for job in snap.jobs:  # (dates without a call of ours each: 57,000 on KTH)
        if job.parent is not None:  # an array task: written onto its array record
            if job.start is not None and job.resources is not None:
                held[job.parent] = _together(held.get(job.parent), job.resources, machine)
            continue
        pairs: list[tuple[str, str]] = []
        if job.start is not None or job.running:
            if not job.running:
                pairs.append(("jufo_starttime", write(epoch + job.start)))
            pairs.append(("jufo_endtime", write(epoch + job.end)))
            pairs.extend(placement_pairs(job, machine))
        elif job.reason:
            pairs.append(("jufo_reason", job.reason))
        out[job.id] = pairs
    for parent, resources in held.items():  # so the record can be drawn and its nodes listed
        out[parent].extend(resource_pairs(resources, machine))
    return out


def _together(a: Any, b: Any, machine: Machine) -> Any:
    """Two tasks' resources as one: the union of node sets, the larger of two core counts."""
    if a is None:
        return b
    if isinstance(a, NodeCores):
        return a.union(b, machine.shape)
    return max(a, b)


def placement_pairs(job: Job, machine: Machine) -> list[tuple[str, str]]:
    """Where a started or planned job runs, and how it got there: its resources, ``jufo_topdog``
    (its start is reserved) and ``jufo_backfilled`` (it starts ahead of a job before it)."""
    pairs = resource_pairs(job.resources, machine) if job.resources is not None else []
    if job.topdog:
        pairs.append(("jufo_topdog", "1"))
    if job.backfilled:
        pairs.append(("jufo_backfilled", "1"))
    return pairs


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
