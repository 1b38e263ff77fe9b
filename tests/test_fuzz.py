"""Mutation fuzzing of the shipped samples: whatever the input, exit 0 with output that parses
or exit 2 with one message — never exit 1, never a hang, never gigabytes.

Seeded; ``JUFO_FUZZ=N`` runs N cases (default 200). Each case mutates one sample: values made
hostile (inf, nan, huge, negative, empty, long, wrong type), keys dropped or duplicated,
bytes cut off, a DOCTYPE added.
"""

import os
import random
import resource
import time

import pytest
from click.testing import CliRunner
from lxml import etree

from conftest import SAMPLES
from jufo.cli import main

CASES = int(os.environ.get("JUFO_FUZZ", "200"))
LLVIEW2 = SAMPLES / "llview2"  # the five-file set: its jobs file is mutated, the others come along
SAMPLE_FILES = sorted(SAMPLES.glob("*.xml")) + [LLVIEW2 / "jobs_LML.xml", LLVIEW2 / "nodes_LML.xml"]
HOSTILE = ["inf", "-inf", "nan", "1e30", "1e308", "-1", "0", "", " ", "9" * 400, "1e10", "abc", "1.5",
           "n[0-30000000]", "(1(1-20000000000))", "01/01/70-00:00:00", "12/31/68-23:59:59", "99:99:99",
           "2070-01-01 00:00:00", "9999-12-31 23:59:59", "x" * 10_000, "y" * 70_000, "(10**9999)**9999", "wall*" * 300 + "1", "'", "<", "&amp;",
           "-DATEqueuedate", "AGE**99", "all", "yes", "FCFS", "Backfilling", "AttributeState",
           "2-5%0", "1-99999%2", "0-3000000", "1-3:0", "[1-", "afterok:1001(", "JobHeldUser", "BeginTime",
           "QOSMaxJobsPerUserLimit", "PENDING", "CONFIGURING", "Suspended", "(jrc0001,0)(jrc0001,9999)"]


def mutate(raw: bytes, rng: random.Random) -> bytes:
    root = etree.fromstring(raw)
    data = [d for d in root.iter("{*}data", "data")]
    for _ in range(rng.randint(1, 4)):
        if not data:
            break
        d = rng.choice(data)
        kind = rng.random()
        if kind < 0.6:
            d.set("value", rng.choice(HOSTILE))
        elif kind < 0.75:
            d.getparent().remove(d)
            data.remove(d)
        elif kind < 0.9:
            twin = etree.SubElement(d.getparent(), d.tag, key=d.get("key"), value=rng.choice(HOSTILE))
            data.append(twin)
        else:
            d.set("key", rng.choice(["system_sysprio", "maxtopdogs", "ncores", "wall", "nodelist", "state"]))
    out = etree.tostring(root, xml_declaration=True, encoding="UTF-8")
    roll = rng.random()
    if roll < 0.05:
        out = out[: rng.randint(0, len(out))]
    elif roll < 0.1:
        i = out.index(b"?>") + 2
        out = out[:i] + rng.choice([b'<!DOCTYPE x [<!-- ] -->]>', b'<!DOCTYPE x SYSTEM "a>b">']) + out[i:]
    return out


@pytest.mark.parametrize("case", range(CASES))
def test_mutated_samples(tmp_path, case):
    rng = random.Random(case)
    src = rng.choice(SAMPLE_FILES)
    raw = mutate(src.read_bytes(), rng)
    (tmp_path / "in.xml").write_bytes(raw)
    out = tmp_path / "out.xml"
    began = time.perf_counter()
    others = [str(f) for f in sorted(LLVIEW2.glob("*.xml")) if f.name != src.name] if src.parent == LLVIEW2 else []
    result = CliRunner().invoke(main, ["predict", str(tmp_path / "in.xml"), *others, "-o", str(out), "-q"])
    seconds = time.perf_counter() - began
    assert result.exit_code in (0, 2), (src.name, case, result.stderr)
    assert seconds < 30, (src.name, case, seconds)
    if result.exit_code == 0:
        etree.fromstring(out.read_bytes())
    else:
        errors = [line for line in result.stderr.splitlines() if line.startswith("jufo: error: ")]
        assert not out.exists() and len(errors) == 1, result.stderr  # (warnings -q keeps may precede it)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 1 << 20  # KiB: under 1 GiB
    if case % 3 == 0 and result.exit_code == 0:  # what a run keeps must not make its history unusable
        history = tmp_path / "h.db"
        codes = []
        for run in range(2):
            again = CliRunner().invoke(main, ["predict", str(tmp_path / "in.xml"), *others, "-o", str(out), "-q",
                                              "--history", str(history)])
            codes.append(again.exit_code)
            assert again.exit_code in (0, 2), (src.name, case, run, again.stderr)
        # the history may refuse what it cannot keep (exit 2, nothing recorded), but what it
        # kept must serve the same snapshot again
        assert codes in ([0, 0], [2, 2]), (src.name, case, codes, again.stderr)


