"""Slurm read directly: ``scontrol``'s text turned into a raw LML snapshot and a site configuration.

``scontrol show job --detail --oneliner`` (and ``node``, ``partition``, ``reservation``) print
one record a line as ``Key=Value`` tokens; ``scontrol show config`` prints ``Key = Value``
lines. ``snapshot_objects`` maps the records onto the keys LLview 2's adapter
(``da/rms/SLURM/slurm.py``) writes, so ``predict``, ``show`` and the history treat a snapshot
read here and one LLview wrote alike; ``site_settings`` maps the configuration onto jufo's
scheduler keys and the partitions onto queue objects (the table in ``docs/slurm.md``).
Slurm's own estimate (a pending job's ``StartTime``) is kept as ``starttime``, a comparison
column, never an input to the simulation.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field

from .errors import InputError
from .hostlist import expand_hostlist
from .slurm import NODE_SUFFIXES, NO_TIME_LIMIT, SLURM_STATES, node_takes_jobs, seconds_of

_KEY = re.compile(r"([A-Za-z][A-Za-z0-9_:/]*)=")
# Slurm prints no number longer than 20 digits (2^64); one of 25 is damage, and Python would
# refuse to read one of 4,300 (an internal error, where it is the input's fault)
_HUGE = re.compile(r"\d{25}")
_HUGE_REASON = "holds a number of 25 digits or more, which scontrol never prints"
# lines scontrol prints instead of records when there are none
_EMPTY = re.compile(r"^No (jobs|nodes|partitions|reservations) in the system\s*$")


class SlurmTextError(InputError):
    """Output of scontrol that cannot be read: names the file, line and key (exit 2)."""

    def __init__(self, source: str, line: int, key: str | None, value: str | None, reason: str) -> None:
        super().__init__(f"{source}, line {line}", key, value, reason)


def partition_nodes(part: dict[str, str], k: int, source: str) -> list[str]:
    """The node names of the ``k``-th partition record (none for ``(null)``); SlurmTextError
    naming ``source``, the line and ``Nodes`` for a malformed hostlist."""
    members = part.get("Nodes", "(null)")
    if members in ("(null)", ""):
        return []
    try:
        return expand_hostlist(members)
    except ValueError as err:
        raise SlurmTextError(source, k + 1, "Nodes", members, str(err)) from None


def parse_records(text: str, source: str, id_key: str) -> list[dict[str, str]]:
    """The records of a ``--oneliner`` listing, one dict a line (or of scontrol's default form,
    a record over several indented lines); a value that holds blanks
    (``OS=Linux 6.1 #1 SMP``) keeps them. The first occurrence of a key wins; ``--detail``
    repeats ``Nodes=`` and ``CPU_IDs=`` per node group: those pairs are kept together under
    ``_cpus`` (``n30=0-3;n31=0-1``). Each record must have ``id_key``.  O(characters).

    >>> parse_records("JobId=7 JobName=a b UserId=u(1) Nodes=n1 CPU_IDs=0-3 Nodes=n2 CPU_IDs=1\\n", "job.txt", "JobId")
    [{'JobId': '7', 'JobName': 'a b', 'UserId': 'u(1)', 'Nodes': 'n1', 'CPU_IDs': '0-3', '_cpus': 'n1=0-3;n2=1'}]
    """
    records = []
    for lineno, line in _record_lines(text):
        if not line.strip() or _EMPTY.match(line.strip()):
            continue
        record: dict[str, str] = {}
        last = None
        groups: list[str] = []
        group = None
        for token in line.split():
            m = _KEY.match(token)
            if m:
                if m.group(1) == "Nodes":
                    group = token[m.end():]
                elif m.group(1) == "CPU_IDs" and group is not None:
                    groups.append(f"{group}={token[m.end():]}")
                    group = None
                last = m.group(1)
                if last not in record:
                    record[last] = token[m.end():]
                else:
                    last = None  # a repeated key: its value (and what follows it) is not kept
            elif last is not None:
                record[last] += " " + token
            elif not record:
                raise SlurmTextError(source, lineno, None, token[:60], "expected Key=Value (scontrol --oneliner)")
        if id_key not in record:
            raise SlurmTextError(source, lineno, id_key, None, f"a record without {id_key}")
        for key, value in record.items():
            if _HUGE.search(value):
                raise SlurmTextError(source, lineno, key, value[:60], _HUGE_REASON)
        if groups:
            record["_cpus"] = ";".join(groups)
        records.append(record)
    return records


def _record_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, record)`` per record: a ``--oneliner`` line, or scontrol's default form
    (a record's first line, then lines indented under it, records parted by a blank line)
    joined into one line. O(characters).

    >>> _record_lines("JobId=1 JobName=a\\n   UserId=u(1)\\n\\nJobId=2\\n")
    [(1, 'JobId=1 JobName=a UserId=u(1)'), (4, 'JobId=2')]
    """
    out: list[tuple[int, str]] = []
    open_record = False  # the last record may go on in an indented line
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            open_record = False
        elif line[:1].isspace() and open_record:
            out[-1] = (out[-1][0], f"{out[-1][1]} {line.strip()}")
        else:
            out.append((lineno, line))
            open_record = True
    return out


_AS_OF = "Configuration data as of"  # the first line of scontrol show config, and when it was printed


def parse_config(text: str, source: str) -> dict[str, str]:
    """``scontrol show config``: ``Key = Value`` lines (headings and blank lines skipped), and
    the time it was printed under ``_as_of`` (its first line, ``Configuration data as of ...``).

    >>> parse_config("Configuration data as of 2026-11-25T15:18:24\\nSchedulerType = sched/backfill\\n", "c")
    {'_as_of': '2026-11-25T15:18:24', 'SchedulerType': 'sched/backfill'}
    """
    out: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.startswith(_AS_OF):
            out["_as_of"] = line[len(_AS_OF):].strip()
            continue
        key, sep, value = line.partition(" = ")
        if not sep:
            continue
        key = key.strip()
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*(\[\d+\])?", key):  # SlurmctldHost[0]
            raise SlurmTextError(source, lineno, key[:60], None, "not a configuration key")
        if _HUGE.search(value):
            raise SlurmTextError(source, lineno, key, value.strip()[:60], _HUGE_REASON)
        out[key] = value.strip()
    if "SchedulerType" not in out:
        raise SlurmTextError(source, 1, "SchedulerType", None, "missing: is this `scontrol show config` output?")
    return out


_NODE_STATES = {  # Slurm's base node state → LLview 2's word
    "IDLE": "Idle", "ALLOCATED": "Running", "ALLOC": "Running", "MIXED": "Running", "COMPLETING": "Running",
    "DOWN": "Down", "DRAIN": "Drained", "DRAINED": "Drained", "DRAINING": "Drained", "FAIL": "Down",
    "FAILING": "Down", "FUTURE": "Down", "MAINT": "Maint", "NO_RESPOND": "Down", "NOT_RESPONDING": "Down",
    "REBOOT": "Down", "REBOOT_ISSUED": "Down", "RESERVED": "Running", "UNKNOWN": "Down", "PLANNED": "Idle",
    "INVAL": "Down", "OFFLINE": "Down",
}
_JOB_STATES = {  # LLview 2's words; the rest by meaning (slurm.SLURM_STATES: SIGNALING running, ...)
    "PENDING": "Pending", "CONFIGURING": "Pending", "RUNNING": "Running", "SUSPENDED": "Suspended",
    "COMPLETED": "Completed", "COMPLETING": "Completed", "CANCELLED": "Cancelled", "FAILED": "Failed",
    "NODE_FAIL": "Failed", "TIMEOUT": "Failed", "REQUEUED": "Pending", "PREEMPTED": "Failed",
    "OUT_OF_MEMORY": "Failed", "BOOT_FAIL": "Failed", "DEADLINE": "Failed",
}


def node_state(state: str) -> str:
    """LLview 2's node state for Slurm's: the base state's word (``MIXED`` running), or where
    the node takes no new job (``slurm.node_takes_jobs``: ``IDLE+DRAIN``, ``IDLE*``) the
    worst word among its parts.

    >>> node_state("IDLE"), node_state("MIXED"), node_state("IDLE+DRAIN"), node_state("DOWN*+NOT_RESPONDING")
    ('Idle', 'Running', 'Drained', 'Down')
    >>> node_state("IDLE*"), node_state("IDLE+CLOUD+POWERED_DOWN"), node_state("IDLE+MAINTENANCE+RESERVED")
    ('Down', 'Idle', 'Idle')
    """
    parts = [p.rstrip(NODE_SUFFIXES) for p in state.upper().split("+")]
    words = [_NODE_STATES.get(p, "") for p in parts]
    if not node_takes_jobs(state):
        for worst in ("Down", "Maint", "Drained"):
            if worst in words:
                return worst
        return "Down"  # not responding
    return words[0] or state


_STANDARD_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
_NOT_STANDARD = ("not a date in Slurm's standard form (YYYY-MM-DDTHH:MM:SS): printed under a SLURM_TIME_FORMAT? "
                 "Capture again with SLURM_TIME_FORMAT=standard")


def _llview_date(text: str, source: str, line: int, key: str) -> str:
    """Slurm's ``2026-11-25T15:18:24`` as LLview 2 writes it (``2026-11-25 15:18:24``); words
    (``Unknown``, ``None``, ``N/A``) as they are. Any other date (printed under a user's
    ``SLURM_TIME_FORMAT``, ``25.11. 15:18``) is SlurmTextError naming the file, line and key:
    passed on, it would be read as "now" with a warning, and a reservation left out.

    >>> _llview_date("2026-11-25T15:18:24", "job.txt", 1, "StartTime"), _llview_date("Unknown", "job.txt", 1, "EndTime")
    ('2026-11-25 15:18:24', 'Unknown')
    """
    if _STANDARD_DATE.fullmatch(text):
        return text.replace("T", " ")
    if re.fullmatch(r"[A-Za-z/()]*", text):
        return text
    raise SlurmTextError(source, line, key, text[:60], _NOT_STANDARD)


def _user(text: str) -> str:
    """``alice(1001)`` → ``alice``."""
    return re.sub(r"\(\d+\)$", "", text)


def _count(text: str) -> str:
    """``2-2`` (min-max, as a pending job's NumNodes) → ``2``."""
    return text.split("-", 1)[0]


def _status(state: str, reason: str) -> tuple[str, str]:
    """LLview 2's ``status`` and ``detailedstatus`` of a job."""
    if state in ("PENDING", "SUSPENDED", "CONFIGURING"):
        held = {"JobHeldUser": "USER_ON_HOLD", "JobHeldAdmin": "SYSTEM_ON_HOLD"}
        return "SUBMITTED", held.get(reason, "QUEUED_ACTIVE")
    if state == "RUNNING":
        return "RUNNING", "QUEUED_ACTIVE"
    if state in ("COMPLETED", "COMPLETING"):
        return "COMPLETED", "JOB_OUTERR_READY"
    if state == "CANCELLED":
        return "COMPLETED", "CANCELLED"
    if state in ("FAILED", "NODE_FAIL", "TIMEOUT"):
        return "COMPLETED", "FAILED"
    return "UNDETERMINED", "QUEUED_ACTIVE"


def _with_cores(names: list[str], cores: int) -> str:
    return "".join(f"({n},{cores})" for n in names)


def _detail_cores(groups: str) -> str:
    """LLview's ``(node,cores)`` pairs from ``--detail``'s node groups and their CPU ids.

    >>> _detail_cores("n30=0-3;n[31-32]=0-1,3")
    '(n30,4)(n31,3)(n32,3)'
    """
    out = []
    for group in groups.split(";"):
        nodes, _, ids = group.rpartition("=")
        count = 0
        for part in ids.split(","):
            lo, _, hi = part.partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()):
                raise ValueError(f"CPU_IDs {ids!r} are not core numbers")
            count += int(hi) - int(lo) + 1 if hi else 1
        out.extend(f"({name},{count})" for name in expand_hostlist(nodes))
    return "".join(out)


