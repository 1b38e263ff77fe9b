"""Integer sets as Python ``int`` bit masks, and the nested-range text form of node/core sets.

Bit ``i`` of a mask stands for element ``i`` (0-based). Python's big integers make union,
difference and counting of 100,000-element sets a handful of C-level word operations, which
is why the simulation stores nodes and cores this way. The text form used in LML is 1-based:
``(1-2(4-5))`` is nodes 1..2 with cores 4..5 on each; ``(3(1-2,7-8))`` lists several core ranges.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

Range = tuple[int, int]  # inclusive, 0-based


def mask_of(ranges: Iterable[Range]) -> int:
    """Bit mask with every element of the inclusive ``ranges`` set.  O(total size / 64).

    >>> bin(mask_of([(0, 1), (4, 4)]))
    '0b10011'
    """
    mask = 0
    for lo, hi in ranges:
        mask |= ((1 << (hi - lo + 1)) - 1) << lo
    return mask


def full_mask(n: int) -> int:
    """Mask of the elements ``0..n-1``.  O(n / 64).

    >>> full_mask(5)
    31
    """
    return (1 << n) - 1


def ranges_of(mask: int) -> list[Range]:
    """Maximal inclusive runs of set bits, lowest first.  O(runs * bits / 64).

    >>> ranges_of(0b1110011)
    [(0, 1), (4, 6)]
    >>> ranges_of(0)
    []
    """
    out: list[Range] = []
    offset = 0
    while mask:
        low = (mask & -mask).bit_length() - 1
        mask >>= low
        offset += low
        run = (mask ^ (mask + 1)).bit_length() - 1  # number of trailing ones
        out.append((offset, offset + run - 1))
        mask >>= run
        offset += run
    return out


def bits_of(mask: int) -> Iterator[int]:
    """Indices of the set bits, lowest first.  O(bits set * bits / 64).

    >>> list(bits_of(0b10110))
    [1, 2, 4]
    """
    for lo, hi in ranges_of(mask):
        yield from range(lo, hi + 1)


def first_run(mask: int, k: int) -> int | None:
    """The lowest index where ``k`` consecutive bits of ``mask`` are set, or None.

    Doubling: after each step bit i says "bits i..i+h-1 are all set", h growing to k, so
    O(log k) big-int operations.

    >>> first_run(0b1110110, 3), first_run(0b1110110, 2), first_run(0b1110110, 4)
    (4, 1, None)
    """
    if k <= 0:
        return 0
    run, have = mask, 1
    while have < k and run:
        step = min(have, k - have)
        run &= run >> step
        have += step
    return (run & -run).bit_length() - 1 if run else None


def lightest(mask: int, k: int, tiers: list[int]) -> int | None:
    """The ``k`` lowest set bits of ``mask`` taken from the first of ``tiers`` (masks) first,
    then the next, ...: Slurm's select plugin fills the lightest nodes first. ``lowest`` where
    ``tiers`` is empty. None if fewer are set.  O(tiers) ``lowest`` calls.

    >>> bin(lightest(0b1111, 3, [0b1100, 0b0011])), bin(lightest(0b1111, 3, []))
    ('0b1101', '0b111')
    >>> lightest(0b0101, 3, [0b1100, 0b0011]) is None
    True
    """
    if not tiers:
        return lowest(mask, k)
    out = 0
    for tier in tiers:
        some = mask & tier
        have = some.bit_count()
        if have >= k:
            return out | (lowest(some, k) or 0)
        out, k = out | some, k - have
    return None


def lowest(mask: int, k: int) -> int | None:
    """The ``k`` lowest set bits of ``mask`` as a mask, or None if fewer are set.

    From the lowest set bit on, the prefix holding ``k`` set bits is found by doubling its
    length, then halving: every step works on that prefix, not on the whole mask. So a pick
    costs a few whole-mask operations (finding the lowest bit, the shifts) plus O(log(answer) *
    answer / 64): on 160,000 nodes 25 µs where a binary search over all bits took 50-340 µs.

    >>> bin(lowest(0b1011010, 3))
    '0b11010'
    >>> lowest(0b101, 3) is None
    True
    >>> lowest(0b101, 0), bin(lowest(0b1100000, 1)), lowest(1 << 70 | 0b110 << 60, 2) == 0b110 << 60
    (0, '0b100000', True)
    """
    if k <= 0:
        return 0
    if not mask:
        return None
    first = (mask & -mask).bit_length() - 1
    rest = mask >> first  # its bit 0 is set
    size, lo, hi = rest.bit_length(), k, k  # the prefix length sought is in [lo, hi]
    while hi < size and (rest & ((1 << hi) - 1)).bit_count() < k:
        lo, hi = hi + 1, 2 * hi
    if hi >= size:
        if rest.bit_count() < k:
            return None
        hi = size
    while lo < hi:
        mid = (lo + hi) // 2
        if (rest & ((1 << mid) - 1)).bit_count() >= k:
            hi = mid
        else:
            lo = mid + 1
    return (rest & ((1 << lo) - 1)) << first


def format_ranges(ranges: Iterable[Range]) -> str:
    """1-based text of inclusive 0-based ranges: ``a-b`` or ``a``, comma separated.

    >>> format_ranges([(0, 1), (6, 6)])
    '1-2,7'
    """
    return ",".join(f"{lo + 1}" if lo == hi else f"{lo + 1}-{hi + 1}" for lo, hi in ranges)


_NUMBER_RANGE = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


def parse_ranges(text: str) -> list[Range]:
    """Parse ``1-2,7`` (1-based, inclusive) into 0-based ranges; ValueError if malformed.

    >>> parse_ranges("1-2, 7")
    [(0, 1), (6, 6)]
    """
    out: list[Range] = []
    for part in text.split(","):
        m = _NUMBER_RANGE.fullmatch(part)
        if not m:
            raise ValueError(f"bad range {part.strip()!r}")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if lo < 1 or hi < lo:
            raise ValueError(f"bad range {part.strip()!r}")
        out.append((lo - 1, hi - 1))
    return out


NestedGroup = tuple[list[Range], list[Range] | None]  # node ranges, core ranges (None: unspecified)

_GROUP = re.compile(r"\(\s*([0-9,\-\s]+?)\s*(?:\(\s*([0-9,\-\s]+?)\s*\))?\s*\)")


def parse_nested(text: str) -> list[NestedGroup]:
    """Parse the nested-range form ``(1-2(4-5))(3(1-2,7-8))(5)`` into groups; ValueError if not.

    >>> parse_nested("(1-2(4-5))(3(1-2,7-8))")
    [([(0, 1)], [(3, 4)]), ([(2, 2)], [(0, 1), (6, 7)])]
    >>> parse_nested("(4)")
    [([(3, 3)], None)]
    """
    groups: list[NestedGroup] = []
    pos = 0
    text = text.strip()
    if not text:
        raise ValueError("empty node list")
    while pos < len(text):
        m = _GROUP.match(text, pos)
        if not m:
            raise ValueError(f"cannot read {text[pos:]!r}")
        cores = parse_ranges(m.group(2)) if m.group(2) is not None else None
        groups.append((parse_ranges(m.group(1)), cores))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return groups


def format_nested(node_masks: Iterable[tuple[int, int]]) -> str:
    """Nested-range text of ``(node index, core mask)`` pairs given in ascending node order.

    Consecutive nodes with the same core mask share one group.

    >>> format_nested([(0, 0b11000), (1, 0b11000), (2, 0b11)])
    '(1-2(4-5))(3(1-2))'
    """
    out: list[str] = []
    start = prev = -2
    current = -1
    for node, mask in node_masks:
        if node == prev + 1 and mask == current:
            prev = node
            continue
        if prev >= 0:
            out.append(_group(start, prev, current))
        start = prev = node
        current = mask
    if prev >= 0:
        out.append(_group(start, prev, current))
    return "".join(out)


def format_whole_nodes(runs: list[Range], cores: str) -> str:
    """``format_nested`` of whole nodes, given as the runs of consecutive nodes (``ranges_of``
    their mask), when every node has the core ranges ``cores``: a group per run, not a step
    per node.  O(runs).

    >>> format_whole_nodes(ranges_of(0b1011), "1-4") == format_nested([(0, 15), (1, 15), (3, 15)])
    True
    >>> format_whole_nodes([(0, 1), (3, 3)], "1-4")
    '(1-2(1-4))(4(1-4))'
    """
    return "".join([f"({format_ranges((run,))}({cores}))" for run in runs])


def _group(lo: int, hi: int, mask: int) -> str:
    return f"({format_ranges([(lo, hi)])}({format_ranges(ranges_of(mask))}))"


class NodeCores:
    """A set of cores on a machine: whole nodes as one mask, partly included nodes as core masks.

    ``full`` has bit n set when every core of node n is in the set; ``part`` maps the other
    nodes that have some cores in the set to their core mask (never 0, never the whole node).
    Whole-node sets (``node_sharing=no``) therefore cost a few big-int operations, whatever
    the machine size. ``shape[n]`` is node n's full core mask; it is passed in, not stored,
    because every set on one machine shares it.

    >>> shape = [0b111, 0b111, 0b11]
    >>> a = NodeCores.from_pairs([(0, 0b111), (1, 0b001)], shape)
    >>> a
    NodeCores(full=0b1, part={1: 0b1})
    >>> b = a.union(NodeCores.from_pairs([(1, 0b110)], shape), shape)
    >>> b.pairs(shape), b.core_count(shape)
    ([(0, 7), (1, 7)], 6)
    >>> b.difference(a, shape).pairs(shape)
    [(1, 6)]
    """

    __slots__ = ("full", "part")

    def __init__(self, full: int = 0, part: dict[int, int] | None = None) -> None:
        self.full = full
        self.part: dict[int, int] = part if part is not None else {}

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[int, int]], shape: list[int]) -> NodeCores:
        """Build from ``(node, core mask)`` pairs; masks for one node are merged.  O(pairs)."""
        out = cls()
        for node, mask in pairs:
            out.add_node(node, mask & shape[node], shape)
        return out

    def __repr__(self) -> str:
        part = ", ".join(f"{n}: {bin(m)}" for n, m in sorted(self.part.items()))
        return f"NodeCores(full={bin(self.full)}, part={{{part}}})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NodeCores) and self.full == other.full and self.part == other.part

    def __bool__(self) -> bool:
        return bool(self.full or self.part)

    def copy(self) -> NodeCores:
        """An independent copy.  O(partial nodes)."""
        return NodeCores(self.full, dict(self.part))

    def mask(self, node: int, shape: list[int]) -> int:
        """Core mask of ``node`` in this set (0 if absent).  O(1) plus one big-int shift."""
        if (self.full >> node) & 1:
            return shape[node]
        return self.part.get(node, 0)

    def add_node(self, node: int, mask: int, shape: list[int]) -> None:
        """Add cores ``mask`` of ``node`` in place.  O(1) plus one big-int operation."""
        if not mask or (self.full >> node) & 1:
            return
        mask |= self.part.get(node, 0)
        if mask == shape[node]:
            self.part.pop(node, None)
            self.full |= 1 << node
        else:
            self.part[node] = mask

    def remove_node(self, node: int, mask: int, shape: list[int]) -> None:
        """Remove cores ``mask`` of ``node`` in place.  O(1) plus one big-int operation."""
        if (self.full >> node) & 1:
            self.full &= ~(1 << node)
            rest = shape[node] & ~mask
        else:
            rest = self.part.get(node, 0) & ~mask
        if rest:
            self.part[node] = rest
        else:
            self.part.pop(node, None)

    def update(self, other: NodeCores, shape: list[int]) -> None:
        """In-place union.  O(partial nodes of both) plus big-int operations."""
        self.full |= other.full
        for node, mask in other.part.items():
            self.add_node(node, mask, shape)
        if self.part and other.full:
            for node in [n for n in self.part if (other.full >> n) & 1]:
                del self.part[node]

    def subtract(self, other: NodeCores, shape: list[int]) -> None:
        """In-place difference.  O(partial nodes of both) plus big-int operations."""
        if other.full:
            if self.part:
                for node in [n for n in self.part if (other.full >> n) & 1]:
                    del self.part[node]
            self.full &= ~other.full
        for node, mask in other.part.items():
            if (self.full >> node) & 1 or node in self.part:
                self.remove_node(node, mask, shape)

    def union(self, other: NodeCores, shape: list[int]) -> NodeCores:
        """New set: self ∪ other.  O(partial nodes of both) plus big-int operations."""
        if not self.part and not other.part:  # whole nodes only: one big-int operation
            return NodeCores(self.full | other.full)
        out = self.copy()
        out.update(other, shape)
        return out

    def difference(self, other: NodeCores, shape: list[int]) -> NodeCores:
        """New set: self − other.  O(partial nodes of both) plus big-int operations."""
        if not other.part:
            if not self.part:
                return NodeCores(self.full & ~other.full)
            if not other.full:
                return self.copy()
        out = self.copy()
        out.subtract(other, shape)
        return out

    def isdisjoint(self, other: NodeCores, shape: list[int]) -> bool:
        """True when no core is in both sets.  O(partial nodes of both) plus big-int operations.

        >>> s = [0b11, 0b11]
        >>> NodeCores(0b01).isdisjoint(NodeCores(0b10), s)
        True
        >>> NodeCores(0, {0: 1}).isdisjoint(NodeCores(0, {0: 3 & ~2}), s)
        False
        """
        if self.full & other.full:
            return False
        for node, mask in self.part.items():
            if other.mask(node, shape) & mask:
                return False
        for node in other.part:
            if (self.full >> node) & 1:
                return False
        return True

    def node_mask(self) -> int:
        """Mask of the nodes that have at least one core in the set.  O(partial nodes)."""
        mask = self.full
        for node in self.part:
            mask |= 1 << node
        return mask

    def node_count(self) -> int:
        """Number of nodes with at least one core in the set.  O(1) big-int popcount."""
        return self.full.bit_count() + len(self.part)

    def core_count(self, shape: list[int], each: int | None = None) -> int:
        """Number of cores in the set; ``each``: the cores of every node, where all have as
        many (then whole nodes are counted at once).  O(nodes in the set), O(partial nodes)
        with ``each``.

        >>> NodeCores(0b110, {0: 0b1}).core_count([0b11, 0b11, 0b11]), NodeCores(0b110, {0: 0b1}).core_count([], 2)
        (5, 5)
        """
        total = sum(m.bit_count() for m in self.part.values())
        if each is not None:
            return total + self.full.bit_count() * each
        return total + sum(shape[n].bit_count() for n in bits_of(self.full))

    def pairs(self, shape: list[int]) -> list[tuple[int, int]]:
        """``(node, core mask)`` for every node in the set, ascending.  O(nodes log nodes)."""
        out = [(n, shape[n]) for n in bits_of(self.full)]
        out.extend(self.part.items())
        out.sort()
        return out
