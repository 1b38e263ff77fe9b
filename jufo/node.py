"""Nodes and the machine they form: core counts, per-queue core limits, lookup by name."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from .errors import Report
from .lml import LmlObject
from .ranges import full_mask

_CLASS = re.compile(r"\(\s*([^,()\s]+)\s*,\s*(\d+)\s*\)")


def parse_classes(text: str) -> dict[str, int]:
    """``(small,4)(medium,8)`` → ``{'small': 4, 'medium': 8}``; ValueError if malformed.

    >>> parse_classes("(small,4)(medium,8)")
    {'small': 4, 'medium': 8}
    """
    text = text.strip()
    out: dict[str, int] = {}
    pos = 0
    while pos < len(text):
        m = _CLASS.match(text, pos)
        if not m:
            raise ValueError(f"cannot read {text[pos:]!r}; expected (queue,cores)(queue,cores)...")
        out[m.group(1)] = int(m.group(2))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


@dataclass(frozen=True)
class Node:
    """One node: position (0-based, document order), names, cores, per-queue core limits."""

    index: int
    id: str
    name: str
    ncores: int
    classes: dict[str, int] | None  # None: every queue may use every core

    def limit(self, queue: str) -> int:
        """Cores of this node that jobs of ``queue`` may use at once."""
        if self.classes is None:
            return self.ncores
        return min(self.classes.get(queue, 0), self.ncores)


class Machine:
    """All nodes of the system; answers which nodes a queue may use for a request."""

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = nodes
        self.shape = [full_mask(n.ncores) for n in nodes]  # full core mask per node
        self.all_nodes = full_mask(len(nodes))
        self.max_cores = max((n.ncores for n in nodes), default=0)
        self.total_cores = sum(n.ncores for n in nodes)
        self.by_name: dict[str, Node] = {}
        for node in nodes:
            self.by_name.setdefault(node.id, node)
        for node in nodes:
            self.by_name.setdefault(node.name, node)
        self.has_classes = any(n.classes is not None for n in nodes)
        # nodes alike in cores and queue limits: a handful of groups even on huge machines
        groups: dict[tuple, list[int]] = {}
        for node in nodes:
            signature = (node.ncores, tuple(sorted(node.classes.items())) if node.classes is not None else None)
            groups.setdefault(signature, []).append(node.index)
        self._groups = [(nodes[members[0]], _mask_of_indices(members)) for members in groups.values()]
        self.eligible = cache(self._eligible)
        self.restricted = cache(self._restricted)

    def _eligible(self, queue: str, cores: int) -> int:
        """Mask of nodes where ``queue`` may place ``cores`` cores of one job.  O(groups)."""
        mask = 0
        for example, members in self._groups:
            if example.limit(queue) >= cores:
                mask |= members
        return mask

    def _restricted(self, queue: str) -> dict[int, int]:
        """Nodes where ``queue`` may use some but not all cores: node index → limit."""
        out: dict[int, int] = {}
        if self.has_classes:
            for node in self.nodes:
                lim = node.limit(queue)
                if 0 < lim < node.ncores:
                    out[node.index] = lim
        return out

    def queue_capacity(self, queue: str) -> int:
        """Cores ``queue`` may use on the whole machine when it is empty."""
        return sum(n.limit(queue) for n in self.nodes)


def _mask_of_indices(indices: list[int]) -> int:
    """Bit mask with the given bits set.  O(n) via one int from bytes."""
    if not indices:
        return 0
    buf = bytearray(indices[-1] // 8 + 1)
    for i in indices:
        buf[i >> 3] |= 1 << (i & 7)
    return int.from_bytes(buf, "little")


def read_nodes(objects: list[LmlObject], report: Report) -> Machine:
    """Build the machine from ``node`` objects in document order; bad values are fatal."""
    nodes: list[Node] = []
    for obj in objects:
        raw = obj.data.get("ncores")
        try:
            ncores = int(float(raw)) if raw is not None else None
            if ncores is not None and (ncores != float(raw) or ncores < 1):
                raise ValueError
        except ValueError:
            report.error(obj.label, "ncores", raw, "must be a positive whole number")
            continue
        if ncores is None:
            report.error(obj.label, "ncores", None, "missing; every node needs its core count")
            continue
        classes = None
        if "avail_classes" in obj.data:
            try:
                classes = parse_classes(obj.data["avail_classes"])
            except ValueError as err:
                report.error(obj.label, "avail_classes", obj.data["avail_classes"], str(err))
        nodes.append(Node(len(nodes), obj.id, obj.name or obj.id, ncores, classes))
    return Machine(nodes)


_NAME_PAIRS = re.compile(r"(\(\s*[^(),\s]+\s*,\s*\d+\s*\))+")
_PAIR = re.compile(r"\(\s*([^(),\s]+)\s*,\s*(\d+)\s*\)")

NodelistEntry = tuple[int, int | None, int | None]  # node index, core mask or None, core count or None


def parse_nodelist(text: str, machine: Machine) -> list[NodelistEntry]:
    """Read a node list in either LML form; ValueError naming the part that is wrong.

    ``(name,n)(name,n)`` — n cores on the node whose object name or id is ``name`` — is taken
    when the text has that shape and every name is a node; otherwise the nested-range form
    ``(1-2(4-5))`` (1-based node positions in document order, then 1-based cores). An entry
    without a core mask leaves the choice of cores to the caller.
    """
    from .ranges import mask_of, parse_nested

    text = text.strip()
    if _NAME_PAIRS.fullmatch(text):
        pairs = _PAIR.findall(text)
        if all(name in machine.by_name for name, _ in pairs):
            return [(machine.by_name[name].index, None, int(n)) for name, n in pairs]
    try:
        groups = parse_nested(text)
    except ValueError:
        if _NAME_PAIRS.fullmatch(text):
            unknown = next(name for name, _ in _PAIR.findall(text) if name not in machine.by_name)
            raise ValueError(f"no node named {unknown!r}") from None
        raise
    out: list[NodelistEntry] = []
    for node_ranges, core_ranges in groups:
        for lo, hi in node_ranges:
            if hi >= len(machine.nodes):
                raise ValueError(f"node position {hi + 1} is beyond the {len(machine.nodes)} nodes")
            for n in range(lo, hi + 1):
                mask = None
                if core_ranges is not None:
                    mask = mask_of(core_ranges)
                    if mask.bit_length() > machine.nodes[n].ncores:
                        raise ValueError(f"core {mask.bit_length()} is beyond node {n + 1}'s {machine.nodes[n].ncores} cores")
                out.append((n, mask, None))
    return out
