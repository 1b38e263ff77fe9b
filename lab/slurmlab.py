"""A Slurm lab on one machine: a real Slurm 22.05 (Debian's packages) with one ``slurmd -N`` per
virtual node on localhost, a time-compressed window of a real SWF trace replayed into it as
``sbatch --wrap 'sleep N'``, and what LLview or jufo would see captured every few seconds.

    python lab/slurmlab.py run TRACE --dir DIR [--nodes 16] [--jobs 300] [--scale 60] ...
    python lab/slurmlab.py start --dir DIR [--nodes 16] [--accounting]
    python lab/slurmlab.py stop --dir DIR

Needs root on a Debian machine (``--install`` runs apt-get for slurmctld, slurmd, slurm-client,
munge, and with ``--accounting`` mariadb-server and slurmdbd). Every daemon it starts is recorded
in ``DIR/pids`` and stopped by that pid. Captures go to ``DIR/capture/NNNN/`` as the saved
outputs ``jufo slurm snapshot --from`` reads (``job.txt``, ``node.txt``, ``partition.txt``,
``reservation.txt``, ``config.txt``) with ``squeue.txt`` (``squeue --start``) and ``at`` (the
capture's epoch second); at the end ``DIR/sacct.txt`` holds ``sacct --parsable2`` (with
``--accounting``) and ``DIR/submitted.tsv`` what was submitted.

Facts this relies on (Debian 12, Slurm 22.05.8): munged refuses to run as root with the
package's key, so it runs as the munge user; plain ``slurmd -N name`` works, one process per
node, each on its own port, with ``SlurmdParameters=config_overrides``; each node's spool
folder must exist; MariaDB's postinst cannot start it here, so ``mariadbd`` is started by hand.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import pwd
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # jufo's own reader, from the checkout
from jufo.io.scontrol import COMMANDS, OPTIONAL, slurm_env  # noqa: E402

PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
ACCOUNTING_PACKAGES = ["mariadb-server", "slurmdbd"]


def lab_users(count: int) -> list[str]:
    """The lab's Unix users: jlab1 to jlabN, in the order trace users are mapped to them.

    >>> lab_users(3), lab_users(5)[-1]
    (['jlab1', 'jlab2', 'jlab3'], 'jlab5')
    """
    return [f"jlab{i}" for i in range(1, count + 1)]


USERS = lab_users(3)  # the Unix users the trace's users are mapped to (--users)
MAX_USERS = 200  # Unix users a lab may create
CTLD_PORT = 16817
DBD_PORT = 16819
SQL_PORT = 16306
NODE_PORT = 17001


@dataclass
class Lab:
    """Where a lab lives and how it is shaped."""

    dir: Path
    nodes: int = 16
    cores: int = 4
    accounting: bool = False
    priority: str = "basic"  # or multifactor, fairshare
    partitions: str = "exclusive"  # or mixed: an exclusive and a core-shared partition
    scheduler: str = "backfill"
    bf_interval: int = 5
    ports: int = 0  # added to every port, so that two labs can run side by side
    debug: bool = False  # log every backfill pass (DebugFlags=Backfill,BackfillMap)
    user_limit: int = 0  # the normal QOS's MaxJobsPerUser (0: none), as sites limit running jobs
    user_cpus: int = 0  # the normal QOS's MaxTRESPerUser=cpu (0: none), as sites limit the cores a user holds
    accounts: int = 1  # Slurm accounts the users are spread over in turn (lab, or lab1 to labN), as projects
    account_limit: int = 0  # the normal QOS's MaxJobsPerAccount (0: none), as sites limit a project's running jobs
    qos_cpus: int = 0  # the normal QOS's GrpTRES=cpu (0: none): the cores all its jobs hold at once, as sites cap a QOS
    qos_jobs: int = 0  # the normal QOS's GrpJobs (0: none): the jobs all its users run at once
    bf_extra: str = ""  # more SchedulerParameters (bf_max_job_user=4,...), as sites limit their backfill
    gpus: int = 0  # GPUs per node (gres/gpu; device files stand in for them), as GPU sites share nodes
    memory: bool = False  # memory a consumable (CR_Core_Memory, 100 MB a CPU by default), as most shared sites
    gpu_nodes: int = 0  # only this many nodes have the GPUs (0: all), as sites mix GPU and CPU nodes
    gpu_weight: int = 1  # the Weight of the nodes with GPUs, as sites keep CPU jobs off them
    gpu_types: tuple[str, ...] = ()  # the GPU nodes' types in turn (a100, v100, ...), as sites mix models
    shapes: bool = False  # shared jobs asked as users write them (--ntasks-per-node, -c, --mincpus, --gres)
    halflife: int = 10  # fair share: PriorityDecayHalfLife in lab minutes (Slurm's default, 7 days, is 101 at --scale 100)

    def gpu_range(self) -> tuple[int, int]:
        """The first and last node (from 1) with GPUs: the first ``gpu_nodes`` of the core-shared
        partition with ``--partitions mixed``, else of the machine."""
        first = self.nodes // 2 + 1 if self.partitions == "mixed" and self.nodes > 1 else 1
        count = self.gpu_nodes if 0 < self.gpu_nodes <= self.nodes - first + 1 else self.nodes - first + 1
        return first, first + count - 1

    def with_gpus(self) -> str:
        """The hostlist of the nodes with GPUs."""
        return hostlist(*self.gpu_range())

    def gpu_type(self, k: int) -> str | None:
        """The GPU type of node ``k`` (from 1) of ``gpu_range``: ``gpu_types`` in turn."""
        return self.gpu_types[(k - self.gpu_range()[0]) % len(self.gpu_types)] if self.gpu_types else None

    def account_of(self, user: str) -> str:
        """The Slurm account of a lab user: ``lab``, or with ``accounts`` > 1 ``lab1`` to ``labN`` in
        turn (jlab1 in lab1, jlab2 in lab2, ...; root in lab).

        >>> Lab(Path("/tmp/x"), accounts=2).account_of("jlab3"), Lab(Path("/tmp/x")).account_of("jlab3")
        ('lab1', 'lab')
        """
        if self.accounts <= 1 or not user.startswith("jlab"):
            return "lab"
        return f"lab{(int(user[4:]) - 1) % self.accounts + 1}"

    @property
    def munge_socket(self) -> Path:
        return self.dir / "run" / "munge" / "munge.socket"

    @property
    def names(self) -> str:
        return hostlist(1, self.nodes)

    def node(self, k: int) -> str:
        return f"n{k + 1:02d}"


def hostlist(first: int, last: int) -> str:
    """Nodes ``n<first>`` to ``n<last>`` (from 1) as a Slurm hostlist: ``n[03-05]``, ``n03``."""
    return f"n[{first:02d}-{last:02d}]" if last > first else f"n{first:02d}"


def sh(*args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), check=check, text=True, capture_output=True, **kw)


def install(accounting: bool) -> None:
    """apt-get the packages (as root)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    wanted = PACKAGES + (ACCOUNTING_PACKAGES if accounting else [])
    missing = [p for p in wanted if sh("dpkg-query", "-W", "-f=${Status}", p, check=False).stdout
               != "install ok installed"]
    if not missing:
        return
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing], check=True, env=env,
                   stdout=subprocess.DEVNULL)


