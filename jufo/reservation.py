"""Advance reservations: resources blocked for every job during a fixed interval."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .dates import parse_date
from .errors import Report
from .lml import LmlObject
from .node import Machine, parse_nodelist
from .ranges import NodeCores, lowest


@dataclass
class Reservation:
    """A reservation ``id`` holding ``resources`` during ``[start, end)`` (seconds from time zero)."""

    id: str
    start: int
    end: int
    resources: NodeCores


def read_reservations(objects: list[LmlObject], machine: Machine, epoch: int, report: Report) -> list[Reservation]:
    """Reservations with ``starttime``, ``endtime`` and ``nodelist``; bad values are fatal.

    Nodes listed without cores are reserved whole; ``(name,n)`` reserves the lowest n cores.
    Reservations that ended before time zero are dropped.
    """
    out: list[Reservation] = []
    for obj in objects:
        times = []
        for key in ("starttime", "endtime"):
            raw = obj.data.get(key)
            try:
                times.append(parse_date(raw or "")[0] - epoch)
            except ValueError as err:
                report.error(obj.label, key, raw, str(err))
        raw = obj.data.get("nodelist", "")
        try:
            entries = parse_nodelist(raw, machine)
        except ValueError as err:
            report.error(obj.label, "nodelist", raw, str(err))
            continue
        if len(times) != 2:
            continue
        start, end = times
        if end <= start:
            report.error(obj.label, "endtime", obj.data.get("endtime"), "is not after starttime")
            continue
        if end <= 0:
            continue
        resources = NodeCores()
        for node, mask, count in entries:
            shape = machine.shape[node]
            if mask is None:
                mask = shape if count is None else (lowest(shape, count) or shape)
            resources.add_node(node, mask, machine.shape)
        out.append(Reservation(obj.id, start, end, resources))
    return out


def cores_only(reservations: list[Reservation], machine: Machine) -> list[Any]:
    """The same reservations holding core counts, for AttributeState."""
    return [Reservation(r.id, r.start, r.end, r.resources.core_count(machine.shape)) for r in reservations]