@dataclass
class SlurmText:
    """The saved outputs of one capture (``--from DIR``) or of one live run of scontrol."""

    job: str
    node: str
    partition: str
    reservation: str
    config: str
    at: int | None = None  # the capture's epoch second, if known
    sdiag: str = ""  # sdiag's output, if it could be had: when the last backfill pass began
    qos: str = ""  # ``scontrol show assoc_mgr flags=qos``, if it could be had: the QOS limits per user
    names: dict[str, str] = field(default_factory=lambda: {k: f"{k}.txt" for k in
                                                           ("job", "node", "partition", "reservation", "config")})


def _exclusive_job(record: dict[str, str]) -> bool:
    """A job that holds whole nodes (``--exclusive``, or any job of an exclusive partition).
    Up to Slurm 25.11 ``scontrol show job`` says ``OverSubscribe=NO`` (``USER``/``MCS``/``TOPO``:
    whole nodes shared with no other user's jobs; ``OK`` and ``YES``: cores may be shared). From
    26.05 it prints ``Exclusive=NO|NODE|USER|MCS|TOPO`` beside an ``OverSubscribe=NO|YES|OK``
    that means oversubscription only, so ``OverSubscribe=NO`` is every ordinary job there.

    >>> _exclusive_job({"OverSubscribe": "NO"}), _exclusive_job({"OverSubscribe": "OK"})
    (True, False)
    >>> [_exclusive_job({"OverSubscribe": "NO", "Exclusive": word}) for word in ("NO", "NODE", "USER")]
    [False, True, True]
    """
    if "Exclusive" in record:  # Slurm 26.05 and later
        return record["Exclusive"].upper() in ("NODE", "USER", "MCS", "TOPO")
    return record.get("OverSubscribe", "").upper() in ("NO", "USER", "MCS", "TOPO")


def job_tres(job: dict[str, str]) -> str:
    """A job's trackable resources as Slurm 22.05 printed them in ``TRES``: what it holds where
    it holds anything, else what it asks. Slurm 23.02 and later print the two apart,
    ``ReqTRES`` and ``AllocTRES`` (``(null)`` while the job holds nothing).

    >>> job_tres({"TRES": "cpu=2,node=1"}), job_tres({"ReqTRES": "cpu=2,node=1", "AllocTRES": "(null)"})
    ('cpu=2,node=1', 'cpu=2,node=1')
    >>> job_tres({"ReqTRES": "cpu=2,node=1", "AllocTRES": "cpu=4,node=2,gres/gpu=2"}), job_tres({})
    ('cpu=4,node=2,gres/gpu=2', '')
    """
    if "TRES" in job:
        return job["TRES"]
    held = job.get("AllocTRES", "")
    return held if held not in ("", "(null)") else job.get("ReqTRES", "")


_STAMPED = re.compile(r"(?:sdiag output at|Last cycle when:)\s+\w{3} (\w{3}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4}) "
                      r"\((\d{1,12})\)")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_ZONE_STEP = 900  # time zones lie on a quarter hour


def wall_clock_offset(sdiag: str, as_of: str, at: int | None) -> int:
    """Seconds from UTC to the clock Slurm printed a capture's dates in. scontrol and sdiag
    print local time without a zone, while the capture's second (``at``) counts from the epoch;
    the snapshot's ``system_time`` must be in the job dates' clock, as LLview 2 writes it, or a
    site an hour east of UTC sees every job start an hour ahead of now. Read, in this order,
    from sdiag, which prints the same second both ways; from ``scontrol show config``'s "as
    of" against ``at``, to the quarter hour where they were printed within two minutes; else
    this machine's zone at ``at`` (a capture converted where it was made).

    >>> wall_clock_offset("sdiag output at Sat Nov 28 22:29:35 2026 (1795901375)", "", None)
    3600
    >>> wall_clock_offset("", "2026-11-28T15:59:40", 1795901375)  # 21:29:35 UTC, 5 s later, 5.5 h behind
    -19800
    """
    import calendar

    found = _STAMPED.search(sdiag)
    if found and found.group(1) in _MONTHS:
        month, day, hour, minute, second, year, epoch = found.groups()
        try:
            wall = calendar.timegm((int(year), _MONTHS.index(month) + 1, int(day), int(hour), int(minute),
                                    int(second), 0, 0, 0))
        except (ValueError, OverflowError):
            wall = None
        if wall is not None and abs(wall - int(epoch)) <= 26 * 3600:
            return wall - int(epoch)
    if as_of and at is not None:
        from .dates import parse_date

        try:
            ahead = parse_date(as_of)[0] - at
        except ValueError:
            ahead = None
        if ahead is not None:
            zone = round(ahead / _ZONE_STEP) * _ZONE_STEP
            if abs(zone) <= 14 * 3600 and abs(ahead - zone) <= 120:
                return zone
    return time.localtime(int(time.time()) if at is None else at).tm_gmtoff


