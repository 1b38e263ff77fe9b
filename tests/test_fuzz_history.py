"""Mutation fuzzing of the history's surfaces: ``history import`` (SWF and sacct),
``history show``, ``backtest`` and a damaged history file. Whatever the input: exit 0 or 2
(never 1), under 30 s and 1 GiB, JSON that parses strictly, and a history that a failed run
leaves byte for byte as it was.

Seeded; ``JUFO_FUZZ_HISTORY=N`` runs N cases (default 300). The bases are real-looking: an SWF
window shaped like KTH's (sizes in powers of two, run times within walls) and the sacct of
the mixed Slurm lab (tests/data/slurm/lab-mixed.tar.xz).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import resource
import tarfile
import time

import pytest
from click.testing import CliRunner

from conftest import ROOT
from jufo.cli import main

CASES = int(os.environ.get("JUFO_FUZZ_HISTORY", "300"))
NUMBERS = ["inf", "-inf", "nan", "1e308", "-1", "0", "", "9" * 5000, "9223372036854775808", "18446744073709551616",
           "1e18", "3.5", "abc", "0x10", "-0", "2e9", "99999999", "1" * 40]
SACCT_VALUES = NUMBERS + ["99999999-00:00:00", "UNLIMITED", "Partition_Limit", "INVALID", "None", "Unknown",
                          "2099-01-01T00:00:00", "1969-12-31T23:59:59", "9999-12-31T23:59:59", "0000-00-00T00:00:00",
                          "CANCELLED by 0", "PENDING", "RUNNING", "n[1-99999999]", "1_[2-5%2]", "23.batch", "\udcff",
                          "|", "ÿ", "\x00"]
DAY = 86400


def swf_base(rng: random.Random, jobs: int = 40, first: int = 1) -> list[str]:
    """An SWF window: ``jobs`` jobs over a few days on 100 processors, numbered from ``first``."""
    lines, t = ["; Version: 2.2", "; MaxProcs: 100", "; UnixStartTime: 820454400"], 0
    for n in range(first, first + jobs):
        t += rng.randint(0, 3 * 3600)
        procs = 2 ** rng.randint(0, 6)
        wall = rng.choice([900, 3600, 4 * 3600, 12 * 3600])
        run = rng.randint(10, wall)
        lines.append(f"{n} {t} {rng.randint(0, 5000)} {run} {procs} -1 -1 {procs} {wall} -1 1 "
                     f"{rng.randint(1, 5)} 1 -1 1 -1 -1 -1")
    return lines


def sacct_base() -> list[str]:
    with tarfile.open(ROOT / "tests" / "data" / "slurm" / "lab-mixed.tar.xz") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("sacct.txt"))
        return tar.extractfile(member).read().decode().splitlines()[:60]


def mutate(lines: list[str], rng: random.Random, sep: str | None) -> str:
    """One to four hostile changes: a field's value, a header's value, a line cut, doubled,
    dropped or made blank; sometimes the text cut off mid-byte."""
    lines = list(lines)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(lines))
        kind = rng.random()
        fields = lines[i].split(sep) if sep else lines[i].split()
        if kind < 0.55 and not lines[i].startswith(";") and lines[i].strip():
            j = rng.randrange(len(fields))
            fields[j] = rng.choice(SACCT_VALUES if sep else NUMBERS)
            lines[i] = (sep or " ").join(fields)
        elif kind < 0.65 and lines[i].startswith(";"):
            lines[i] = lines[i].split(":")[0] + ": " + rng.choice(NUMBERS)
        elif kind < 0.75:
            lines.insert(i, lines[i])
        elif kind < 0.85:
            del lines[i]
        elif kind < 0.92:
            lines[i] = lines[i][: rng.randint(0, len(lines[i]))]
        else:
            lines[i] = ""
        if not lines:
            break
    text = "\n".join(lines) + "\n"
    if rng.random() < 0.05:
        text = text[: rng.randint(0, len(text))]
    return text


def digest(path) -> str | None:
    """The history's bytes and its journal's, or None when there is no file."""
    if not path.exists():
        return None
    h = hashlib.sha256(path.read_bytes())
    for extra in ("-wal", "-journal"):
        side = path.with_name(path.name + extra)
        if side.exists() and side.stat().st_size:
            h.update(side.read_bytes())
    return h.hexdigest()


RUNS: list[dict] = []  # every run of this process: for the figures ``python tests/test_fuzz_history.py N`` prints


def checked(args: list[str], history=None, json_out: bool = False):
    """Run jufo; assert the rules every run keeps; return the result."""
    before = digest(history) if history is not None else None
    began = time.perf_counter()
    result = CliRunner().invoke(main, args)
    seconds = time.perf_counter() - began
    changed = result.exit_code != 0 and history is not None and digest(history) != before
    RUNS.append({"command": " ".join(args[:2] if args[0] == "history" else args[:1]), "exit": result.exit_code, "seconds": seconds, "changed": changed,
                 "kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss})
    assert result.exit_code in (0, 2), (args, result.stderr[-600:], repr(result.exception))
    assert seconds < 30, (args, seconds)
    assert RUNS[-1]["kib"] < 1 << 20  # under 1 GiB
    if result.exit_code == 2:
        errors = [line for line in result.stderr.splitlines() if line.startswith("jufo: error: ")]
        assert len(errors) == 1, result.stderr
        assert not changed, ("a failed run changed the history", args)
    elif json_out:
        json.loads(result.stdout, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    return result


def seeded_history(where) -> bytes:
    """A history with a few hundred jobs already in it (the user's data the runs must not hurt)."""
    trace = where / "seed.swf"
    trace.write_text("\n".join(swf_base(random.Random(-1), 300, first=100_001)) + "\n")
    db = where / "h.db"
    assert CliRunner().invoke(main, ["history", "import", str(trace), "--history", str(db)]).exit_code == 0
    return db.read_bytes()


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    return seeded_history(tmp_path_factory.mktemp("seeded"))


@pytest.mark.parametrize("case", range(CASES))
def test_mutated_history_inputs(tmp_path, case, seeded):
    run_case(case, tmp_path, seeded)


def run_case(case: int, tmp_path, seeded: bytes) -> None:
    """One seeded case: a mutated SWF or sacct imported into a copy of the seeded history, then
    ``history show`` and a backtest of it; or a damaged copy shown and imported into."""
    rng = random.Random(case)
    surface = ("swf", "sacct", "damaged")[case % 3]
    db = tmp_path / "h.db"
    db.write_bytes(seeded)
    if surface == "damaged":  # flipped bytes or a cut: show and import read it or refuse it, never change it
        raw = bytearray(seeded)
        if rng.random() < 0.3:
            raw = raw[: rng.randint(0, len(raw))]
        else:
            for _ in range(rng.randint(1, 8)):
                raw[rng.randrange(len(raw))] = rng.randrange(256)
        db.write_bytes(bytes(raw))
        before = digest(db)
        checked(["history", "show", "--history", str(db), "--json"], db, json_out=True)
        assert digest(db) == before, "history show changed the file"
        trace = tmp_path / "t.swf"
        trace.write_text("\n".join(swf_base(rng, 10)) + "\n")
        checked(["history", "import", str(trace), "--history", str(db)], db)
        return
    if surface == "swf":
        trace = tmp_path / "t.swf"
        trace.write_text(mutate(swf_base(rng), rng, None), errors="surrogateescape")
        fmt = []
    else:
        trace = tmp_path / "sacct.txt"
        trace.write_text(mutate(sacct_base(), rng, "|"), errors="surrogateescape")
        fmt = ["--format", "sacct"]
    imported = checked(["history", "import", str(trace), "--history", str(db), *fmt], db)
    checked(["history", "show", "--history", str(db), "--json"], db, json_out=True)
    if imported.exit_code == 0 and surface == "swf":
        checked(["backtest", str(trace), "--every", str(rng.choice([3600, DAY])), "--json"], json_out=True)
    elif imported.exit_code == 0:
        checked(["backtest", str(trace), "--every", "600", "--nodes", "32", "--cores", "4", "--json"],
                json_out=True)
        # what the import kept must not lock the next runs out: a snapshot of the same lab, twice
        # (an end in 2099 once became the history's newest time, refusing every later snapshot)
        for _ in range(2):
            done = checked(["predict", str(lab_snapshot(tmp_path)), "-o", str(tmp_path / "out.xml"), "-q",
                            "--history", str(db)], db)
            assert done.exit_code == 0, done.stderr


def lab_snapshot(where) -> object:
    """The mixed lab's capture (tests/data/slurm/mixed, of the lab whose sacct is mutated) as a
    raw LML snapshot in ``where``."""
    raw = where / "lab.xml"
    if not raw.exists():
        made = CliRunner().invoke(main, ["slurm", "snapshot", "--from", str(ROOT / "tests" / "data" / "slurm" / "mixed"),
                                         "-o", str(raw)])
        assert made.exit_code == 0, made.stderr
    return raw


if __name__ == "__main__":  # the figures for N cases, whatever fails: python tests/test_fuzz_history.py 5000
    import collections
    import sys
    import tempfile
    from pathlib import Path

    cases = int(sys.argv[1]) if len(sys.argv) > 1 else CASES
    failures = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        seed = seeded_history(Path(tmp))
        for case in range(cases):
            where = Path(tmp) / f"c{case}"
            where.mkdir()
            try:
                run_case(case, where, seed)
            except AssertionError as err:
                failures[str(err).splitlines()[0][:160]] += 1
            for f in where.iterdir():
                f.unlink()
            where.rmdir()
    runs = collections.Counter((r["command"], r["exit"]) for r in RUNS)
    print(f"{cases:,} cases, {len(RUNS):,} runs: " + ", ".join(f"{c} exit {e}: {n:,}" for (c, e), n in sorted(runs.items())))
    print(f"exit 1: {sum(r['exit'] not in (0, 2) for r in RUNS)}; over 30 s: {sum(r['seconds'] > 30 for r in RUNS)}; "
          f"slowest {max(r['seconds'] for r in RUNS):.2f} s; peak memory {max(r['kib'] for r in RUNS) / 1024:.0f} MiB; "
          f"histories changed by a failed run: {sum(r['changed'] for r in RUNS)}")
    for why, n in failures.most_common(10):
        print(f"  {n} x {why}")
