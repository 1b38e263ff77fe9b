"""Slurm hostlists: ``jrc[0001-0004,0007],login1`` expanded to names and names compressed back.

Text only; what a name means (which node of the machine) is the engine's (``engine.node``).
"""

from __future__ import annotations

import re

from .values import MAX_NODES

_HOST = re.compile(r"([^\[\],]*)\[([^\]]+)\]([^\[\],]*)")


_NUMBERED = re.compile(r"(.*?)(\d+)(\D+)")


_SPLIT_CACHE: dict[str, tuple[tuple[str, int, str], int] | None] = {}  # name -> (stem, width, suffix), number
_SPLIT_CACHE_MAX = 1 << 20  # names of the largest machines; beyond, parsed each time


def _split_name(name: str) -> tuple[tuple[str, int, str], int] | None:
    """``jrc0002`` -> ``(("jrc", 4, ""), 2)``; None for a name without digits."""
    stem = name.rstrip("0123456789")  # the common case, digits last: no regular expression
    if len(stem) < len(name):
        digits, suffix = name[len(stem):], ""
    else:
        m = _NUMBERED.fullmatch(name)
        if m is None:
            return None
        stem, digits, suffix = m.groups()
    return (stem, len(digits), suffix), int(digits)


def compress_hostlist(names: list[str]) -> str:
    """A Slurm hostlist for ``names``, runs of consecutive numbers joined, order kept by prefix.
    O(n log n) for n names; names are split once per process (``jufo show`` compresses the same
    nodes for many jobs), and one gap-free run is found without a walk.

    >>> compress_hostlist(["jrc0002", "jrc0003", "jrc0004", "jrc0007", "login1"])
    'jrc[0002-0004,0007],login1'
    """
    groups: dict[tuple[str, int, str], list[int]] = {}
    plain: list[str] = []
    cache = _SPLIT_CACHE
    for name in names:
        split = cache.get(name, False)
        if split is False:
            split = _split_name(name)
            if len(cache) < _SPLIT_CACHE_MAX:
                cache[name] = split
        if split is None:
            plain.append(name)
            continue
        key, number = split
        group = groups.get(key)
        if group is None:
            groups[key] = [number]
        else:
            group.append(number)
    parts = []
    for (prefix, width, suffix), numbers in groups.items():
        numbers = sorted(set(numbers))
        if numbers[-1] - numbers[0] == len(numbers) - 1:  # one run, the usual allocation
            runs = [[numbers[0], numbers[-1]]]
        else:
            runs = []
            for n in numbers:
                if runs and n == runs[-1][1] + 1:
                    runs[-1][1] = n
                else:
                    runs.append([n, n])
        text = ",".join(f"{lo:0{width}d}" if lo == hi else f"{lo:0{width}d}-{hi:0{width}d}" for lo, hi in runs)
        parts.append(f"{prefix}{text}{suffix}" if len(numbers) == 1 else f"{prefix}[{text}]{suffix}")
    return ",".join(parts + plain)


def expand_hostlist(text: str, limit: int = MAX_NODES) -> list[str]:
    """Names of a Slurm hostlist; ValueError if malformed or naming more than ``limit`` hosts
    (a list cannot name more nodes than the machine has: ``n[0-30000000]`` is refused unexpanded).

    Names may also be separated by spaces, as LLview 2 writes expanded node lists.

    >>> expand_hostlist("jrc[0001-0002,0007],login1")
    ['jrc0001', 'jrc0002', 'jrc0007', 'login1']
    >>> expand_hostlist("jrc0001 jrc0002")
    ['jrc0001', 'jrc0002']
    """
    names: list[str] = []
    depth, part = 0, ""
    parts: list[str] = []
    for ch in text.strip():
        if (ch == "," or ch.isspace()) and depth == 0:
            parts.append(part)
            part = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        part += ch
    parts.append(part)
    for part in (p.strip() for p in parts):
        if not part:
            continue
        m = _HOST.fullmatch(part)
        if m is None:
            if "[" in part or "]" in part or "(" in part:
                raise ValueError(f"cannot read {part!r} as a host name or hostlist")
            names.append(part)
            continue
        prefix, ranges, suffix = m.groups()
        for item in ranges.split(","):
            lo, _, hi = item.strip().partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()):
                raise ValueError(f"cannot read {item!r} in {part!r}")
            width = len(lo)
            if len(lo) > 12 or len(hi) > 12 or len(names) + int(hi or lo) - int(lo) + 1 > limit:
                raise ValueError(f"{part!r} names more than {limit:,} hosts, more than there are nodes")
            for n in range(int(lo), int(hi or lo) + 1):
                names.append(f"{prefix}{n:0{width}d}{suffix}")
    return names
