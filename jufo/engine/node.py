"""Nodes and the machine they form: core counts, per-queue core limits, lookup by name."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from functools import cache, cached_property

from ..io.errors import Report
from ..io.hostlist import expand_hostlist
from ..io.lml import LmlObject
from ..io.slurm import node_takes_jobs
from .ranges import bits_of, format_ranges, full_mask
from ..io.values import MAX_CORES_PER_NODE, MAX_COUNT, MAX_MEMORY_MB, whole

_CLASS = re.compile(r"\(\s*([^,()\s]+)\s*,\s*(\d+)\s*\)|\[\s*([^:\[\]\s]+)\s*:\s*(\d+)\s*\]")


def parse_classes(text: str) -> dict[str, int]:
    """Cores per queue on a node: ``(small,4)(medium,8)`` (LoadLeveler style) or
    ``[batch:128][devel:64]`` (LLview's Slurm adapter); ValueError if malformed.

    >>> parse_classes("(small,4)(medium,8)"), parse_classes("[batch:128][devel:64]")
    ({'small': 4, 'medium': 8}, {'batch': 128, 'devel': 64})
    """
    text = text.strip()
    out: dict[str, int] = {}
    pos = 0
    while pos < len(text):
        m = _CLASS.match(text, pos)
        if not m:
            raise ValueError(f"cannot read {text[pos:]!r}; expected (queue,cores)... or [queue:cores]...")
        out[m.group(1) or m.group(3)] = int(m.group(2) or m.group(4))
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
    usable: bool = True  # False: Down, Drained, Maint or Unknown: no new jobs
    gpus: int = 0
    memory: int | None = None  # MB available to jobs (availmem, else physmem); None: not given
    switch: str | None = None  # the leaf switch it hangs on (``switch``), for ``--switches`` requests
    features: frozenset[str] = frozenset()  # ``features`` (Slurm's ActiveFeatures), for constraints
    weight: int = 1  # ``weight`` (Slurm's node Weight): its select plugin takes the lightest nodes first
    # ``gputypes`` (``a100:4``): its GPUs by model, for jobs asking a type (``--gres=gpu:a100:1``)
    gpu_types: tuple[tuple[str, int], ...] = ()

    def limit(self, queue: str) -> int:
        """Cores of this node that jobs of ``queue`` may use at once (0 if the node is unusable)."""
        if not self.usable:
            return 0
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
        self.total_cores = sum(n.ncores for n in nodes if n.usable)
        self.usable_nodes = sum(1 << n.index for n in nodes if n.usable)  # mask of the nodes that take jobs
        self.by_name: dict[str, Node] = {}
        for node in nodes:
            self.by_name.setdefault(node.id, node)
        for node in nodes:
            self.by_name.setdefault(node.name, node)
        self.has_classes = any(n.classes is not None for n in nodes)
        # nodes alike in cores and queue limits: a handful of groups even on huge machines
        groups: dict[tuple, list[int]] = {}
        limits: dict[int, tuple | None] = {}  # sorted limits per classes dict (nodes share them)
        for node in nodes:
            key = id(node.classes)
            if key not in limits:
                limits[key] = None if node.classes is None else tuple(sorted(node.classes.items()))
            signature = (node.ncores, node.usable, node.gpus, node.memory, limits[key], node.features, node.gpu_types)
            groups.setdefault(signature, []).append(node.index)
        self._groups = [(nodes[members[0]], _mask_of_indices(members)) for members in groups.values()]
        self.eligible = cache(self._eligible)
        self.restricted = cache(self._restricted)
        # leaf switches in order of first appearance; a node without one is a switch of its own
        names: dict[str, int] = {}
        members: list[list[int]] = []
        for node in nodes:
            key = node.switch if node.switch is not None else f"\0{node.index}"
            if key not in names:
                names[key] = len(members)
                members.append([])
            members[names[key]].append(node.index)
        self.has_switches = any(n.switch is not None for n in nodes)
        self.switch_masks = [_mask_of_indices(m) for m in members] if self.has_switches else []

    @cached_property
    def weight_tiers(self) -> list[int]:
        """Masks of the nodes of each ``weight``, lightest first; empty where all weigh alike
        (the usual case: nothing to order).  O(nodes) once.

        >>> m = Machine([Node(i, f"n{i}", f"n{i}", 4, None, weight=w) for i, w in enumerate((10, 1, 10, 1))])
        >>> [bin(t) for t in m.weight_tiers], Machine(m.nodes[:1]).weight_tiers
        (['0b1010', '0b101'], [])
        """
        tiers: dict[int, int] = {}
        for node in self.nodes:
            tiers[node.weight] = tiers.get(node.weight, 0) | 1 << node.index
        return [tiers[w] for w in sorted(tiers)] if len(tiers) > 1 else []

    @cached_property
    def weight_rank(self) -> list[int]:
        """Each node's place in ``weight_tiers`` (0: the lightest).  O(nodes) once."""
        rank = [0] * len(self.nodes)
        for k, tier in enumerate(self.weight_tiers):
            for n in bits_of(tier):
                rank[n] = k
        return rank

    @cached_property
    def cores_each(self) -> int | None:
        """The cores of every node when all have as many, else None.  O(nodes) once."""
        sizes = {node.ncores for node in self.nodes}
        return sizes.pop() if len(sizes) == 1 else None

    @cached_property
    def uniform_cores(self) -> str | None:
        """The core ranges of every node when all have as many cores (``jufo_ranges`` is then
        written per run of nodes), else None; made when results are written.  O(1) after
        ``cores_each``."""
        each = self.cores_each
        return format_ranges([(0, each - 1)]) if each else None

    @cached_property
    def labels(self) -> list[str]:
        """``(name,cores)`` of each node as ``jufo_nodelist`` lists a whole node (made when
        results are written, once).  O(nodes)."""
        return [f"({node.name},{node.ncores})" for node in self.nodes]

    def _eligible(self, queue: str, cores: int, gpus: int = 0, memory: int = 0,
                  constraint: tuple[frozenset[str], ...] | None = None, gpu_type: str | None = None) -> int:
        """Mask of nodes where ``queue`` may place ``cores`` cores (and ``gpus`` GPUs, of the
        model ``gpu_type`` where one is asked, ``memory`` MB where the node gives its memory,
        one of the ``constraint``'s sets of features) of one job.  O(groups)."""
        mask = 0
        for example, members in self._groups:
            if example.limit(queue) >= cores and example.gpus >= gpus and (
                    example.memory is None or example.memory >= memory) and (
                    constraint is None or any(alt <= example.features for alt in constraint)) and (
                    gpu_type is None or dict(example.gpu_types).get(gpu_type, 0) >= gpus):
                mask |= members
        return mask

    def for_job(self, job: Any, cores: int | None = None, queue: str | None = None, scope: bool = False) -> int:
        """Mask of nodes that may hold ``cores`` (default: its cores per node) of ``job``: its
        queue (or ``queue``, one it may go to), GPUs, memory and constraint (``eligible``,
        cached), and the nodes it names or excludes (``allowed``). ``scope``: the nodes
        Slurm's backfill hands its will-run test, whose running jobs' ends it looks at: GPUs
        are not asked of them (``job_req_node_filter`` leaves them to the select plugin), and
        of a list of nodes the job is held to only those it excludes count (``unnamed``).
        O(groups) once per ask."""
        mask = self.eligible(job.queue if queue is None else queue, job.cores_per_node if cores is None else cores,
                             0 if scope else job.gpus_per_node, job.memory, job.constraint,
                             None if scope else job.gpu_type)
        allowed = getattr(job, "allowed", None)  # --nodelist, --exclude
        if scope and getattr(job, "unnamed", None) is not None:
            allowed = job.unnamed
        return mask if allowed is None else mask & allowed

    def _restricted(self, queue: str) -> dict[int, int]:
        """Nodes where ``queue`` may use some but not all cores: node index → limit."""
        out: dict[int, int] = {}
        if self.has_classes:
            for node in self.nodes:
                lim = node.limit(queue)
                if 0 < lim < node.ncores:
                    out[node.index] = lim
        return out


_MEMORY = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)b?\s*", re.IGNORECASE)
_MB = {"k": 1 / 1024, "": 1, "m": 1, "g": 1024, "t": 1024 * 1024}