# -- Slurm's own text: scontrol's saved outputs, mutated ----------------------------------------
SLURM_LAB = SAMPLES.parent / "tests" / "data" / "slurm" / "mixed"  # the mixed lab's outputs at one capture
SLURM_FILES = ("job.txt", "node.txt", "partition.txt", "reservation.txt", "config.txt")
SLURM_HOSTILE = ["UNLIMITED", "(null)", "N/A", "Unknown", "None", "INVALID", "", "-1", "0", "99999999999999", "1e30",
                 "n[01-", "n[1-99999999]", "n[01-03],m[5-2]", "cpu=4,mem=,node=", "gres/gpu:a100=4", "gres/gpu=x",
                 "2023-13-45T99:99:99", "1970-01-01T00:00:00", "2999-01-01T00:00:00", "99-99:99:99",
                 "PENDING", "COMPLETING+DRAIN", "DOWN*+DRAIN", "IDLE+POWERED_DOWN", "FORCE:4", "YES:0",
                 "afterok:999(unfulfilled)", "singleton", "1-1000000%0", "4294967294", "x" * 5000, "=", "a=b",
                 "ReqNodeNotAvail,_UnavailableNodes:n[01-02]", "AssocGrpCPURunMinutesLimit", "JobHeldAdmin",
                 "1.5", "0x10", "∞", "n01,n01", "ALL", "CR_Core_Memory", "bf_window=x", "bf_resolution=0"]


def mutate_scontrol(text: str, name: str, rng: random.Random) -> str:
    """A few ``Key=Value`` pairs (``Key = Value`` lines of the configuration) given hostile
    values, dropped or doubled; sometimes the text cut off."""
    import re

    if name == "config.txt":
        lines = text.splitlines()
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(lines))
            if " = " in lines[i]:
                lines[i] = f"{lines[i].split(' = ')[0]} = {rng.choice(SLURM_HOSTILE)}"
        return "\n".join(lines) + "\n"
    for _ in range(rng.randint(1, 4)):
        pairs = list(re.finditer(r"(\S+?)=(\S*)", text))
        if not pairs:
            break
        m = rng.choice(pairs)
        roll = rng.random()
        new = f"{m.group(1)}={rng.choice(SLURM_HOSTILE)}" if roll < 0.7 else "" if roll < 0.85 else f"{m.group(0)} {m.group(0)}"
        text = text[:m.start()] + new + text[m.end():]
    if rng.random() < 0.05:
        text = text[:rng.randint(0, len(text))]
    return text


@pytest.mark.parametrize("case", range(CASES // 2))
def test_mutated_scontrol_outputs(tmp_path, case):
    """``slurm snapshot``, ``slurm config`` and ``predict`` of what they wrote: exit 0 or exit 2
    with one message, whatever scontrol's text holds (before this test, a partition's
    ``TotalCPUs=(null)`` under multifactor's job-size weight was an internal error)."""
    rng = random.Random(10_000 + case)
    for name in SLURM_FILES:
        text = (SLURM_LAB / name).read_text()
        (tmp_path / name).write_text(mutate_scontrol(text, name, rng) if rng.random() < 0.5 else text)
    raw, out, site = tmp_path / "raw.xml", tmp_path / "out.xml", tmp_path / "site.xml"
    for args, made in ((["slurm", "snapshot", "--from", str(tmp_path), "-o", str(raw)], raw),
                       (["slurm", "config", "--from", str(tmp_path), "-o", str(site)], site),
                       (["predict", str(raw), "-o", str(out), "-q"], out)):
        if args[0] == "predict" and not raw.exists():
            continue
        result = CliRunner().invoke(main, args)
        assert result.exit_code in (0, 2), (case, args[:2], result.stderr)
        if result.exit_code == 2:
            errors = [line for line in result.stderr.splitlines() if line.startswith("jufo: error: ")]
            assert not made.exists() and len(errors) == 1, result.stderr
        elif args[0] == "predict" and case % 3 == 0:  # what a run keeps must not make its history unusable
            for run in range(2):
                again = CliRunner().invoke(main, [*args, "--history", str(tmp_path / "h.db")])
                assert again.exit_code == 0, (case, run, again.stderr)