def snapshot_objects(text: SlurmText, now: int | None = None) -> list[tuple[str, str, dict[str, str]]]:
    """The raw LML objects of a capture, in LLview 2's keys: the system, a scheduler object from
    the configuration, the partitions as queues, the nodes (with ``classes`` per partition),
    the jobs and the reservations. ``now``: the system time (else the capture's, else the
    configuration's time stamp)."""
    config = parse_config(text.config, text.names["config"])
    partitions = parse_records(text.partition, text.names["partition"], "PartitionName")
    nodes = parse_records(text.node, text.names["node"], "NodeName")
    jobs = parse_records(text.job, text.names["job"], "JobId")
    reservations = parse_records(text.reservation, text.names["reservation"], "ReservationName")
    settings, queues, _ = site_settings(config, partitions, text.names["config"], text.names["partition"])
    if now is None:
        now = text.at
    if config.get("_as_of") and not _STANDARD_DATE.fullmatch(config["_as_of"]):
        raise SlurmTextError(text.names["config"], 1, _AS_OF, config["_as_of"][:60], _NOT_STANDARD)
    offset = wall_clock_offset(text.sdiag, config.get("_as_of", ""), now)
    if now is None:
        from .dates import parse_date

        now = parse_date(config["_as_of"])[0] - offset if config.get("_as_of") else int(time.time())
    system_time = time.strftime("%m/%d/%y-%H:%M:%S", time.gmtime(now + offset))
    objects: list[tuple[str, str, dict[str, str]]] = [
        ("cluster", "system", {"hostname": config.get("ClusterName", "slurm"), "system_time": system_time,
                               "type": "Cluster"}),
        ("scheduler", "scheduler", settings),
    ]
    last_pass = backfill_pass(text.sdiag)
    if last_pass is not None and last_pass <= now:  # Slurm's estimates are the plan of that pass
        settings["plan_time"] = time.strftime("%m/%d/%y-%H:%M:%S", time.gmtime(last_pass + offset))
    # the CPUs jobs may use: CPUEfctv leaves out cores kept for the system (CoreSpecCount,
    # CpuSpecList); LLview 2's adapter writes CPUTot, which would plan jobs onto them
    cpus = {node["NodeName"]: node.get("CPUEfctv", node.get("CPUTot", "1")) for node in nodes}
    classes: dict[str, str] = {}
    # partition → its PriorityTier and MaxTime (None: none), as read for the queue objects
    tiers = {name: (data["prioritytier"], int(data["maxtime"]) if "maxtime" in data else None)
             for name, data in queues}
    # partition → the most CPUs and MB a node of it has (Slurm's max_cpu_cnt: a pending job's least nodes)
    widest: dict[str, tuple[int, int]] = {}
    totals = {node["NodeName"]: (_number(node.get("CPUTot", "")), _number(node.get("RealMemory", "")))
              for node in nodes}
    for k, part in enumerate(partitions):
        name = part["PartitionName"]
        for n in partition_nodes(part, k, text.names["partition"]):
            if n in cpus:
                classes[n] = classes.get(n, "") + f"[{name}:{cpus[n]}]"
                most = widest.get(name, (0, 0))
                widest[name] = (max(most[0], totals[n][0]), max(most[1], totals[n][1]))
    node_names = {node["NodeName"] for node in nodes}
    for name, data in queues:  # a queue is known by its object's name, which build() takes from the id
        objects.append((name if name not in node_names else f"partition_{name}", "queue", {"name": name, **data}))
    for node in nodes:
        name = node["NodeName"]
        data = {"ncores": cpus[name], "state": node_state(node.get("State", "UNKNOWN")),
                "physmem": node.get("RealMemory", ""), "load": "-1" if node.get("CPULoad") == "N/A"
                else node.get("CPULoad", ""), "features": node.get("ActiveFeatures", ""),
                "reason": node.get("Reason", ""), "allocmem": node.get("AllocMem", ""),
                "freemem": node.get("FreeMem", "")}
        gpus = node_gpus(node)
        if gpus:
            data["gpus"] = str(gpus)
            data["gputypes"] = node_gpu_types(node)  # ("" where they have no model: left out)
        spec, real = node.get("MemSpecLimit", ""), node.get("RealMemory", "")
        if spec.isdigit() and real.isdigit() and int(spec):  # memory kept for the system: jobs get the rest
            data["availmem"] = str(max(0, int(real) - int(spec)))
        if node.get("Weight", "1") not in ("1", ""):  # the select plugin takes the lightest nodes first
            data["weight"] = node["Weight"]
        if name in classes:
            data["classes"] = classes[name]
        objects.append((name, "node", {k: v for k, v in data.items() if v not in ("", "(null)")}))
    for k, job in enumerate(jobs):
        objects.append((f"j{k}", "job", _job_data(job, text.names["job"], k + 1, tiers, widest)))
    for k, (qos, limits) in enumerate(sorted(qos_limits(text.qos).items())):  # as LLview 2's classes_LML.xml
        objects.append((f"c{k}", "class", {"name": qos, **limits}))
    for k, resv in enumerate(reservations):
        where = (text.names["reservation"], k + 1)  # (a record a line, as for the jobs)
        data = {"resid": resv["ReservationName"],
                "starttime": _llview_date(resv.get("StartTime", ""), *where, "StartTime"),
                "endtime": _llview_date(resv.get("EndTime", ""), *where, "EndTime"), "state": resv.get("State", ""),
                "userlist": resv.get("Users", ""), "accounts": resv.get("Accounts", ""),
                "flags": resv.get("Flags", ""), "nodecnt": resv.get("NodeCnt", ""),
                "corecnt": resv.get("CoreCnt", "")}
        nodes_text = resv.get("Nodes", "")
        if nodes_text and nodes_text != "(null)":
            try:
                data["nodelist"] = " ".join(expand_hostlist(nodes_text))
            except ValueError as err:
                raise SlurmTextError(text.names["reservation"], k + 1, "Nodes", nodes_text, str(err)) from None
        if resv.get("PartitionName", "(null)") != "(null)":
            data["partition"] = resv["PartitionName"]
        for key in ("userlist", "accounts"):
            if data[key] == "(null)":
                data[key] = ""
        objects.append((f"r{k}", "reservation", {key: v for key, v in data.items() if v != ""}))
    return objects


_GRES_GPU = re.compile(r"(?:^|,)gpu(?::[^:,(]+)?:(\d{1,9})(?!\d)")  # gpu:4, gpu:a100:4(S:0-1), in a Gres list
_GRES_TYPED = re.compile(r"(?:^|,)gpu:([^:,(]+):(\d{1,9})(?!\d)")  # gpu:a100:4(S:0-1): the model and count
_TRES_GPU = re.compile(r"(?:^|,)gres/gpu=(\d{1,9})(?!\d)")  # the untyped total, not gres/gpu:a100=4
_TRES_PER_GPU = re.compile(r"(?:^|,)gres[:/]gpu(?::[^:,=]+)?[:=](\d{1,9})(?!\d)")  # gres:gpu:4, gres/gpu:a100:4, gres/gpu=1
# a model asked: gres:gpu:a100:2 (22.05's TresPerNode), gres/gpu:a100:2 (23.02), gres:gpu:a100 (--gres=gpu:a100: one)
_TRES_PER_TYPED = re.compile(r"(?:^|,)gres[:/]gpu:([^:,=]+)(?:[:=](\d{1,9})(?!\d))?(?=,|$)")  # (a model: not all digits)