def parse_memory(text: str) -> int:
    """Megabytes of ``16000``, ``16000 mb``, ``16G``, ``512kb``; ValueError otherwise.

    >>> parse_memory("16000 mb"), parse_memory("16G"), parse_memory("2048")
    (16000, 16384, 2048)
    """
    m = _MEMORY.fullmatch(text)
    if m is None or len(m.group(1)) > 30:
        raise ValueError("not an amount of memory (a number of MB, or with a kb/mb/gb/tb unit)")
    mb = int(float(m.group(1)) * _MB[m.group(2).lower()])
    if mb > MAX_MEMORY_MB:
        raise ValueError(f"more than {MAX_MEMORY_MB:,} MB")
    return mb


def _mask_of_indices(indices: list[int]) -> int:
    """Bit mask with the given bits set.  O(n) via one int from bytes."""
    if not indices:
        return 0
    buf = bytearray(indices[-1] // 8 + 1)
    for i in indices:
        buf[i >> 3] |= 1 << (i & 7)
    return int.from_bytes(buf, "little")


NODE_NAME = re.compile(r"[^,\[\]()\s]+")  # what a hostlist and jufo_nodelist can name


def read_nodes(objects: list[LmlObject], report: Report) -> Machine:
    """Build the machine from ``node`` objects in document order; bad values are fatal."""
    nodes: list[Node] = []
    parsed: dict[str, dict[str, int]] = {}  # classes per text: nodes alike share one (read-only) dict
    seen_features: dict[str, frozenset[str]] = {}
    for obj in objects:
        if not NODE_NAME.fullmatch(obj.name or obj.id):
            report.error(obj.label, "name", obj.name or obj.id, "not a node name: node lists are made of , [ ] ( ) "
                         "and spaces, so no name may hold them")
            continue
        raw = obj.data.get("ncores")
        try:
            ncores = whole(raw, 1, MAX_CORES_PER_NODE) if raw is not None else None
        except ValueError as err:
            report.error(obj.label, "ncores", raw, f"must be a positive whole number ({err})")
            continue
        if ncores is None:
            report.error(obj.label, "ncores", None, "missing; every node needs its core count")
            continue
        classes = None
        key = "avail_classes" if "avail_classes" in obj.data else "classes" if obj.data.get("classes") else None
        if key is not None:
            text = obj.data[key]
            classes = parsed.get(text)
            if classes is None:
                try:
                    classes = parsed[text] = parse_classes(text)
                except ValueError as err:
                    report.error(obj.label, key, text, str(err))
        state = obj.data.get("state", "").strip()
        usable = node_takes_jobs(state)
        gpus = _count(obj, "gpus", 0, report, "not a number; taken as no GPUs")
        memory = None
        key = "availmem" if obj.data.get("availmem", "").strip() else "physmem"
        if obj.data.get(key, "").strip():
            try:
                memory = parse_memory(obj.data[key])
            except ValueError as err:
                report.warn(obj.label, key, obj.data[key], f"{err}; memory not checked on this node")
        switch = obj.data.get("switch", "").strip() or None
        weight = _count(obj, "weight", 1, report, "not a whole number; taken as 1")
        text = obj.data.get("features", "")
        features = seen_features.get(text)
        if features is None:
            features = seen_features[text] = features_of(text)
        gpu_types = _gpu_types(obj, report) if obj.data.get("gputypes", "").strip() else ()
        nodes.append(Node(len(nodes), obj.id, obj.name or obj.id, ncores, classes, usable, gpus, memory, switch,
                          features, weight, gpu_types))
    return Machine(nodes)


def _gpu_types(obj: LmlObject, report: Report) -> tuple[tuple[str, int], ...]:
    """A node's ``gputypes``, its GPUs by model (``a100:4``, ``a100:2,v100:2``), sorted; a
    malformed one is left out with a warning (the node's GPUs are then of no model a job asks).

    >>> _gpu_types(LmlObject("n1", "node", None, 0, {"gputypes": "v100:2,a100:2"}), Report(quiet=True))
    (('a100', 2), ('v100', 2))
    """
    text = obj.data["gputypes"]
    found = re.fullmatch(r"\s*[^:,()\s]+:\d{1,9}(?:\s*,\s*[^:,()\s]+:\d{1,9})*\s*", text)  # (Gres's models)
    if not found:
        report.warn(obj.label, "gputypes", text, "not MODEL:COUNT,...; its GPUs are of no model a job asks")
        return ()
    pairs = (part.strip().split(":") for part in text.split(","))
    return tuple(sorted((name, min(int(count), MAX_COUNT)) for name, count in pairs))


def _count(obj: LmlObject, key: str, default: int, report: Report, otherwise: str) -> int:
    """A node's count ``key`` (``gpus``, ``weight``): ``default`` where not given, and where
    it is no whole number, with the warning ``otherwise``."""
    raw = obj.data.get(key, "").strip()
    if not raw:
        return default
    try:
        return whole(raw, 0, MAX_COUNT)
    except ValueError:
        report.warn(obj.label, key, obj.data[key], otherwise)
        return default


def features_of(text: str) -> frozenset[str]:
    """A node's features (``a100,ib``; ``(null)``: none).

    >>> sorted(features_of("icelake,ib")), features_of("(null)")
    (['ib', 'icelake'], frozenset())
    """
    return frozenset(f.strip() for f in text.split(",") if f.strip() and f.strip() != "(null)")


_NAME_PAIRS = re.compile(r"(\(\s*[^(),\s]+\s*,\s*\d+\s*\))+")
_PAIR = re.compile(r"\(\s*([^(),\s]+)\s*,\s*(\d+)\s*\)")


def name_pairs(text: str) -> list[tuple[str, int]]:
    """The ``(name,number)`` pairs of a node list, GPU list or ``jufo_nodelist``.

    >>> name_pairs("(jrc0001,128)(jrc0002, 64)")
    [('jrc0001', 128), ('jrc0002', 64)]
    """
    return [(name, int(n)) for name, n in _PAIR.findall(text)]


_PAIR_NAME = re.compile(r"\(\s*([^(),\s]+)\s*,\s*\d+\s*\)")


def pair_names(text: str) -> list[str]:
    """Only the names of :func:`name_pairs`, in one pass (``jufo show`` reads thousands).

    >>> pair_names("(jrc0001,128)(jrc0002, 64)")
    ['jrc0001', 'jrc0002']
    """
    return _PAIR_NAME.findall(text)

NodelistEntry = tuple[int, int | None, int | None]  # node index, core mask or None, core count or None


def parse_nodelist(text: str, machine: Machine, cores: int | None = None) -> list[NodelistEntry]:
    """Read a node list in any form LML adapters write; ValueError naming the part that is wrong.

    - ``(name,n)(name,n)``: pairs of a node (object name or id) and a number. LLview's Slurm
      adapter writes *cores per node* (``(jrc0001,128)``); PTP's LoadLeveler adapter writes one
      pair *per task* with its core index (``(node01,0)(node01,1)``). The rule: a repeated
      name or a 0 means per task; otherwise, if the numbers add up to the job's ``cores``
      (totalcores, or totaltasks) they are cores per node; if instead the pairs count them,
      per task; else cores per node. So a single ``(node01,4)`` is 4 cores for a 4-core job
      and task 1 on core index 4 for a 1-core job.
    - ``(1-2(4-5))``: nested ranges, 1-based node positions in document order, then cores.
    - ``jrc[0001-0002,0007]``, ``n1,n2``, ``n1 n2``: a Slurm hostlist or plain names: whole nodes.
    An entry without a core mask leaves the choice of cores to the caller.
    """
    from .ranges import mask_of, parse_nested

    text = text.strip()
    if _NAME_PAIRS.fullmatch(text):
        pairs = name_pairs(text)
        if all(name in machine.by_name for name, _ in pairs):
            names = [name for name, _ in pairs]
            numbers = [n for _, n in pairs]
            per_task = len(set(names)) < len(names) or 0 in numbers or (
                cores is not None and sum(numbers) != cores and len(pairs) == cores)
            if per_task:
                out: list[NodelistEntry] = []
                for name, index in pairs:
                    node = machine.by_name[name]
                    if index >= node.ncores:
                        raise ValueError(f"core index {index} is beyond node {name}'s {node.ncores} cores")
                    out.append((node.index, 1 << index, None))
                return out
            return [(machine.by_name[name].index, None, n) for name, n in pairs]
    if not text.startswith("("):
        out = []
        for name in expand_hostlist(text, len(machine.nodes) + 4096):  # room for a clearer "no node named"
            if name not in machine.by_name:
                raise ValueError(f"no node named {name!r}")
            out.append((machine.by_name[name].index, machine.shape[machine.by_name[name].index], None))
        return out
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
                    top = max(hi for _, hi in core_ranges) + 1
                    if top > machine.nodes[n].ncores:
                        raise ValueError(f"core {top} is beyond node {n + 1}'s {machine.nodes[n].ncores} cores")
                    mask = mask_of(core_ranges)
                out.append((n, mask, None))
    return out
