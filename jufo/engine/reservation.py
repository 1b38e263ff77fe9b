"""Advance reservations: resources blocked for every job during a fixed interval."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..io.dates import parse_date, parse_seconds
from ..io.errors import Report
from ..io.lml import LmlObject
from .node import Machine, parse_nodelist
from .ranges import NodeCores, lowest


@dataclass
class Reservation:
    """A reservation ``id`` holding ``resources`` during ``[start, end)`` (seconds from time zero)."""

    id: str
    start: int
    end: int
    resources: Any  # NodeCores (NodeState) or a core count (AttributeState)
    names: frozenset[str] = frozenset()  # resid, object id and name: what a job's key may say
    users: frozenset[str] = frozenset()
    accounts: frozenset[str] = frozenset()
    queues: frozenset[str] = frozenset()
    maint: bool = False  # Slurm's MAINT flag: a job of a partition it covers whole waits for its end

    def binds(self, job, listed: bool = True) -> bool:
        """Is ``job`` bound to this reservation: it names it (``reservation`` key), or (where
        ``listed``) its owner, account or queue is listed by it? A bound job runs only inside
        it. Slurm binds only the jobs that name it (``reservation_binding=named``): its
        ``Users``, ``Accounts`` and ``PartitionName`` say who may use it and where it is."""
        d = job.data
        if d.get("reservation", "") in self.names:
            return True
        return listed and (job.owner in self.users or d.get("account", "") in self.accounts
                           or job.queue in self.queues)


def read_reservations(objects: list[LmlObject], machine: Machine, epoch: int, report: Report) -> list[Reservation]:
    """Reservations from ``starttime`` and ``endtime`` (or ``wall``: seconds, ``04:00:00``,
    ``1-00:00:00``) and ``nodelist`` (a Slurm hostlist ``jrc[0001-0002]``, plain names, or the
    node-list forms of jobs). Nodes listed without cores are reserved whole.

    Every reservation, ``MAINT`` or not, blocks its nodes for its interval to every job. One
    that cannot be read is left out with a warning naming it: the rest of the forecast stands.
    Reservations that ended before time zero are dropped.
    """
    out: list[Reservation] = []
    for obj in objects:
        d = obj.data
        try:
            start = parse_date(d.get("starttime", ""))[0] - epoch
        except ValueError as err:
            report.warn(obj.label, "starttime", d.get("starttime"), f"{err}; reservation left out")
            continue
        if d.get("endtime"):
            key = "endtime"
            try:
                end = parse_date(d["endtime"])[0] - epoch
            except ValueError as err:
                report.warn(obj.label, key, d[key], f"{err}; reservation left out")
                continue
        else:
            key = "wall"
            try:
                end = start + parse_seconds(d.get("wall", ""))
            except ValueError:
                report.warn(obj.label, "wall", d.get("wall"), "neither endtime nor a usable wall; reservation left out")
                continue
        if end <= start:
            report.warn(obj.label, key, d.get(key), "ends before it starts; reservation left out")
            continue
        raw = d.get("nodelist", "")
        try:
            entries = parse_nodelist(raw, machine)
        except ValueError as err:
            report.warn(obj.label, "nodelist", raw, f"{err}; reservation left out")
            continue
        if end <= 0:
            continue
        resources = NodeCores()
        for node, mask, count in entries:
            shape = machine.shape[node]
            if mask is None:
                mask = shape if count is None else (lowest(shape, count) or shape)
            resources.add_node(node, mask, machine.shape)
        def listed(key: str) -> frozenset[str]:
            return frozenset(x.strip() for x in d.get(key, "").replace(";", ",").split(",")
                             if x.strip() and x.strip() not in ("(null)", "-"))

        names = frozenset(x for x in (d.get("resid"), obj.id, obj.name) if x)
        out.append(Reservation(d.get("resid") or obj.id, start, end, resources, names, listed("userlist"),
                               listed("accounts"), listed("partition") | listed("queue"),
                               "MAINT" in d.get("flags", "").upper().replace(";", ",").split(",")))
    return out


def cores_only(reservations: list[Reservation], machine: Machine) -> list[Any]:
    """The same reservations holding core counts, for AttributeState."""
    return [replace(r, resources=r.resources.core_count(machine.shape)) for r in reservations]