def node_gpus(node: dict[str, str]) -> int:
    """A node's GPUs: ``CfgTRES``'s ``gres/gpu=N``, else the sum of ``Gres``'s gpu entries.

    >>> node_gpus({"Gres": "gpu:a100:4(S:0-1),gpu:v100:2"}), node_gpus({"CfgTRES": "cpu=8,gres/gpu=4"})
    (6, 4)
    >>> node_gpus({"Gres": "(null)"})
    0
    """
    tres = _TRES_GPU.search(node.get("CfgTRES", ""))
    if tres:
        return int(tres.group(1))
    return sum(int(n) for n in _GRES_GPU.findall(node.get("Gres", "")))


def node_gpu_types(node: dict[str, str]) -> str:
    """A node's GPUs by model, as jufo's node key ``gputypes`` writes them (``a100:4``;
    ``a100:2,v100:2``), from ``Gres``; "" where they have no model.

    >>> node_gpu_types({"Gres": "gpu:a100:4(S:0-1)"}), node_gpu_types({"Gres": "gpu:v100:2,gpu:a100:2"})
    ('a100:4', 'a100:2,v100:2')
    >>> node_gpu_types({"Gres": "gpu:4"}), node_gpu_types({"Gres": "(null)"})
    ('', '')
    """
    counts: dict[str, int] = {}
    for model, count in _GRES_TYPED.findall(node.get("Gres", "")):
        if not model.isdigit():
            counts[model] = counts.get(model, 0) + int(count)
    return ",".join(f"{model}:{counts[model]}" for model in sorted(counts))


def job_gpu_type(job: dict[str, str]) -> tuple[str | None, int]:
    """The GPU model a job asks (``--gres=gpu:a100:2``, ``--gpus=a100:2``, ``--gpus-per-task``)
    and the count beside it: ``TresPerNode``, ``TresPerJob`` or ``TresPerTask`` name it
    (``gres:gpu:a100:2``; from 23.02 ``gres/gpu:a100:2``), and ``--gres=gpu:a100`` without a
    count asks one (Slurm 22.05 prints ``gres:gpu:a100``). ``(None, 0)``: no model asked.

    >>> job_gpu_type({"TresPerNode": "gres:gpu:a100:2"}), job_gpu_type({"TresPerNode": "gres:gpu:a100"})
    (('a100', 2), ('a100', 1))
    >>> job_gpu_type({"TresPerJob": "gres/gpu:h100:4"}), job_gpu_type({"TresPerNode": "gres:gpu:2"})
    (('h100', 4), (None, 0))
    """
    for key in ("TresPerNode", "TresPerJob", "TresPerTask"):
        model, count = _gpu_model(job.get(key, ""))
        if model:
            return model, count
    return None, 0


def _gpu_model(text: str) -> tuple[str | None, int]:
    """The GPU model and count one ``TresPer*`` value asks (``gres:gpu:a100`` one), or (None, 0)."""
    for asked in _TRES_PER_TYPED.finditer(text):
        if not asked.group(1).isdigit():  # (gres:gpu:2: a count, no model)
            return asked.group(1), int(asked.group(2) or 1)
    return None, 0


def job_gpus(job: dict[str, str], nodes: int) -> int:
    """A job's GPUs: ``TRES``'s ``gres/gpu=N`` (what it holds, or asks while pending, where the
    site accounts GPUs; ``job_tres``), else what a running job holds (``JOB_GRES``: ``gpu:3``,
    ``gpu:a100:4``), else what it asks: ``TresPerNode``'s count (``gres:gpu:4``, ``gres/gpu:4``)
    times its nodes, ``TresPerJob``'s (``--gpus``), or ``TresPerTask``'s times its tasks.

    >>> job_gpus({"TRES": "cpu=8,mem=4G,node=2,billing=8,gres/gpu=8,gres/gpu:a100=8"}, 2)
    8
    >>> job_gpus({"TresPerNode": "gres:gpu:a100:4"}, 3), job_gpus({"TRES": "cpu=1,node=1"}, 1)
    (12, 0)
    >>> job_gpus({"JOB_GRES": "gpu:1", "TresPerJob": "gres:gpu:1"}, 1), job_gpus({"TresPerJob": "gres/gpu:3"}, 2)
    (1, 3)
    >>> job_gpus({"TresPerTask": "cpu=2,gres/gpu=1", "NumTasks": "4"}, 2)
    4
    >>> job_gpus({"TresPerNode": "gres:gpu:a100"}, 2)  # --gres=gpu:a100: one on each node
    2
    """
    tres = _TRES_GPU.search(job_tres(job))
    if tres:
        return int(tres.group(1))
    held = sum(int(count) for count in _GRES_GPU.findall(job.get("JOB_GRES", "")))
    if held:
        return held
    tasks = _count(job.get("NumTasks", "1"))
    for key, times in (("TresPerNode", nodes), ("TresPerJob", 1), ("TresPerTask", int(tasks) if tasks.isdigit() else 1)):
        asked = _TRES_PER_GPU.search(job.get(key, ""))
        count = int(asked.group(1)) if asked else _gpu_model(job.get(key, ""))[1]  # (gres:gpu:a100: one)
        if count:
            return count * times
    return 0


_UNITS_MB = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


_TRES_NODES = re.compile(r"(?:^|,)node=(\d{1,9})(?:,|$)")


def _number(text: str) -> int:
    """A whole number of Slurm's text, 0 where there is none (``*``, ``N/A``, empty)."""
    return int(text) if text.isdigit() else 0


