"""A Slurm 22.05 capture as later Slurm releases print it, for the tests and for scoring a lab
record as a site on a newer Slurm would give it.

The lab's Slurm is Debian's 22.05.8; sites run 23.02 to 26.05. What ``jufo slurm snapshot``
reads changed in two places, as Slurm's own printing code shows (SchedMD/slurm,
``src/api/job_info.c``, ``src/api/partition_info.c``, from 24.11 ``src/scontrol/info_job.c``):

* 23.02 (commit dfe8b06bc0, "Split TRES line into ReqTRES and AllocTRES"): a job's
  ``TRES=`` (what it holds, else what it asks) became ``ReqTRES=`` and ``AllocTRES=``
  (``(null)`` while it holds nothing).
* 24.05: partitions print ``ExclusiveTopo=NO|YES`` beside ``ExclusiveUser=``.
* 26.05 (bdc563e057, cf78faa4b3): a job prints ``OverSubscribe=NO|YES|OK Exclusive=NO|NODE|USER|MCS|TOPO``
  where 22.05 printed one ``OverSubscribe=`` (``NO`` meaning whole nodes); a partition prints
  ``Exclusive=NO|NODE|USER|TOPO`` (``ExclusiveUser=`` is gone) and an exclusive one
  ``OverSubscribe=NO`` where 22.05 printed ``OverSubscribe=EXCLUSIVE``.

Rendering keeps every other field as Slurm 22.05 printed it. A running job's ``ReqTRES`` is
taken to be what it holds (22.05 printed only that). ``python lab/versions.py SRC DEST
--slurm 26.05`` renders a capture folder, or a record's folder of captures, into ``DEST``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

from jufo.io.scontrol import parse_records

VERSIONS = ("22.05", "23.02", "24.05", "26.05")
_TOKEN = re.compile(r"(?<!\S)(TRES|OverSubscribe|ExclusiveUser)=(\S*)")
_STATE = re.compile(r"(?<!\S)JobState=(\S+)")
_PARTITION = re.compile(r"(?<!\S)Partition=([^\s,]+)")


def _at_least(version: str, than: str) -> bool:
    return tuple(map(int, version.split("."))) >= tuple(map(int, than.split(".")))


def partition_sharing(partition_text: str) -> dict[str, str]:
    """Partition → its ``OverSubscribe`` word as Slurm 22.05 printed it (``EXCLUSIVE``, ``NO``,
    ``YES``, ``FORCE``).

    >>> partition_sharing("PartitionName=a OverSubscribe=EXCLUSIVE\\nPartitionName=b OverSubscribe=FORCE:4\\n")
    {'a': 'EXCLUSIVE', 'b': 'FORCE'}
    """
    return {part["PartitionName"]: part.get("OverSubscribe", "NO").split(":")[0].upper()
            for part in parse_records(partition_text, "partition.txt", "PartitionName")}


def render_jobs(text: str, version: str, sharing: dict[str, str]) -> str:
    """``scontrol show job`` lines of Slurm 22.05 as ``version`` prints them (``sharing``: each
    partition's ``OverSubscribe`` word, ``partition_sharing``).

    >>> line = "JobId=1 JobState=PENDING Partition=p TRES=cpu=2,node=1 OverSubscribe=OK Contiguous=0"
    >>> render_jobs(line, "23.02", {"p": "NO"})
    'JobId=1 JobState=PENDING Partition=p ReqTRES=cpu=2,node=1 AllocTRES=(null) OverSubscribe=OK Contiguous=0'
    >>> render_jobs(line, "26.05", {"p": "NO"}).split()[3:]
    ['ReqTRES=cpu=2,node=1', 'AllocTRES=(null)', 'OverSubscribe=NO', 'Exclusive=NO', 'Contiguous=0']
    >>> render_jobs(line.replace("=OK", "=NO").replace("PENDING", "RUNNING"), "26.05", {"p": "NO"}).split()[3:7]
    ['ReqTRES=cpu=2,node=1', 'AllocTRES=cpu=2,node=1', 'OverSubscribe=NO', 'Exclusive=NODE']
    """
    if not _at_least(version, "23.02"):
        return text
    out = []
    for line in text.splitlines(keepends=True):
        state = _STATE.search(line)
        holds = state is not None and state.group(1) != "PENDING"
        part = _PARTITION.search(line)
        shared = sharing.get(part.group(1), "NO") if part else "NO"

        def token(m: re.Match) -> str:
            key, value = m.group(1), m.group(2)
            if key == "TRES":
                return f"ReqTRES={value} AllocTRES={value if holds else '(null)'}"
            if key == "OverSubscribe" and _at_least(version, "26.05"):
                # 22.05's job_share_string: NO whole nodes, YES --oversubscribe, USER/MCS/TOPO, else OK;
                # 26.05: get_job_oversubscribe_value and get_job_exclusive_display_value
                exclusive = {"NO": "NODE", "USER": "USER", "MCS": "MCS", "TOPO": "TOPO"}.get(value, "NO")
                over = "YES" if value == "YES" else "OK" if value == "OK" and shared in ("YES", "FORCE") else "NO"
                return f"OverSubscribe={over} Exclusive={exclusive}"
            return m.group(0)

        out.append(_TOKEN.sub(token, line))
    return "".join(out)


def render_partitions(text: str, version: str) -> str:
    """``scontrol show partition`` lines of Slurm 22.05 as ``version`` prints them.

    >>> line = "PartitionName=a ExclusiveUser=NO GraceTime=0 OverSubscribe=EXCLUSIVE OverTimeLimit=NONE"
    >>> render_partitions(line, "24.05")
    'PartitionName=a ExclusiveUser=NO ExclusiveTopo=NO GraceTime=0 OverSubscribe=EXCLUSIVE OverTimeLimit=NONE'
    >>> render_partitions(line, "26.05")
    'PartitionName=a Exclusive=NODE GraceTime=0 OverSubscribe=NO OverTimeLimit=NONE'
    """
    if not _at_least(version, "24.05"):
        return text
    out = []
    for line in text.splitlines(keepends=True):
        over = re.search(r"(?<!\S)OverSubscribe=([A-Z]+)", line)
        whole = over is not None and over.group(1) == "EXCLUSIVE"

        def token(m: re.Match) -> str:
            key, value = m.group(1), m.group(2)
            if key == "ExclusiveUser":
                if not _at_least(version, "26.05"):
                    return f"{m.group(0)} ExclusiveTopo=NO"
                return f"Exclusive={'NODE' if whole else 'USER' if value == 'YES' else 'NO'}"
            if key == "OverSubscribe" and value == "EXCLUSIVE" and _at_least(version, "26.05"):
                return "OverSubscribe=NO"
            return m.group(0)

        out.append(_TOKEN.sub(token, line))
    return "".join(out)


def render_capture(src: Path, dest: Path, version: str) -> None:
    """One capture folder (``job.txt``, ``partition.txt``, ...) as ``version`` prints it;
    the other files are copied as they are."""
    dest.mkdir(parents=True, exist_ok=True)
    partitions = (src / "partition.txt").read_text() if (src / "partition.txt").exists() else ""
    for path in sorted(src.iterdir()):
        if path.is_dir():
            render_capture(path, dest / path.name, version)
        elif path.name == "job.txt":
            (dest / path.name).write_text(render_jobs(path.read_text(), version, partition_sharing(partitions)))
        elif path.name == "partition.txt":
            (dest / path.name).write_text(render_partitions(partitions, version))
        else:
            shutil.copy2(path, dest / path.name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", type=Path, help="a capture folder, or a lab record's folder (its captures below it)")
    ap.add_argument("dest", type=Path)
    ap.add_argument("--slurm", choices=VERSIONS, default="26.05", help="the release to print as (default 26.05)")
    args = ap.parse_args(argv)
    if not args.src.is_dir():
        print(f"versions: {args.src}: not a folder", file=sys.stderr)
        return 2
    render_capture(args.src, args.dest, args.slurm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