def duration(minutes: int) -> str:
    """Minutes as Slurm writes a duration in its configuration, ``days-hours:minutes:seconds``.

    >>> duration(10), duration(101), duration(1441)
    ('0-00:10:00', '0-01:41:00', '1-00:01:00')
    """
    return f"{minutes // 1440}-{minutes // 60 % 24:02d}:{minutes % 60:02d}:00"


def slurm_conf(lab: Lab) -> str:
    d = lab.dir
    half = max(1, lab.nodes // 2)
    lines = [
        *(["GresTypes=gpu"] if lab.gpus else []),
        "ClusterName=jufolab",
        "SlurmctldHost=localhost",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"SlurmctldPort={CTLD_PORT + lab.ports}",
        "AuthType=auth/munge",
        f"AuthInfo=socket={lab.munge_socket}",
        "CryptoType=crypto/munge",
        f"StateSaveLocation={d}/state",
        f"SlurmdSpoolDir={d}/spool/%n",
        f"SlurmctldPidFile={d}/run/slurmctld.pid",
        f"SlurmdPidFile={d}/run/slurmd-%n.pid",
        f"SlurmctldLogFile={d}/log/slurmctld.log",
        f"SlurmdLogFile={d}/log/slurmd-%n.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "MailProg=/bin/true",
        "ReturnToService=2",
        "SlurmdParameters=config_overrides",
        f"SchedulerType=sched/{lab.scheduler}",
        f"SchedulerParameters=bf_interval={lab.bf_interval},bf_resolution=60,bf_window=1440,bf_continue"
        + (f",{lab.bf_extra}" if lab.bf_extra else ""),
        "SelectType=select/cons_tres",
        f"SelectTypeParameters={'CR_Core_Memory' if lab.memory else 'CR_Core'}",
        *(["DefMemPerCPU=100"] if lab.memory else []),
        f"PriorityType=priority/{'multifactor' if lab.priority == 'fairshare' else lab.priority}",
        "JobAcctGatherType=jobacct_gather/none",
        "JobCompType=jobcomp/none",
        "MinJobAge=600",
        "KillWait=5",
        "OverTimeLimit=0",
        "InactiveLimit=0",
        "MessageTimeout=30",
        "SlurmctldTimeout=60",
        "SlurmdTimeout=120",
    ]
    if lab.debug:
        lines += ["SlurmctldDebug=info", "DebugFlags=Backfill,BackfillMap"]
    if lab.priority == "multifactor":
        lines += ["PriorityWeightAge=1000", "PriorityWeightJobSize=1000", "PriorityMaxAge=1:00:00",
                  "PriorityWeightFairshare=0", "PriorityWeightPartition=0", "PriorityWeightQOS=0"]
    elif lab.priority == "fairshare":  # as most sites: fair share first, age second; usage decays in lab time
        lines += ["PriorityWeightFairshare=10000", "PriorityWeightAge=1000",
                  "PriorityMaxAge=1:00:00", f"PriorityDecayHalfLife={duration(lab.halflife)}", "PriorityCalcPeriod=1",
                  "PriorityWeightJobSize=0", "PriorityWeightPartition=0", "PriorityWeightQOS=0"]
    if lab.accounting:
        # AccountingStoragePass: the munge socket for slurmdbd's connections (sacct, sacctmgr and
        # slurmctld use the default socket otherwise, and fail once no munged listens there)
        lines += ["AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageHost=localhost",
                  f"AccountingStoragePort={DBD_PORT + lab.ports}", f"AccountingStoragePass={lab.munge_socket}"]
        if lab.user_limit or lab.user_cpus or lab.account_limit or lab.qos_cpus or lab.qos_jobs:  # QOS limits count only where enforced (and every user needs an association)
            lines.append("AccountingStorageEnforce=associations,limits,qos")
    else:
        lines += ["AccountingStorageType=accounting_storage/none"]
    g0, g1 = lab.gpu_range() if lab.gpus else (1, lab.nodes)
    weight = f"Weight={lab.gpu_weight} " if lab.gpus and lab.gpu_weight != 1 else ""
    groups = [(1, g0 - 1, "")]
    if lab.gpu_types:  # a node line each: its own type
        groups += [(k, k, f"Gres=gpu:{lab.gpu_type(k)}:{lab.gpus} {weight}") for k in range(g0, g1 + 1)]
    else:
        groups += [(g0, g1, (f"Gres=gpu:{lab.gpus} " if lab.gpus else "") + weight)]
    for first, last, extra in (*groups, (g1 + 1, lab.nodes, "")):
        if first <= last:
            ports = f"{NODE_PORT + lab.ports + first - 1}-{NODE_PORT + lab.ports + last - 1}"
            lines.append(f"NodeName={hostlist(first, last)} NodeHostname=localhost NodeAddr=127.0.0.1 Port={ports} "
                         f"CPUs={lab.cores} RealMemory=1000 {extra}State=UNKNOWN")
    if lab.partitions == "mixed" and lab.nodes > 1:
        lines.append(f"PartitionName=batch Nodes={hostlist(1, half)} Default=YES MaxTime=INFINITE State=UP "
                     "OverSubscribe=EXCLUSIVE")
        lines.append(f"PartitionName=shared Nodes={hostlist(half + 1, lab.nodes)} MaxTime=INFINITE State=UP "
                     "OverSubscribe=NO")
    elif lab.partitions == "overlap" and lab.nodes > 1:  # a higher tier on half of batch's nodes, as sites
        lines.append(f"PartitionName=batch Nodes={lab.names} Default=YES MaxTime=INFINITE State=UP "  # give a
                     "OverSubscribe=EXCLUSIVE PriorityTier=1")  # group or short jobs precedence
        lines.append(f"PartitionName=prio Nodes={hostlist(1, half)} MaxTime=INFINITE State=UP "
                     "OverSubscribe=EXCLUSIVE PriorityTier=2")
    else:
        lines.append(f"PartitionName=batch Nodes={lab.names} Default=YES MaxTime=INFINITE State=UP "
                     "OverSubscribe=EXCLUSIVE")
    return "\n".join(lines) + "\n"


def record_pid(lab: Lab, name: str, pid: int) -> None:
    with open(lab.dir / "pids", "a") as fh:
        fh.write(f"{pid} {name}\n")


def wait_for(what: str, test, seconds: float = 30.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if test():
            return
        time.sleep(0.25)
    raise SystemExit(f"slurmlab: {what} did not come up within {seconds:.0f} s")


def pid_from(path: Path, seconds: float = 15.0) -> int:
    wait_for(str(path), lambda: path.exists() and path.read_text().strip().isdigit(), seconds)
    return int(path.read_text().strip())


def ensure_users() -> None:
    for user in USERS:
        try:
            pwd.getpwnam(user)
        except KeyError:
            sh("useradd", "--no-create-home", "--shell", "/bin/sh", user)


def start_munge(lab: Lab) -> None:
    """The lab's own munged (as the munge user: it refuses root with the package's key), on a
    socket of its own, so labs and a site's munged never meet."""
    run = lab.munge_socket.parent
    run.mkdir(parents=True, exist_ok=True)
    shutil.chown(run, "munge", "munge")
    run.chmod(0o755)
    if not Path("/etc/munge/munge.key").exists():
        sh("runuser", "-u", "munge", "--", "/usr/sbin/mungekey", "--create")
    sh("runuser", "-u", "munge", "--", "/usr/sbin/munged", "--force", f"--socket={lab.munge_socket}",
       f"--pid-file={run}/munged.pid", f"--log-file={run}/munged.log", f"--seed-file={run}/munged.seed")
    record_pid(lab, "munged", pid_from(run / "munged.pid"))
    wait_for("munged", lambda: sh("munge", "-n", f"--socket={lab.munge_socket}", check=False).returncode == 0)


def start_accounting(lab: Lab) -> None:
    d = lab.dir
    data, sock = d / "mysql", d / "run" / "sql" / "mysqld.sock"
    if not data.exists():
        sh("mariadb-install-db", "--user=mysql", f"--datadir={data}", "--auth-root-authentication-method=socket",
           "--skip-test-db")
        shutil.chown(data, "mysql", "mysql")
    (d / "run" / "sql").mkdir(exist_ok=True)
    shutil.chown(d / "run" / "sql", "mysql", "mysql")
    proc = subprocess.Popen(["/usr/sbin/mariadbd", "--user=mysql", f"--datadir={data}", f"--socket={sock}",
                             f"--port={SQL_PORT + lab.ports}", "--bind-address=127.0.0.1", f"--pid-file={d}/run/sql/mariadb.pid",
                             f"--log-error={d}/log/mariadb.log", "--innodb-buffer-pool-size=64M"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    record_pid(lab, "mariadbd", proc.pid)
    wait_for("mariadbd", lambda: sh("mariadb", f"--socket={sock}", "-e", "select 1", check=False).returncode == 0)
    sql = ("CREATE DATABASE IF NOT EXISTS slurm_acct_db; "
           "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'jufolab'; "
           "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'jufolab'; "
           "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';")
    sh("mariadb", f"--socket={sock}", "-e", sql)
    conf = d / "etc" / "slurmdbd.conf"
    conf.write_text("\n".join([
        "AuthType=auth/munge", f"AuthInfo=socket={lab.munge_socket}", "DbdHost=localhost",
        f"DbdPort={DBD_PORT + lab.ports}", "SlurmUser=root",
        f"PidFile={d}/run/slurmdbd.pid", f"LogFile={d}/log/slurmdbd.log", "StorageType=accounting_storage/mysql",
        "StorageHost=127.0.0.1", f"StoragePort={SQL_PORT + lab.ports}", "StorageUser=slurm", "StoragePass=jufolab",
        "StorageLoc=slurm_acct_db"]) + "\n")
    conf.chmod(0o600)
    env = {**os.environ, "SLURM_CONF": str(d / "etc" / "slurm.conf")}
    subprocess.run(["/usr/sbin/slurmdbd"], check=True, env=env)  # slurmdbd.conf: beside SLURM_CONF
    record_pid(lab, "slurmdbd", pid_from(d / "run" / "slurmdbd.pid"))
    wait_for("slurmdbd", lambda: sh("sacctmgr", "-n", "show", "cluster", check=False, env=env).returncode == 0)
    sh("sacctmgr", "-i", "add", "cluster", "jufolab", check=False, env=env)
    for account in sorted(set(map(lab.account_of, USERS)) | {"lab"}):
        sh("sacctmgr", "-i", "add", "account", account, "Cluster=jufolab", check=False, env=env)
    for user in USERS + ["root"]:
        sh("sacctmgr", "-i", "add", "user", user, f"Account={lab.account_of(user)}", "Cluster=jufolab",
           check=False, env=env)
    if lab.account_limit:
        sh("sacctmgr", "-i", "modify", "qos", "normal", "set", f"MaxJobsPerAccount={lab.account_limit}", env=env)
    if lab.user_limit:
        sh("sacctmgr", "-i", "modify", "qos", "normal", "set", f"MaxJobsPerUser={lab.user_limit}", env=env)
    if lab.user_cpus:
        sh("sacctmgr", "-i", "modify", "qos", "normal", "set", f"MaxTRESPerUser=cpu={lab.user_cpus}", env=env)
    if lab.qos_cpus:
        sh("sacctmgr", "-i", "modify", "qos", "normal", "set", f"GrpTRES=cpu={lab.qos_cpus}", env=env)
    if lab.qos_jobs:
        sh("sacctmgr", "-i", "modify", "qos", "normal", "set", f"GrpJobs={lab.qos_jobs}", env=env)


def start(lab: Lab) -> dict[str, str]:
    """Write the configuration and start every daemon; the environment that reaches the lab."""
    d = lab.dir
    for sub in ("etc", "state", "run", "log", "out", "capture", *(f"spool/{lab.node(k)}" for k in range(lab.nodes))):
        (d / sub).mkdir(parents=True, exist_ok=True)
    (d / "out").chmod(0o1777)
    d.chmod(0o755)
    conf = d / "etc" / "slurm.conf"
    conf.write_text(slurm_conf(lab))
    if lab.gpus:  # slurmd counts a GPU per device file: character devices as /dev/null's stand in
        (d / "dev").mkdir(exist_ok=True)
        for k in range(lab.gpus):
            if not (d / "dev" / f"gpu{k}").exists():
                os.mknod(d / "dev" / f"gpu{k}", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        files = f"File={d}/dev/gpu[0-{lab.gpus - 1}]"
        g0, g1 = lab.gpu_range()
        lines = ([f"NodeName={lab.node(k - 1)} Name=gpu Type={lab.gpu_type(k)} {files}" for k in range(g0, g1 + 1)]
                 if lab.gpu_types else [f"NodeName={lab.with_gpus()} Name=gpu {files}"])
        (d / "etc" / "gres.conf").write_text("AutoDetect=off\n" + "\n".join(lines) + "\n")
    (d / "pids").touch()
    env = {**slurm_env(), "SLURM_CONF": str(conf)}
    ensure_users()
    start_munge(lab)
    if lab.accounting:
        start_accounting(lab)
    subprocess.run(["/usr/sbin/slurmctld", "-f", str(conf), "-c", "-i"], check=True, env=env)
    record_pid(lab, "slurmctld", pid_from(d / "run" / "slurmctld.pid"))
    wait_for("slurmctld", lambda: sh("scontrol", "ping", check=False, env=env).stdout.count("UP") >= 1)
    for k in range(lab.nodes):
        name = lab.node(k)
        subprocess.run(["/usr/sbin/slurmd", "-f", str(conf), "-N", name], check=True, env=env)
        record_pid(lab, f"slurmd {name}", pid_from(d / "run" / f"slurmd-{name}.pid"))

    def all_idle() -> bool:
        out = sh("sinfo", "-h", "-N", "-o", "%N %t", check=False, env=env).stdout.split()
        states = out[1::2]
        return len(states) >= lab.nodes and all(s.startswith(("idle", "mix", "alloc")) for s in states)

    wait_for(f"{lab.nodes} nodes", all_idle, 60)
    (d / "env").write_text(f"SLURM_CONF={conf}\n")
    return env


def stop(directory: Path) -> list[str]:
    """Stop every daemon the lab started, by its recorded pid, newest first."""
    pids = directory / "pids"
    if not pids.exists():
        return []
    conf = directory / "etc" / "slurm.conf"
    env = {**slurm_env(), "SLURM_CONF": str(conf)}
    left = sh("squeue", "-h", "-o", "%i", check=False, env=env, timeout=30).stdout.split() if conf.exists() else []
    if left:  # jobs' steps outlive slurmd: end them, and let slurmd reap them, while slurmctld runs
        sh("scancel", "--full", *left, check=False, env=env, timeout=30)
        end = time.monotonic() + 20
        while time.monotonic() < end and sh("squeue", "-h", "-o", "%i", check=False, env=env,
                                            timeout=30).stdout.strip():
            time.sleep(0.5)
    stopped = []
    rows = [line.split(" ", 1) for line in pids.read_text().splitlines() if line.strip()]
    for pid, name in reversed(rows):
        try:
            os.kill(int(pid), signal.SIGTERM)
            stopped.append(name)
        except ProcessLookupError:
            continue
    end = time.monotonic() + 20
    for pid, name in rows:
        while time.monotonic() < end:
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
    pids.unlink()
    steps = lab_steps(conf)
    for pid in steps:  # left when slurmctld was gone and could not end its jobs: they die with the lab
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if steps:
        stopped.append(f"{len(steps)} job processes")
    return stopped


def lab_steps(conf: Path) -> list[int]:
    """The pids of this lab's job steps and job processes still alive: a ``slurmstepd`` started by one
    of its slurmd, or a process of one of its jobs (``SLURM_JOB_ID`` set, ``SLURM_CONF`` the lab's)."""
    mark = f"SLURM_CONF={conf}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = (entry / "environ").read_bytes().split(b"\0")
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if mark in env and (comm == "slurmstepd" or any(v.startswith(b"SLURM_JOB_ID=") for v in env)):
            found.append(int(entry.name))
    return sorted(found)


# --- the workload --------------------------------------------------------------------------


@dataclass
class Submit:
    """One sbatch: whole nodes (``nodes``, ``--exclusive``) or, in the shared partition, ``tasks``
    cores; ``after``: the index of the job it depends on (afterany), ``array``: ``1-8%2``."""

    at: float  # seconds after the replay's start
    user: str
    nodes: int
    limit_min: int
    sleep: int
    partition: str = ""
    tasks: int = 0
    trace_id: str = ""
    after: int | None = None
    array: str = ""
    cancel_after: float | None = None  # seconds after its submit: scancel it then if it still waits
    extra: list[str] = field(default_factory=list)  # more sbatch options (``shaped``)


def read_swf(path: str) -> list[list[float]]:
    opener = gzip.open if path.endswith(".gz") else open
    rows = []
    with opener(path, "rt") as fh:
        for line in fh:
            if line.startswith(";") or not line.strip():
                continue
            rows.append([float(x) for x in line.split()])
    return rows


def mixed(jobs: list[Submit], lab: Lab) -> list[Submit]:
    """The mixed workload: jobs of at most an eighth of the machine go to the core-shared
    partition as that many cores (of its half of the nodes), larger ones take whole nodes of
    the exclusive one (of its half); and a dependency chain of three and a throttled array
    (``1-8%2``) a quarter of the way in."""
    half = max(1, lab.nodes // 2)
    out = []
    for job in jobs:
        share = job.nodes / lab.nodes
        if share <= 1 / 8:
            out.append(Submit(job.at, job.user, 1, job.limit_min, job.sleep, "shared",
                              max(1, round(share * half * lab.cores)), job.trace_id))
        else:
            out.append(Submit(job.at, job.user, max(1, min(half, round(share * half))), job.limit_min, job.sleep,
                              "batch", trace_id=job.trace_id))
    if out:
        t = out[len(out) // 4].at
        k = len(out)
        out += [Submit(t, USERS[0], 2, 3, 100, "batch", trace_id=f"chain{i}", after=None if i == 0 else k + i - 1)
                for i in range(3)]
        out.append(Submit(t + 1, USERS[1], 1, 2, 70, "shared", tasks=2, trace_id="array", array="1-8%2"))
    return out


def shaped(jobs: list[Submit], lab: Lab) -> list[Submit]:
    """Jobs of the core-shared partition asked as users write them, each chosen by its trace
    number: a quarter as ``-N 2 --ntasks-per-node=k``, a fifth as ``-c 2`` tasks, a tenth with
    ``--mincpus=2``, with GPUs a sixth ``--gres=gpu:1``, and with ``--memory`` an eighth
    ``--mem-per-cpu=300`` (three such CPUs fill a node's 1,000 MB; the rest ``-n``)."""
    out = []
    for job in jobs:
        if job.partition != "shared" or job.array or job.trace_id.startswith("chain"):
            out.append(job)
            continue
        pick, t = random.Random(f"shape{job.trace_id}").random(), job.tasks
        if pick < 0.25 and t % 2 == 0 and t // 2 <= lab.cores:
            job.extra = ["-N", "2", f"--ntasks-per-node={t // 2}"]
        elif pick < 0.45 and t % 2 == 0:
            job.extra = ["-c", "2"]
            job.tasks = t // 2
        elif pick < 0.55 and t >= 2:
            job.extra = ["--mincpus=2"]
        elif pick < 0.72 and lab.gpus:
            job.extra = ["--gres=gpu:1"]
        elif pick < 0.85 and lab.memory:
            job.extra = ["--mem-per-cpu=300"]
        out.append(job)
    return out


def gpu_bound(jobs: list[Submit], share: float) -> list[Submit]:
    """A ``share`` of the core-shared partition's jobs (chosen by their trace number) asking a
    GPU on their node (``--gres=gpu:1``), as at a GPU site, where the GPUs run out before the
    cores do."""
    for job in jobs:
        if job.partition == "shared" and not job.array and not job.trace_id.startswith("chain") \
                and random.Random(f"gpu{job.trace_id}").random() < share:
            job.extra = [e for e in job.extra if not e.startswith("--gres")] + ["--gres=gpu:1"]
    return jobs


TIMEOUT_RATIO = 0.98  # a trace job that ran this much of its limit ran into it (its kill took the rest)
TIMEOUT_SLEEP = 120  # with ``timeouts``: how far past its limit such a job sleeps, so Slurm kills it


def run_seconds(run: float, limit: float, limit_min: int, timeouts: bool = False) -> int:
    """A lab job's ``sleep``: the trace job's run/limit ratio of the lab limit, ending 5 s before
    the limit; with ``timeouts``, a job that ran into its limit (``TIMEOUT_RATIO``) sleeps past
    it, so that Slurm ends it at its limit as the real machine did (state TIMEOUT).

    >>> run_seconds(50, 100, 2), run_seconds(99, 100, 2), run_seconds(99, 100, 2, timeouts=True)
    (60, 115, 240)
    """
    ratio = min(run / limit, 1.0)
    if timeouts and ratio >= TIMEOUT_RATIO:
        return limit_min * 60 + TIMEOUT_SLEEP
    return max(1, min(int(ratio * limit_min * 60), limit_min * 60 - 5))


def workload(trace: str, lab: Lab, jobs: int, skip: int, scale: float, procs: int,
             cancel: float = 0.0, timeouts: bool = False) -> list[Submit]:
    """``jobs`` consecutive usable jobs of ``trace`` after ``skip``: submit times divided by
    ``scale``, limits divided by ``scale`` and rounded to whole minutes (at least 1), run times at
    the job's real run/limit ratio of the lab limit (``run_seconds``; with ``timeouts``, the jobs
    that ran into their limit do so again), sizes scaled from ``procs`` processors to the
    lab's nodes, users mapped onto the lab's users. A ``cancel`` share of them (chosen by their
    trace number) is given a patience of 1–10 minutes: a user who cancels a job still waiting
    then (the cleaned traces left out the jobs really cancelled)."""
    out: list[Submit] = []
    rows = [r for r in read_swf(trace) if r[3] > 0 and r[8] > 0 and r[4] > 0 and r[1] >= 0]
    rows = rows[skip:skip + jobs]
    if not rows:
        return out
    t0 = rows[0][1]
    users: dict[int, str] = {}
    for r in rows:
        number, submit, run, size, limit, uid = int(r[0]), r[1], r[3], int(r[4]), r[8], int(r[11])
        limit_min = max(1, round(limit / scale / 60))
        sleep = run_seconds(run, limit, limit_min, timeouts)
        nodes = max(1, min(lab.nodes, round(size * lab.nodes / procs)))
        if lab.user_cpus:  # no job asks more than a user may hold (it would wait for ever)
            nodes = max(1, min(nodes, lab.user_cpus // lab.cores))
        if lab.qos_cpus:  # nor more than the whole QOS may hold
            nodes = max(1, min(nodes, lab.qos_cpus // lab.cores))
        user = users.setdefault(uid, USERS[len(users) % len(USERS)])
        pick = random.Random(number)
        patience = pick.uniform(60, 600) if pick.random() < cancel else None
        out.append(Submit((submit - t0) / scale, user, nodes, limit_min, sleep, trace_id=str(number),
                          cancel_after=patience))
    return out


# what ``jufo slurm snapshot --from`` reads (sdiag: when the last backfill pass began, Slurm's
# estimates being that pass's plan; the QOS limits), and squeue's view of the same moment
CAPTURES = {**{f"{name}.txt": cmd for name, cmd in {**COMMANDS, **OPTIONAL}.items()},
            "squeue.txt": ["squeue", "--start", "-h", "-o", "%i %S %r"]}


def capture(lab: Lab, env: dict[str, str], seq: int) -> Path:
    """One capture of what a gatherer sees, in ``DIR/capture/NNNN``."""
    where = lab.dir / "capture" / f"{seq:04d}"
    where.mkdir(parents=True, exist_ok=True)
    (where / "at").write_text(f"{int(time.time())}\n")
    for name, cmd in CAPTURES.items():
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        (where / name).write_text(done.stdout)
    return where


def submit(lab: Lab, env: dict[str, str], job: Submit, ids: list[str]) -> str:
    cmd = ["runuser", "-u", job.user, "--", "sbatch", "--parsable", "-t", str(job.limit_min), "-J",
           f"t{job.trace_id}", "-o", f"{lab.dir}/out/%A_%a.out" if job.array else f"{lab.dir}/out/%j.out"]
    if job.partition == "shared":
        cmd += ["-p", "shared", "-n", str(job.tasks)]
    else:
        cmd += ["-N", str(job.nodes), "--exclusive"] + (["-p", job.partition] if job.partition else [])
    if job.after is not None and ids[job.after]:
        cmd += [f"--dependency=afterany:{ids[job.after]}"]
    if job.array:
        cmd += [f"--array={job.array}"]
    cmd += [*job.extra, "--wrap", f"sleep {job.sleep}"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=lab.dir / "out")
    if done.returncode != 0:
        print(f"slurmlab: sbatch failed: {done.stderr.strip()}", file=sys.stderr)
        return ""
    return done.stdout.strip().split(";")[0]


def reserve(env: dict[str, str], start_in: float, minutes: int, nodes: str) -> None:
    """A maintenance reservation of ``nodes`` ``start_in`` seconds from now."""
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() + start_in))
    sh("scontrol", "create", "reservation", "ReservationName=maint", f"StartTime={start}", f"Duration={minutes}",
       f"Nodes={nodes}", "Users=root", "Flags=MAINT,IGNORE_JOBS", env=env)


def replay(lab: Lab, env: dict[str, str], jobs: list[Submit], every: float, tail: float,
           maintenance: tuple[float, int, str] | None = None) -> None:
    """Submit each job at its time, capture every ``every`` seconds, until all are done (or
    ``tail`` seconds after the last submit at most). ``maintenance``: (seconds from the start,
    minutes, nodes) of a reservation made at the start."""
    began = time.time()
    seq, next_capture = 0, began
    if maintenance is not None:
        reserve(env, *maintenance)
    ids = [""] * len(jobs)
    patience: list[tuple[float, str]] = []  # (when, slurm id) of jobs to cancel then if still pending
    cancelled = open(lab.dir / "cancelled.tsv", "w")
    cancelled.write("slurm_id\tat\tstate\n")
    order = sorted(range(len(jobs)), key=lambda k: jobs[k].at)
    pending = [jobs[k] for k in order]
    index = {id(jobs[k]): k for k in order}
    log = open(lab.dir / "submitted.tsv", "w")
    log.write("slurm_id\ttrace_id\tsubmitted\tuser\tnodes\tlimit_min\tsleep\tpartition\n")
    deadline = began + (pending[-1].at if pending else 0) + tail
    while True:
        now = time.time()
        while pending and began + pending[0].at <= now:
            job = pending.pop(0)
            jid = submit(lab, env, job, ids)
            ids[index[id(job)]] = jid
            log.write(f"{jid}\t{job.trace_id}\t{int(time.time())}\t{job.user}\t{job.nodes}\t{job.limit_min}\t"
                      f"{job.sleep}\t{job.partition}\n")
            log.flush()
            if jid and job.cancel_after is not None:
                patience.append((time.time() + job.cancel_after, jid))
        for due, jid in [p for p in patience if p[0] <= now]:
            patience.remove((due, jid))
            state = sh("squeue", "-h", "-j", jid, "-o", "%T", check=False, env=env).stdout.strip()
            if state == "PENDING":
                sh("scancel", jid, check=False, env=env)
            cancelled.write(f"{jid}\t{int(time.time())}\t{state or 'gone'}\n")
            cancelled.flush()
        if now >= next_capture:
            capture(lab, env, seq)
            seq += 1
            next_capture += every
        if not pending:
            asked = sh("squeue", "-h", "-o", "%i", check=False, env=env)
            # (a squeue that failed, slurmctld busy for a moment, says nothing of what is left)
            if (asked.returncode == 0 and not asked.stdout.split()) or now > deadline:
                break
        time.sleep(0.5)
    capture(lab, env, seq)
    log.close()
    cancelled.close()


def collect(lab: Lab, env: dict[str, str]) -> None:
    if not lab.accounting:
        return
    fields = "JobID,JobIDRaw,User,Group,Account,Partition,QOS,Submit,Eligible,Start,End,Timelimit,NNodes,NCPUS,State"
    for _ in range(20):  # slurmdbd takes the last records a moment after the jobs end
        done = sh("sacct", "--parsable2", "--allusers", "-X", "-S", "2000-01-01", "-o", fields, check=False, env=env)
        if done.returncode == 0 and "PENDING" not in done.stdout and "RUNNING" not in done.stdout:
            break
        time.sleep(3)
    (lab.dir / "sacct.txt").write_text(done.stdout)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python lab/slurmlab.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=["run", "start", "stop"])
    p.add_argument("trace", nargs="?")
    p.add_argument("--dir", required=True, type=Path)
    p.add_argument("--nodes", type=int, default=16)
    p.add_argument("--cores", type=int, default=4)
    p.add_argument("--jobs", type=int, default=300)
    p.add_argument("--skip", type=int, default=0, help="trace jobs to pass over first")
    p.add_argument("--scale", type=float, default=60.0, help="time compression: real seconds per lab second")
    p.add_argument("--procs", type=int, default=100, help="the trace machine's processors (scaled to --nodes)")
    p.add_argument("--every", type=float, default=30.0, help="seconds between captures")
    p.add_argument("--tail", type=float, default=3600.0, help="seconds after the last submit to wait at most")
    p.add_argument("--accounting", action="store_true", help="MariaDB and slurmdbd, for sacct")
    p.add_argument("--install", action="store_true", help="apt-get what is missing")
    p.add_argument("--priority", choices=["basic", "multifactor", "fairshare"], default="basic",
                   help="fairshare: multifactor with fair share (needs --accounting) and age weights")
    p.add_argument("--partitions", choices=["exclusive", "mixed", "overlap"], default="exclusive",
                   help="exclusive: one partition; mixed: an exclusive and a core-shared one; overlap: a "
                        "higher PriorityTier partition on half of the nodes of the exclusive one")
    p.add_argument("--ports", type=int, default=0, help="added to every port (a second lab beside a first)")
    p.add_argument("--debug", action="store_true", help="log every backfill pass in DIR/log/slurmctld.log")
    p.add_argument("--cancel", type=float, default=0.0,
                   help="share of jobs cancelled if still pending 1-10 minutes after their submit")
    p.add_argument("--user-limit", type=int, default=0,
                   help="the normal QOS's MaxJobsPerUser: jobs beyond it wait as QOSMaxJobsPerUserLimit "
                        "(needs --accounting)")
    p.add_argument("--accounts", type=int, default=1,
                   help="Slurm accounts (projects) the Unix users are spread over in turn (needs --accounting)")
    p.add_argument("--account-limit", type=int, default=0,
                   help="the normal QOS's MaxJobsPerAccount: an account's jobs beyond it wait as "
                        "MaxJobsPerAccount (needs --accounting)")
    p.add_argument("--users", type=int, default=len(USERS),
                   help="Unix users the trace's users are mapped to, in turn by first submit (as many as the "
                        "window has: one each)")
    p.add_argument("--user-cpus", type=int, default=0,
                   help="the normal QOS's MaxTRESPerUser=cpu=N: jobs beyond it wait as QOSMaxCpuPerUserLimit, "
                        "and no job asks more (needs --accounting)")
    p.add_argument("--qos-cpus", type=int, default=0,
                   help="the normal QOS's GrpTRES=cpu=N: the cores all its jobs hold at once; jobs beyond it wait "
                        "as QOSGrpCpuLimit, and no job asks more (needs --accounting)")
    p.add_argument("--qos-jobs", type=int, default=0,
                   help="the normal QOS's GrpJobs=N: the jobs all its users run at once; beyond it jobs wait as "
                        "QOSGrpJobsLimit (needs --accounting)")
    p.add_argument("--gpus", type=int, default=0, help="GPUs per node (gres/gpu, stood in for by device files)")
    p.add_argument("--gpu-nodes", type=int, default=0, help="with --gpus: only N nodes have them, the first (of "
                   "the shared partition with --partitions mixed); 0: all")
    p.add_argument("--gpu-weight", type=int, default=1, help="with --gpus: the Weight of the nodes with GPUs")
    p.add_argument("--gpu-types", default="", metavar="A,B", help="with --gpus: the GPU nodes' types in turn "
                   "(--gpu-types a100,v100: Gres=gpu:a100:N, gpu:v100:N, ...), as sites mix GPU models")
    p.add_argument("--gpu-jobs", type=float, default=0.0, metavar="SHARE",
                   help="with --gpus and --partitions mixed: this share of the shared partition's jobs asks "
                        "--gres=gpu:1")
    p.add_argument("--shapes", action="store_true", help="with --partitions mixed: shared jobs asked as users write "
                   "them (--ntasks-per-node, -c 2, --mincpus, --gres=gpu:1 with --gpus, --mem-per-cpu=300 with --memory)")
    p.add_argument("--memory", action="store_true",
                   help="memory a consumable (CR_Core_Memory, DefMemPerCPU=100; each node has 1,000 MB)")
    p.add_argument("--halflife", type=int, default=10, metavar="MINUTES",
                   help="with --priority fairshare: how fast usage decays (PriorityDecayHalfLife, lab minutes)")
    p.add_argument("--bf-interval", type=int, default=5, metavar="SECONDS",
                   help="seconds between backfill passes (bf_interval; Slurm's default is 30, the labs' 5)")
    p.add_argument("--timeouts", action="store_true",
                   help="trace jobs that ran into their limit (98 %% of it or more) do so again: Slurm kills them "
                        "at their limit (state TIMEOUT), as at a real site; without it every job ends 5 s early")
    p.add_argument("--bf", default="", metavar="PARAMS",
                   help="more SchedulerParameters, e.g. bf_max_job_user=4,bf_min_age_reserve=120")
    args = p.parse_args(argv)
    if not re.fullmatch(r"(bf_[a-z_]+=\d+)?(,bf_[a-z_]+=\d+)*", args.bf):
        raise SystemExit(f"slurmlab: --bf {args.bf!r}: not a comma list of bf_NAME=NUMBER")
    if args.bf_interval < 1:
        raise SystemExit(f"slurmlab: --bf-interval {args.bf_interval}: at least one second")
    if args.halflife < 1:
        raise SystemExit(f"slurmlab: --halflife {args.halflife}: at least one minute")
    if not 0 <= args.gpu_jobs <= 1:
        raise SystemExit(f"slurmlab: --gpu-jobs {args.gpu_jobs}: a share from 0 to 1")
    if args.gpu_jobs and not (args.gpus and args.partitions == "mixed"):
        raise SystemExit("slurmlab: --gpu-jobs needs --gpus and --partitions mixed (its jobs are the shared partition's)")
    if args.gpu_types and not (args.gpus and re.fullmatch(r"[a-z0-9_]+(,[a-z0-9_]+)*", args.gpu_types)):
        raise SystemExit(f"slurmlab: --gpu-types {args.gpu_types!r}: a comma list of GPU models (a100,v100), "
                         "with --gpus")
    if args.action == "stop":
        print("stopped:", ", ".join(stop(args.dir)) or "nothing")
        return
    if os.geteuid() != 0:
        raise SystemExit("slurmlab: needs root (it starts Slurm's daemons)")
    if args.priority == "fairshare" and not args.accounting:
        raise SystemExit("slurmlab: --priority fairshare needs --accounting (fair share is slurmdbd's usage)")
    if (args.user_limit or args.user_cpus or args.account_limit or args.accounts > 1 or args.qos_cpus
            or args.qos_jobs) and not args.accounting:
        raise SystemExit("slurmlab: --user-limit, --user-cpus, --accounts, --account-limit, --qos-cpus and --qos-jobs "
                         "need --accounting "
                         "(QOS limits are slurmdbd's)")
    if args.accounts < 1:
        raise SystemExit(f"slurmlab: --accounts {args.accounts}: at least one")
    if not 2 <= args.users <= MAX_USERS:
        raise SystemExit(f"slurmlab: --users {args.users}: from 2 (the chain and the array have their own) "
                         f"to {MAX_USERS}")
    USERS[:] = lab_users(args.users)
    if args.install:
        install(args.accounting)
    lab = Lab(args.dir.resolve(), args.nodes, args.cores, args.accounting, args.priority, args.partitions,
              ports=args.ports, debug=args.debug, user_limit=args.user_limit, user_cpus=args.user_cpus,
              accounts=args.accounts, account_limit=args.account_limit, qos_cpus=args.qos_cpus, qos_jobs=args.qos_jobs,
              bf_extra=args.bf, gpus=args.gpus, memory=args.memory, gpu_nodes=args.gpu_nodes,
              gpu_weight=args.gpu_weight, shapes=args.shapes, halflife=args.halflife,
              gpu_types=tuple(t for t in args.gpu_types.split(",") if t), bf_interval=args.bf_interval)
    try:
        env = start(lab)
        if args.action == "start":
            print(f"lab up: export SLURM_CONF={lab.dir}/etc/slurm.conf; stop with: python lab/slurmlab.py stop "
                  f"--dir {lab.dir}")
            return
        if not args.trace:
            raise SystemExit("slurmlab: run needs a TRACE")
        jobs = workload(args.trace, lab, args.jobs, args.skip, args.scale, args.procs, args.cancel, args.timeouts)
        maintenance = None
        if args.partitions == "mixed":
            jobs = mixed(jobs, lab)
            if lab.shapes:
                jobs = shaped(jobs, lab)
            if args.gpu_jobs and lab.gpus:
                jobs = gpu_bound(jobs, args.gpu_jobs)
            span = max((j.at for j in jobs), default=0)
            maintenance = (span * 0.6, 5, hostlist(lab.nodes // 2 + 1, lab.nodes))
        (lab.dir / "workload.json").write_text(json.dumps([j.__dict__ for j in jobs]))
        replay(lab, env, jobs, args.every, args.tail, maintenance)
        collect(lab, env)
    finally:
        if args.action == "run":
            stop(lab.dir)


if __name__ == "__main__":
    main()