def pending_nodes(job: dict[str, str], shown: str, widest: int, memory: int = 0) -> str:
    """The fewest nodes a pending job may run on: its requested TRES's ``node=`` (``min_nodes``;
    ``job_tres``),
    raised to what its CPUs and tasks need on the partition's largest node, of ``widest`` CPUs
    and ``memory`` MB (its memory counted where the job asks it per CPU), as Slurm counts them
    where it has tried no allocation (``_pack_default_job_details``). A pending job's NumNodes
    shows instead the node count of the latest allocation Slurm tried for it (``node_cnt_wag``),
    which an array's waiting tasks keep from the task started before them: ``NumNodes=2`` for
    ``-n 2`` after a task ran on two nodes, while Slurm's backfill plans each task on one. The
    count is lowered to that least, never raised: ``shown`` (NumNodes) stands where it is the
    lower or TRES gives no count (a job asking more memory per CPU than one node has for all
    its CPUs keeps the nodes it needs).

    >>> shapes = {"TRES": "cpu=2,mem=1000M,node=1,billing=2", "NumTasks": "2", "CPUs/Task": "1"}
    >>> pending_nodes(shapes, "2", 4), pending_nodes({**shapes, "NumTasks": "6"}, "2", 4)
    ('1', '2')
    >>> pending_nodes({**shapes, "NumTasks": "4", "MinMemoryCPU": "300M"}, "2", 4, 1000)  # 3 CPUs a node
    '2'
    >>> pending_nodes({**shapes, "NumTasks": "N/A", "NumCPUs": "6"}, "2", 4)  # six CPUs: two nodes
    '2'
    >>> pending_nodes({}, "2", 4)
    '2'
    """
    found = _TRES_NODES.search(job_tres(job))
    if not found or not int(found.group(1)):
        return shown
    least, tasks = int(found.group(1)), _number(job.get("NumTasks", ""))
    if widest:
        per_cpu = job_memory(job)[1]
        room = max(1, min(widest, memory // per_cpu) if per_cpu and memory else widest)  # CPUs a node gives
        least = max(least, -(-_number(job.get("NumCPUs", "")) // room))  # (also where NumTasks is N/A)
        per_task = max(1, _number(job.get("CPUs/Task", "1")))
        exact = job_per_node(job)[0]  # --ntasks-per-node × CPUs/Task
        if tasks and exact:  # that many tasks on each node
            least = max(least, tasks // (exact // per_task))
        elif tasks:  # as many tasks as fit on the largest node
            least = max(least, -(-tasks // max(1, room // per_task)))
    return str(least) if not shown.isdigit() or least < int(shown) else shown


def job_memory(job: dict[str, str]) -> tuple[int, int]:
    """MB a job asks on each node (``MinMemoryNode``: ``--mem``) or for each CPU
    (``MinMemoryCPU``: ``--mem-per-cpu``, or the site's ``DefMemPerCPU``), as ``(per node,
    per CPU)``; 0 where not asked (``--mem=0``: all of a node's, taken as not asked).

    >>> job_memory({"MinMemoryNode": "700M"}), job_memory({"MinMemoryCPU": "1.5G"}), job_memory({})
    ((700, 0), (0, 1536), (0, 0))
    """
    for k, key in enumerate(("MinMemoryNode", "MinMemoryCPU")):
        m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)", job.get(key, "").strip().upper())
        if m:
            mb = math.ceil(float(m.group(1)) * _UNITS_MB[m.group(2) or "M"])
            return (mb, 0) if k == 0 else (0, mb)
    return 0, 0


def job_per_node(job: dict[str, str]) -> tuple[int, int]:
    """``(CPUs on each node, CPUs a node must have free)`` a job asks: ``--ntasks-per-node``
    (the first field of ``NtasksPerN:B:S:C``) times ``CPUs/Task``, exactly that many on each
    of its nodes; else ``MinCPUsNode`` (``--mincpus``) where it is more than one task's CPUs,
    which every job needs anyway. 0 where not asked.

    >>> job_per_node({"NtasksPerN:B:S:C": "4:0:*:*", "MinCPUsNode": "8", "CPUs/Task": "2"})
    (8, 0)
    >>> job_per_node({"NtasksPerN:B:S:C": "0:0:*:*", "MinCPUsNode": "6", "CPUs/Task": "2"})
    (0, 6)
    >>> job_per_node({"NtasksPerN:B:S:C": "0:0:*:*", "MinCPUsNode": "2", "CPUs/Task": "2"}), job_per_node({})
    ((0, 0), (0, 0))
    """
    tasks, least = job.get("NtasksPerN:B:S:C", "").split(":")[0], job.get("MinCPUsNode", "")
    per_task = int(job["CPUs/Task"]) if job.get("CPUs/Task", "").isdigit() else 1
    if tasks.isdigit() and int(tasks) > 0:
        return int(tasks) * max(per_task, 1), 0
    return 0, (int(least) if least.isdigit() and int(least) > per_task else 0)


def _tier(job: dict[str, str], wall: str | None, tiers: dict[str, tuple[str, int | None]]) -> str:
    """A job's partition's ``PriorityTier``. A job pending in several partitions is in Slurm's
    queue once for each: it is first tested at the highest tier of those whose ``MaxTime``
    admits it.

    >>> tiers = {"batch": ("1", None), "prio": ("2", 3600)}
    >>> [_tier({"Partition": "batch,prio"}, w, tiers) for w in ("600", "7200")], _tier({"Partition": "x"}, None, tiers)
    (['2', '1'], '1')
    """
    def admits(name: str) -> bool:
        most = tiers.get(name, ("1", None))[1]
        return most is None or (wall is not None and wall.isdigit() and int(wall) <= most)

    names = job.get("Partition", "").split(",")
    names = [n for n in names if admits(n)] or names
    return max((tiers.get(n, ("1", None))[0] for n in names), key=lambda t: int(t) if t.isdigit() else 0)


def _job_data(job: dict[str, str], source: str, line: int, tiers: dict[str, tuple[str, int | None]],
              widest: dict[str, tuple[int, int]]) -> dict[str, str]:
    """One job in LLview 2's keys (and ``exclusive``, ``prioritytier``, which jufo reads too)."""
    state, reason = job.get("JobState", ""), job.get("Reason", "")
    status, detailed = _status(state, reason)
    data: dict[str, str] = {"step": job["JobId"], "name": job.get("JobName", ""), "owner": _user(job.get("UserId", "")),
                            "group": _user(job.get("GroupId", "")), "userprio": job.get("Priority", ""),
                            "account": job.get("Account", ""), "qos": job.get("QOS", ""),
                            "state": _JOB_STATES.get(state, SLURM_STATES.get(state, state.capitalize())),
                            "reason": reason,
                            "dependency": job.get("Dependency", ""), "restart": job.get("Restarts", "")}
    for key, name in (("RunTime", "runtime"), ("TimeLimit", "wall")):
        raw = job.get(key, "")
        if raw:
            try:
                value = seconds_of(raw)
            except ValueError as err:
                raise SlurmTextError(source, line, key, raw, str(err)) from None
            if value is not None:
                data[name] = str(value)
            elif key == "TimeLimit" and raw.upper() in NO_TIME_LIMIT:
                data[name] = "UNLIMITED"  # as LLview 2 passes it on: planned with the partition's MaxTime
    for key, name in (("SubmitTime", "queuedate"), ("StartTime", "starttime"), ("EndTime", "endtime")):
        data[name] = _llview_date(job.get(key, ""), source, line, key)
    nodes, cpus = _count(job.get("NumNodes", "1")), job.get("NumCPUs", "")
    per_task = job.get("CPUs/Task", "1")
    if state == "PENDING":  # "2-4": at most 4 nodes; "2" alone (only cores asked): as many as it takes
        low, dash, high = job.get("NumNodes", "1").partition("-")
        data["numnodes_max"] = high if dash else "unlimited"
        nodes = pending_nodes(job, nodes, *widest.get(job.get("Partition", "").split(",")[0], (0, 0)))
    data.update(queue=job.get("Partition", ""), status=status, detailedstatus=detailed, numnodes=nodes,
                totalcores=cpus, tpt=per_task, command=job.get("Command", ""), comment=job.get("Comment", ""))
    if not (nodes.isdigit() and cpus.isdigit() and per_task.isdigit()) or int(nodes) == 0 or int(per_task) == 0:
        raise SlurmTextError(source, line, "NumNodes", f"{nodes} / NumCPUs={cpus} / CPUs/Task={per_task}",
                             "not whole numbers")
    per_node = int(cpus) // int(nodes)
    data["totaltasks"] = str(int(cpus) // int(per_task))
    for key, name in (("NodeList", "nodelist"), ("SchedNodeList", "prenodelist")):
        raw = job.get(key, "")
        if raw and raw != "(null)":
            try:
                if key == "NodeList" and job.get("_cpus"):  # --detail: the cores each node gives it
                    data[name] = _detail_cores(job["_cpus"])
                else:
                    data[name] = _with_cores(expand_hostlist(raw), per_node)
            except ValueError as err:
                raise SlurmTextError(source, line, key, raw, str(err)) from None
    for key in ("ArrayJobId", "ArrayTaskId", "Reservation", "HetJobId", "HetJobIdSet", "HetJobOffset"):
        if job.get(key, "(null)") != "(null)":
            data[key if key.startswith(("Array", "Het")) else key.lower()] = job[key]
    gpus = job_gpus(job, int(nodes))
    if gpus:
        data["totalgpus"] = str(gpus)
        if state == "PENDING":  # --gres=gpu:a100:1: only nodes with GPUs of that model
            data["gputype"] = job_gpu_type(job)[0] or ""
        if state == "PENDING" and _TRES_PER_GPU.search(job.get("TresPerJob", "")) \
                and not _TRES_PER_GPU.search(job.get("TresPerNode", "")):
            data["gpuspread"] = "job"  # --gpus: the select plugin takes them where free on the nodes it picks
    if state == "PENDING":  # --nodelist, --exclude: only those nodes, none of these
        for key, name in (("ReqNodeList", "reqnodes"), ("ExcNodeList", "excnodes")):
            if job.get(key, "(null)") not in ("(null)", ""):
                data[name] = job[key]
        exact, least = job_per_node(job)
        if exact:
            data["ppn"] = str(exact)  # --ntasks-per-node (× CPUs/Task): that many CPUs on each node
        if least:
            data["mincpus"] = str(least)  # --mincpus: a node qualifies only with this many CPUs free
    per_node, per_cpu = job_memory(job)
    if per_node:
        data["reqmem"] = str(per_node)  # MB on each node (the node must have it)
    if per_cpu:
        data["mempercpu"] = str(per_cpu)  # MB for each CPU (counted where memory is a consumable)
    if job.get("Features", "(null)") not in ("(null)", ""):
        data["constraint"] = job["Features"]  # --constraint: only nodes with these features
    if _exclusive_job(job):
        data["exclusive"] = "yes"
    data["prioritytier"] = _tier(job, data.get("wall"), tiers)
    return {k: ("" if v == "(null)" else v) for k, v in data.items() if v not in ("", "(null)")}


# --- the configuration ---------------------------------------------------------------------

_SCHEDULERS = {"sched/backfill": "Backfilling", "sched/builtin": "FCFS"}
_SELECTS = ("select/cons_tres", "select/cons_res", "select/linear")


# SchedulerParameters that change what Slurm's backfill plans, and that jufo does not model:
# each one set (not 0, which means no limit) gets a note, so that an admin knows where Slurm's
# estimates and jufo's may part
UNMODELLED_PARAMETERS = {
    "bf_max_job_assoc": "Slurm plans at most this many jobs per association; jufo plans every job",
    "bf_one_resv_per_job": "Slurm keeps one reservation per job over all its partitions; jufo plans a job in "
                           "its first partition",
    "bf_licenses": "licenses are not modelled",
    "bf_max_time": "a pass that runs out of time stops early in Slurm; jufo plans every job",
}


# SchedulerParameters that limit what Slurm's backfill tests and reserves for, and the keys that
# carry them to plan=slurm (the walltime-only forecast, Slurm's own estimate) and to the
# simulation's passes (what happens next: the forecast with a history), bf_max_job_start to
# plan=slurm only
PASS_LIMITS = {
    "bf_max_job_user": "plan_max_job_user",
    "bf_max_job_part": "plan_max_job_part",
    "bf_max_job_user_part": "plan_max_job_user_part",
    "bf_max_job_start": "plan_max_job_start",
    "bf_min_prio_reserve": "plan_min_prio_reserve",
    "bf_min_age_reserve": "plan_min_age_reserve",
    "bf_job_part_count_reserve": "plan_part_count_reserve",
}


def _parameters(text: str) -> dict[str, str]:
    """``bf_interval=5,bf_continue`` → ``{'bf_interval': '5', 'bf_continue': ''}``."""
    out = {}
    for item in text.split(","):
        item = item.strip()
        if item and item != "(null)":
            key, _, value = item.partition("=")
            out[key.strip()] = value.strip()
    return out


def _weight(config: dict[str, str], key: str) -> int:
    raw = config.get(key, "0").strip()
    if not raw.isdigit():
        raise InputError("config.txt", key, raw, "not a whole number")
    return int(raw)


def site_settings(config: dict[str, str], partitions: list[dict[str, str]], config_name: str = "config.txt",
                  partition_name: str = "partition.txt"
                  ) -> tuple[dict[str, str], list[tuple[str, dict[str, str]]], list[str]]:
    """jufo's scheduler keys, one queue per partition (name → keys) and notes on what is
    approximated, from Slurm's configuration. Unknown or unreadable values that change the
    schedule are an InputError (exit 2); ones safe to ignore are notes."""
    notes: list[str] = []
    # a Slurm reservation holds only the jobs that ask for it (--reservation)
    settings: dict[str, str] = {"system_state": "NodeState", "reservation_binding": "named"}
    sched = config.get("SchedulerType", "")
    if sched not in _SCHEDULERS:
        raise InputError(config_name, "SchedulerType", sched, f"not one of {', '.join(_SCHEDULERS)}")
    settings["scheduling_algorithm"] = _SCHEDULERS[sched]
    params = _parameters(config.get("SchedulerParameters", ""))
    if sched == "sched/backfill":
        depth = params.get("bf_max_job_test", "500")  # Slurm 22.05's default
        if not depth.isdigit() or int(depth) < 1:
            raise InputError(config_name, "SchedulerParameters", f"bf_max_job_test={depth}", "not a whole number ≥ 1")
        # Slurm's backfill plans (reserves for) every job it tests, in priority order
        settings["maxtopdogs"] = depth
        window = params.get("bf_window", "1440")
        if not window.isdigit():
            raise InputError(config_name, "SchedulerParameters", f"bf_window={window}", "not whole minutes")
        # the walltime-only forecast is Slurm's own pass (what it shows as StartTime), with its window
        settings["plan"] = "slurm"
        # and it plans from scratch at every pass: a job's planned slot is not kept for it
        settings["replan"] = "yes"
        settings["plan_window"] = str(int(window) * 60)
        resolution = params.get("bf_resolution", "60")  # Slurm's default
        if not resolution.isdigit() or int(resolution) < 1:
            raise InputError(config_name, "SchedulerParameters", f"bf_resolution={resolution}", "not whole seconds ≥ 1")
        settings["resolution"] = resolution
        if "bf_continue" not in params:
            notes.append("bf_continue unset: a long backfill pass may stop early in Slurm; jufo plans every job")
        if "bf_max_job_array_resv" in params:  # (not given: Slurm's default, 20, as jufo's)
            array_resv = params["bf_max_job_array_resv"]
            if not array_resv.isdigit():
                raise InputError(config_name, "SchedulerParameters", f"bf_max_job_array_resv={array_resv}",
                                 "not a whole number ≥ 0")
            settings["plan_array_resv"] = str(int(array_resv))
        limited = []
        for key, setting in PASS_LIMITS.items():
            raw = params.get(key, "0")
            if not raw.isdigit():
                raise InputError(config_name, "SchedulerParameters", f"{key}={raw}", "not a whole number ≥ 0")
            if int(raw):  # 0: no limit
                settings[setting] = str(int(raw))
                limited.append(f"{key}={int(raw)}")
        if limited:
            notes.append(f"{', '.join(limited)}: Slurm's own estimate (the walltime-only forecast) and the "
                         "simulation's passes (the forecast with a history) hold to them; a job the pass skips "
                         "or tests for a start now only keeps the simulation's forecast where Slurm keeps an "
                         "older estimate" + ("; the simulation's passes do not stop after bf_max_job_start "
                                             "starts (Slurm's next pass goes on seconds later)"
                                             if "plan_max_job_start" in settings else ""))
        for key in sorted(params):
            if key in UNMODELLED_PARAMETERS and params[key] != "0":  # 0: no limit
                shown = f"{key}={params[key]}" if params[key] else key
                notes.append(f"{shown}: {UNMODELLED_PARAMETERS[key]}")
    if "default_queue_depth" in params:
        notes.append(f"default_queue_depth={params['default_queue_depth']}: the main scheduler's depth is not "
                     "modelled (backfilling covers the jobs it does not reach)")
    select = config.get("SelectType", "")
    if select not in _SELECTS:
        raise InputError(config_name, "SelectType", select, f"not one of {', '.join(_SELECTS)}")
    settings["node_sharing"] = "no" if select == "select/linear" else "yes"
    select_params = config.get("SelectTypeParameters", "").upper()
    if "MEMORY" in select_params and select != "select/linear":
        settings["consumable_memory"] = "yes"
        notes.append(f"SelectTypeParameters={select_params}: Slurm's own estimate (the walltime-only forecast) "
                     "counts memory on shared nodes, and so does the simulation (the forecast with a history), "
                     "which holds a job asking memory per CPU to its cores per node")
    prio = config.get("PriorityType", "")
    if prio == "priority/basic":
        settings["system_sysprio"] = "-DATEqueuedate"
    elif prio == "priority/multifactor":
        settings["system_sysprio"] = _multifactor(config, partitions, notes, config_name, partition_name)
    else:
        raise InputError(config_name, "PriorityType", prio, "not priority/basic or priority/multifactor")
    preempt = config.get("PreemptType", "preempt/none")
    if preempt not in ("preempt/none", "(null)", ""):
        mode = config.get("PreemptMode", "OFF")
        notes.append(f"PreemptType={preempt} (PreemptMode={mode}): in Slurm a job may start at once by preempting "
                     "lower ones; jufo preempts none, so such a job waits in its forecast and the jobs it would "
                     "preempt run on")
    over = config.get("OverTimeLimit", "0 min").split()[0]
    if over not in ("0", "NONE"):
        notes.append(f"OverTimeLimit={over} min: a job that reaches its limit may run that much longer in Slurm; "
                     "jufo ends it at its limit")
    queues = []
    tiers = {p.get("PriorityTier", "1") for p in partitions}
    for k, part in enumerate(partitions):
        name, where = part["PartitionName"], f"{partition_name}, line {k + 1}"
        data: dict[str, str] = {}
        over_sub = part.get("OverSubscribe", "NO").split(":")[0].upper()
        if over_sub not in ("NO", "EXCLUSIVE", "YES", "FORCE"):
            raise InputError(where, "OverSubscribe", over_sub, "not NO, EXCLUSIVE, YES or FORCE")
        if over_sub == "EXCLUSIVE" or whole_nodes(part, where) or settings["node_sharing"] == "no":
            data["exclusive"] = "yes"
        elif over_sub in ("YES", "FORCE"):
            notes.append(f"partition {name}: OverSubscribe={part['OverSubscribe']}: jobs sharing cores is not "
                         "modelled; each core serves one job")
        for key in ("MaxTime", "DefaultTime"):
            raw = part.get(key, "UNLIMITED")
            try:
                value = seconds_of(raw)
            except ValueError as err:
                raise InputError(where, key, raw, str(err)) from None
            if value is not None:
                data[key.lower()] = str(value)
        data["state"] = part.get("State", "UP")
        data["prioritytier"] = part.get("PriorityTier", "1")
        if settings.get("consumable_memory") == "yes":  # what a job asking no memory gets (whatif's)
            for key in ("DefMemPerCPU", "DefMemPerNode"):
                given = next((v for v in (part.get(key, ""), config.get(key, "")) if v.isdigit()), None)
                if given is not None:
                    data[key.lower()] = given
        queues.append((name, data))
    exclusive = [name for name, data in queues if data.get("exclusive") == "yes"]
    if settings["node_sharing"] == "yes":  # known from Slurm: nothing is read off the running jobs
        settings["exclusive_queues"] = ",".join(exclusive) or "none"
    if len(tiers) > 1:
        settings["system_sysprio"] = f"prioritytier * 4294967296 + ({settings['system_sysprio']})"
        notes.append("partitions differ in PriorityTier: jobs of a higher tier go first, as in Slurm")
    return settings, queues, notes


_PARTITION_EXCLUSIVE = ("NO", "NODE", "USER", "TOPO")  # Slurm 26.05's Exclusive= of a partition


def whole_nodes(part: dict[str, str], where: str) -> bool:
    """Whether a partition gives its jobs whole nodes, as printed from Slurm 24.05 on (up to
    25.11 ``OverSubscribe=EXCLUSIVE`` says so too, and is read beside this):
    ``ExclusiveTopo=YES`` (24.05: whole topology blocks, so whole nodes) or, from 26.05, which
    prints an exclusive partition as ``OverSubscribe=NO``, ``Exclusive=NODE`` or ``TOPO``.
    ``Exclusive=USER`` (Slurm 22.05's ``ExclusiveUser=YES``) shares nodes among one user's
    jobs: the jobs say so themselves (``_exclusive_job``). Another value of ``Exclusive`` is
    an InputError naming ``where``.

    >>> whole_nodes({"Exclusive": "NODE"}, "p"), whole_nodes({"Exclusive": "USER"}, "p"), whole_nodes({}, "p")
    (True, False, False)
    >>> whole_nodes({"ExclusiveTopo": "YES", "OverSubscribe": "NO"}, "p")
    True
    """
    exclusive = part.get("Exclusive", "NO").upper()
    if exclusive not in _PARTITION_EXCLUSIVE:
        raise InputError(where, "Exclusive", exclusive, f"not {', '.join(_PARTITION_EXCLUSIVE[:-1])} or TOPO")
    return exclusive in ("NODE", "TOPO") or part.get("ExclusiveTopo", "NO").upper() == "YES"


def _multifactor(config: dict[str, str], partitions: list[dict[str, str]], notes: list[str],
                 source: str, partition_name: str = "partition.txt") -> str:
    """The priority formula of ``priority/multifactor``. Age, job size and partition can be
    computed from a job; fair share, QOS, association and TRES weights cannot: with any of
    them set, the priority Slurm computed (``userprio``) orders the jobs, frozen at the
    snapshot (ages grow alike, so only jobs reaching PriorityMaxAge change places)."""
    weights = {k: _weight(config, f"PriorityWeight{k}") for k in ("Age", "JobSize", "Partition", "QOS",
                                                                  "FairShare", "Assoc")}
    tres = config.get("PriorityWeightTRES", "(null)")
    if weights["FairShare"] or weights["QOS"] or weights["Assoc"] or tres not in ("(null)", ""):
        notes.append("priority/multifactor with fair share, QOS, association or TRES weights: jufo orders by "
                     "the priority Slurm computed (userprio), which it cannot recompute")
        return "userprio"
    terms = []
    if weights["Age"]:
        raw = config.get("PriorityMaxAge", "7-00:00:00")
        try:
            max_age = seconds_of(raw) or 7 * 86400
        except ValueError as err:
            raise InputError(source, "PriorityMaxAge", raw, str(err)) from None
        terms.append(f"{weights['Age']} * min(AGE, {max_age}) / {max_age}")
        period = config.get("PriorityCalcPeriod", "00:05:00")
        notes.append(f"PriorityCalcPeriod={period}: Slurm recomputes the age factor that often; jufo at every "
                     "start and end, so jobs of close priority may change places earlier than in Slurm")
    if weights["JobSize"]:
        nodes = cpus = 0
        for k, part in enumerate(partitions):
            nodes += len(partition_nodes(part, k, partition_name))
            total = part.get("TotalCPUs", "0")
            if not total.isdigit():
                raise SlurmTextError(partition_name, k + 1, "TotalCPUs", total, "not a whole number")
            cpus += int(total)
        nodes = max(nodes, 1)
        favor_small = config.get("PriorityFavorSmall", "No").lower() in ("yes", "1")
        size = f"(numnodes / {nodes} + totalcores / {max(cpus, 1)}) / 2"
        terms.append(f"{weights['JobSize']} * (1 - {size})" if favor_small else f"{weights['JobSize']} * {size}")
    if weights["Partition"]:
        notes.append("PriorityWeightPartition: the partition factor is left out (every partition's "
                     "PriorityJobFactor counts alike)")
    if not terms:
        return "-DATEqueuedate"
    notes.append("priority/multifactor: age from submission (Slurm counts from eligibility), size from the "
                 "nodes and CPUs asked")
    return " + ".join(terms)


# --- where the text comes from -------------------------------------------------------------

COMMANDS = {
    "job": ["scontrol", "show", "job", "--detail", "--oneliner"],
    "node": ["scontrol", "show", "node", "--oneliner"],
    "partition": ["scontrol", "show", "partition", "--oneliner"],
    "reservation": ["scontrol", "show", "reservation", "--oneliner"],
    "config": ["scontrol", "show", "config"],
}


def slurm_env() -> dict[str, str]:
    """The environment Slurm's commands run in: this one, with dates printed in Slurm's standard
    form (``2026-11-29T13:45:00``). A user's ``SLURM_TIME_FORMAT`` (``relative``, or a strftime
    form such as ``%d.%m. %H:%M``, which sites suggest for ``squeue``) would make scontrol print
    dates that cannot be read back, or not to the second."""
    import os

    return {**os.environ, "SLURM_TIME_FORMAT": "standard"}


def run_scontrol(what: str, timeout: float = 30.0) -> str:
    """The output of one scontrol command; InputError (exit 2) with its message when there is
    no scontrol, it fails or it does not answer within ``timeout`` seconds."""
    import subprocess

    cmd = COMMANDS[what]
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, env=slurm_env())
    except FileNotFoundError:
        raise InputError(" ".join(cmd), None, None, "scontrol not found: is Slurm's client installed here? "
                         "(--from DIR reads saved outputs instead)") from None
    except subprocess.TimeoutExpired:
        raise InputError(" ".join(cmd), None, None, f"no answer within {timeout:g} s") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise InputError(" ".join(cmd), None, None, f"exit {done.returncode}: "
                         f"{message[-1][:300] if message else 'no message'}")
    return done.stdout.decode("utf-8", "replace")


def read_saved(directory: str, names: tuple[str, ...]) -> dict[str, str]:
    """Saved outputs ``DIR/NAME.txt``, each read up to the input limit."""
    import os

    from .values import read_limited

    out = {}
    for name in names:
        path = os.path.join(directory, f"{name}.txt")
        try:
            with open(path, "rb") as fh:
                out[name] = read_limited(fh, path).decode("utf-8", "replace")
        except OSError as err:
            raise InputError(path, None, None, f"cannot read: {err.strerror or err}") from None
    return out


def backfill_pass(sdiag: str) -> int | None:
    """When Slurm's last backfill pass began (epoch seconds), from ``sdiag``'s "Backfilling
    stats" section; None if it does not say.

    >>> backfill_pass("Backfilling stats\\n\\tTotal cycles: 3\\n\\tLast cycle when: Thu Nov 26 10:09:58 2026 (1795687798)\\n")
    1795687798
    """
    section = sdiag.partition("Backfilling stats")[2]
    m = re.search(r"Last cycle when:.*\((\d{1,12})\)", section)
    return int(m.group(1)) if m and int(m.group(1)) > 0 else None


_QOS_RECORD = re.compile(r"^\s*QOS=(\S+?)\(\d+\)")
# each section's limits (None: the QOS's own, what all its jobs together hold: GrpJobs, GrpTRES)
_MAX_JOBS = {None: re.compile(r"\bGrpJobs=(\d+|N)\("), "User Limits": re.compile(r"\bMaxJobsPU=(\d+|N)\("),
             "Account Limits": re.compile(r"\bMaxJobsPA=(\d+|N)\(")}
_MAX_TRES = {None: re.compile(r"\bGrpTRES=(\S*)"), "User Limits": re.compile(r"\bMaxTRESPU=(\S*)"),
             "Account Limits": re.compile(r"\bMaxTRESPA=(\S*)")}
_LIMIT_KEYS = {None: ("grp_jobs", "grp_tres"), "User Limits": ("max_jobs_pu", "max_tres_pu"),
               "Account Limits": ("max_jobs_pa", "max_tres_pa")}
_TRES_LIMIT = re.compile(r"([\w/:.-]+)=(\d{1,9})\(")


def qos_limits(text: str) -> dict[str, dict[str, str]]:
    """QOS → its limits as LLview 2's ``classes_LML.xml`` names them (``max_jobs_pu``, Slurm's
    ``MaxJobsPU``: the most jobs of it one user may run at once; ``max_tres_pu``, ``MaxTRESPU``:
    the most of each resource, ``cpu=30,node=4``; ``max_jobs_pa`` and ``max_tres_pa``,
    ``MaxJobsPA`` and ``MaxTRESPA``: the same for one account's users together) and, in the
    same words, its own limits on all its jobs together (``grp_jobs`` and ``grp_tres``, Slurm's
    ``GrpJobs`` and ``GrpTRES``), from ``scontrol show assoc_mgr flags=qos``, which prints each
    limit with its use (the QOS's own lines: ``GrpJobs=10(9)``, ``GrpTRES=cpu=60(43),mem=N(0)``;
    "User Limits" each user's: ``MaxJobsPU=4(3)``, ``MaxTRESPU=cpu=30(12),mem=N(0)``, ``N`` for
    none; "Account Limits": ``MaxJobsPA=7(3)``, for the accounts with jobs in it); a QOS
    without a limit is left out. Missing or unreadable output gives none.

    >>> qos_limits("QOS=normal(1)\\n    GrpJobs=10(9) GrpJobsAccrue=N(0)\\n    GrpTRES=cpu=60(43),node=N(43)\\n"
    ...            "    GrpTRESMins=cpu=9(0)\\n  Account Limits\\n    12\\n      MaxJobsPA=7(3)\\n  User Limits\\n"
    ...            "    1001\\n      MaxJobsPU=4(3) MaxJobsAccruePU=N(5)\\n      MaxTRESPU=cpu=30(12),mem=N(0),node=N(3)\\n"
    ...            "QOS=long(2)\\n  User Limits\\n    1001\\n      MaxJobsPU=N(0)\\n      MaxTRESPU=cpu=N(0)\\n")
    {'normal': {'grp_jobs': '10', 'grp_tres': 'cpu=60', 'max_jobs_pa': '7', 'max_jobs_pu': '4', 'max_tres_pu': 'cpu=30'}}
    """
    out: dict[str, dict[str, str]] = {}
    qos = None
    section = None
    for line in text.splitlines():
        record = _QOS_RECORD.match(line)
        if record:
            qos, section = record.group(1), None
            continue
        word = line.strip()
        if word in _LIMIT_KEYS:
            section = word
        elif qos is not None:
            jobs_key, tres_key = _LIMIT_KEYS[section]
            found = _MAX_JOBS[section].search(line)
            if found and found.group(1) != "N":
                out.setdefault(qos, {})[jobs_key] = found.group(1)
            tres = _MAX_TRES[section].search(line)
            limits = _TRES_LIMIT.findall(tres.group(1)) if tres else []
            if limits:
                out.setdefault(qos, {})[tres_key] = ",".join(f"{name}={value}" for name, value in limits)
    return out


def run_optional(cmd: list[str], timeout: float) -> str:
    """The output of a command jufo can do without (``sdiag``: without it the plan is made as of
    the last change the snapshot shows; the QOS limits), or "" where it cannot be had."""
    import subprocess

    try:
        done = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, env=slurm_env())
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""


OPTIONAL = {"sdiag": ["sdiag"], "qos": ["scontrol", "show", "assoc_mgr", "flags=qos"]}


def capture(directory: str | None, timeout: float = 30.0) -> SlurmText:
    """Everything ``snapshot_objects`` needs: from saved outputs (``DIR/job.txt`` ... and, if
    present, ``DIR/at``, the capture's epoch second, and the optional ``sdiag.txt`` and
    ``qos.txt``) or from scontrol now."""
    import os

    names = tuple(COMMANDS)
    if directory is None:
        at = int(time.time())
        return SlurmText(**{name: run_scontrol(name, timeout) for name in names}, at=at,
                         names={name: " ".join(COMMANDS[name]) for name in names},
                         **{name: run_optional(cmd, timeout) for name, cmd in OPTIONAL.items()})
    texts = read_saved(directory, names)
    where = {name: os.path.join(directory, f"{name}.txt") for name in names}
    at = None
    stamp = os.path.join(directory, "at")
    if os.path.exists(stamp):
        with open(stamp, "rb") as fh:
            raw = fh.read(64).decode("ascii", "replace").strip()
        if not raw.isdigit():
            raise InputError(stamp, None, raw, "not an epoch second")
        at = int(raw)
    present = tuple(name for name in OPTIONAL if os.path.exists(os.path.join(directory, f"{name}.txt")))
    return SlurmText(**texts, at=at, names=where, **read_saved(directory, present))


def site_config(directory: str | None, timeout: float = 30.0) -> tuple[bytes, list[str]]:
    """``jufo slurm config``: an LML file with one scheduler object (what ``--config`` reads),
    and the notes on what is approximated (also in the file, as a comment)."""
    from .lml import build

    if directory is None:
        config_text, partition_text = run_scontrol("config", timeout), run_scontrol("partition", timeout)
        config_name, partition_name = "scontrol show config", "scontrol show partition"
    else:
        texts = read_saved(directory, ("config", "partition"))
        config_text, partition_text = texts["config"], texts["partition"]
        config_name, partition_name = (f"{directory}/config.txt", f"{directory}/partition.txt")
    config = parse_config(config_text, config_name)
    partitions = parse_records(partition_text, partition_name, "PartitionName")
    settings, queues, notes = site_settings(config, partitions, config_name, partition_name)
    cluster = config.get("ClusterName", "slurm")
    data = build([(f"{cluster}_scheduler", "scheduler", settings)])
    comment = ("<!-- jufo slurm config: the scheduler model of Slurm cluster "
               f"{_comment(cluster)}, read {_comment(config.get('_as_of', ''))}.\n"
               + "".join(f"     - {_comment(n)}\n" for n in notes) + "-->\n")
    head, _, rest = data.partition(b"\n")
    return head + b"\n" + comment.encode() + rest, notes


def _comment(text: str) -> str:
    """Text safe inside an XML comment."""
    return text.replace("--", "- -").replace("<", "&lt;")
