"""Hostile and absurd input: one clear message and exit 2 (or a warning), fast, small, and never
a file that does not parse."""

import time

import pytest
from click.testing import CliRunner

from conftest import ROOT, SAMPLES, predictions, running, snapshot, waiting
from jufo.cli import main
from jufo.io.dates import format_date, parse_date


def run(tmp_path, raw: bytes, *options: str):
    src, out = tmp_path / "in.xml", tmp_path / "out.xml"
    src.write_bytes(raw)
    began = time.perf_counter()
    result = CliRunner().invoke(main, ["predict", str(src), "-o", str(out), *options])
    return result, out, time.perf_counter() - began


@pytest.mark.parametrize("formula, message", [
    ("(10**9999)**9999", "overflows"),
    ("10**400", "overflows"),
    ("+".join(["wall"] * 1000), "longer than"),
    ("+".join(["wall"] * 500), "too large"),
    ("(" * 300 + "wall" + ")" * 300, ""),
])
def test_formulas_that_would_stall_or_overflow_are_refused_at_once(tmp_path, formula, message):
    result, out, seconds = run(tmp_path, snapshot({"a": waiting(1, 60)}, scheduler={"system_sysprio": formula}))
    assert result.exit_code == 2, result.stderr
    assert message in result.stderr and "system_sysprio" in result.stderr and len(result.stderr.splitlines()) == 1
    assert len(result.stderr) < 500  # the value is cut in the message
    assert not out.exists() and seconds < 5


@pytest.mark.parametrize("key, value", [("ncores", "1e10"), ("ncores", "inf"), ("ncores", "nan"),
                                        ("ncores", "9" * 400), ("ncores", "-4")])
def test_absurd_node_sizes_are_exit_2_naming_the_key(tmp_path, key, value):
    result, out, seconds = run(tmp_path, snapshot({"a": waiting(1, 60)}, nodes={"n1": {key: value}}))
    assert result.exit_code == 2
    assert f"node n1: {key}=" in result.stderr and not out.exists() and seconds < 5


@pytest.mark.parametrize("name", ["(null)", "n[1-2]", "a,b", "n 1"])
def test_a_node_name_that_no_node_list_can_hold_is_exit_2(tmp_path, name):
    """A node called "(null)" (scontrol's word for no value, mutated into a NodeName) was read;
    its history recorded it and the next run, reading the node list back, failed inside."""
    result, out, seconds = run(tmp_path, snapshot({"a": waiting(1, 60)}, nodes={name: 4, "n2": 4}))
    assert result.exit_code == 2 and f"name={name!r}: not a node name" in result.stderr and not out.exists()


@pytest.mark.parametrize("key", ["nummachines", "taskspernode", "totalcores", "wall", "tpt"])
@pytest.mark.parametrize("value", ["inf", "nan", "1e30", "9" * 400])
def test_absurd_job_numbers_never_crash(tmp_path, key, value):
    """The job gets a BadInput reason naming the key (the others are still forecast)."""
    job = {**waiting(1, 60), key: value}
    if key == "tpt":  # read only with totaltasks and no per-node count
        del job["taskspernode"]
        job["totaltasks"] = "2"
    result, out, seconds = run(tmp_path, snapshot({"a": job, "b": waiting(1, 60)}))
    assert result.exit_code == 0, result.stderr
    assert seconds < 5
    got = predictions(out.read_bytes())
    assert got["a"]["jufo_reason"].startswith(f"BadInput: {key}:"), got["a"]
    assert "jufo_starttime" in got["b"]


def test_a_hostlist_naming_millions_of_nodes_is_refused_unexpanded(tmp_path):
    res = {"r1": {"starttime": "01/10/12-12:00:00", "wall": "3600", "nodelist": "n[0-30000000]"}}
    result, out, seconds = run(tmp_path, snapshot({"a": waiting(1, 60)}, reservations=res))
    assert result.exit_code == 0 and "names more than" in result.stderr and seconds < 5


def test_a_core_range_beyond_the_node_is_refused_without_building_it(tmp_path):
    jobs = {"r": running(1, 600, nodelist="(1(1-20000000000))")}
    result, out, seconds = run(tmp_path, snapshot(jobs))
    assert "beyond node 1's 4 cores" in result.stderr and seconds < 5 and "internal error" not in result.stderr


@pytest.mark.parametrize("args, message", [
    (["predict", "/dev/zero"], "a device, not a file"),
    (["predict", str(SAMPLES / "slurm-adapter.xml"), "--config", "/dev/zero"], "a device, not a file"),
    (["swf2lml", "/dev/zero"], "longer than"),
])
def test_endless_inputs_are_refused(args, message):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and message in result.stderr


def test_a_trace_asking_for_fifty_million_nodes_is_refused(tmp_path):
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxProcs: 50000000\n1 0 0 10 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 -1 -1\n")
    result = CliRunner().invoke(main, ["swf2lml", str(trace)])
    assert result.exit_code == 2 and "MaxProcs" in result.stderr
    result = CliRunner().invoke(main, ["swf2lml", str(trace), "--nodes", "100000000"])
    assert result.exit_code == 2 and "--nodes" in result.stderr


@pytest.mark.parametrize("doctype", ['<!DOCTYPE lgui [<!-- ] -->]>', '<!DOCTYPE lgui SYSTEM "a>b.dtd">',
                                     '<!DOCTYPE lgui SYSTEM "a[b.dtd">'])
def test_a_doctype_never_gives_output_that_does_not_parse(tmp_path, doctype):
    raw = snapshot({"a": waiting(1, 60)})
    i = raw.index(b"?>") + 2
    result, out, _ = run(tmp_path, raw[:i] + b"\n" + doctype.encode() + raw[i:])
    assert result.exit_code == 0, result.stderr
    assert predictions(out.read_bytes())["a"]["jufo_starttime"]


def test_dates_after_2068_read_back_to_the_same_instant():
    for epoch in (3155760000, 4102444800, -86400):
        text = format_date(epoch, "%m/%d/%y-%H:%M:%S")
        assert parse_date(text)[0] == epoch


@pytest.mark.parametrize("value", ["inf", "abc", "1e30"])
@pytest.mark.parametrize("command", [["gantt", "-o", "{tmp}/g.svg"], ["evaluate", "--actual", "{pred}"], ["show"]])
def test_views_of_a_file_with_absurd_numbers_never_crash(tmp_path, value, command):
    pred = tmp_path / "p.xml"
    assert CliRunner().invoke(main, ["predict", str(SAMPLES / "slurm-adapter.xml"), "-o", str(pred)]).exit_code == 0
    bad = tmp_path / "bad.xml"
    bad.write_bytes(pred.read_bytes().replace(b'key="ncores" value="128"', f'key="ncores" value="{value}"'.encode()))
    args = [a.replace("{tmp}", str(tmp_path)).replace("{pred}", str(pred)) for a in command]
    result = CliRunner().invoke(main, [args[0], str(bad), *args[1:]])
    assert result.exit_code in (0, 2) and "internal error" not in result.stderr, result.stderr
    if result.exit_code == 2:
        assert "ncores" in result.stderr


def test_a_trace_repeating_a_job_number_is_refused_naming_the_line(tmp_path):
    """As a snapshot refuses a job id given twice (issue 34, item 12: 6.8 million copies of one
    line took minutes and gigabytes; now the second line ends it)."""
    trace = tmp_path / "dup.swf"
    trace.write_text("; MaxProcs: 4\n1 0 0 10 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 -1 -1\n"
                     "1 5 0 10 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 -1 -1\n")
    for args in (["swf2lml", str(trace), "--at", "6", "-o", str(tmp_path / "dup.xml"), "-q"],
                 ["history", "import", str(trace), "--history", str(tmp_path / "h.db")]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, result.output
        assert "dup.swf line 3: job number='1': appears twice" in result.output
    assert not (tmp_path / "dup.xml").exists()


def test_a_trace_of_blank_lines_is_read_fast_and_a_huge_one_refused(tmp_path, monkeypatch):
    """The 1 GiB input limit holds for decompressed text, and blank stretches are skipped whole."""
    import gzip

    from jufo.io import swf

    blank = tmp_path / "blank.swf.gz"
    with gzip.open(blank, "wb") as fh:
        for _ in range(64):
            fh.write(b"\n" * (1 << 20))
        fh.write(b"7 0 0 10 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 -1 -1\n")
    began = time.perf_counter()
    trace = swf.read(str(blank))
    assert time.perf_counter() - began < 5  # a line at a time: ~7 s for these 64 MiB
    assert [job.number for job in trace.jobs] == [7]
    monkeypatch.setattr(swf, "MAX_INPUT_BYTES", 32 << 20)
    monkeypatch.setattr(swf._lines, "__defaults__", (32 << 20,))
    result = CliRunner().invoke(main, ["history", "import", str(blank), "--history", str(tmp_path / "h.db")])
    assert result.exit_code == 2 and "more than 32 MiB of text" in result.output, result.output


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs resource limits (POSIX)")
@pytest.mark.parametrize("what", ["snapshot", "trace"])
def test_huge_machines_in_tiny_inputs_need_no_memory_with_a_history(tmp_path, what):
    """Issue 34, item 12: 1,000 nodes of 2^20 cores took 8.4 GB with --history, and a 98-byte SWF
    claiming 2e9 processors made history show run out of memory (a level-time tree as long as
    the machine's cores). Both now run inside a 1 GiB address space."""
    import resource
    import subprocess
    import sys

    db = tmp_path / "h.db"
    if what == "snapshot":
        nodes = {f"n{i}": 1 << 20 for i in range(1000)}
        jobs = {f"r{i}": running(1 << 20, 600 + i, wall=3600) for i in range(5)}
        jobs.update({f"w{i}": waiting(1 << 20, 3600) for i in range(5)})
        (tmp_path / "in.xml").write_bytes(snapshot(jobs, nodes))
        first = ["predict", str(tmp_path / "in.xml"), "-o", str(tmp_path / "out.xml"), "-q", "--history", str(db)]
    else:
        (tmp_path / "t.swf").write_text("; MaxProcs: 2000000000\n1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
                                        "2 5 10 100 4 -1 -1 4 200 -1 1 2 1 -1 1 -1 -1 -1\n")
        first = ["history", "import", str(tmp_path / "t.swf"), "--history", str(db)]

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    for args in (first, ["history", "show", "--history", str(db)]):
        done = subprocess.run([sys.executable, "-m", "jufo", *args], capture_output=True, text=True,
                              preexec_fn=limit, timeout=120)
        assert done.returncode == 0, done.stderr[-500:]


def test_validate_never_passes_what_predict_refuses(tmp_path):
    import random

    from test_fuzz import SAMPLE_FILES, mutate

    for case in range(60):
        rng = random.Random(10_000 + case)
        (tmp_path / "in.xml").write_bytes(mutate(rng.choice(SAMPLE_FILES).read_bytes(), rng))
        predicted = CliRunner().invoke(main, ["predict", str(tmp_path / "in.xml"), "-o", str(tmp_path / "o.xml"), "-q"])
        validated = CliRunner().invoke(main, ["validate", str(tmp_path / "in.xml")])
        assert not (predicted.exit_code == 2 and validated.exit_code == 0), (case, predicted.stderr)


def test_a_system_time_too_late_to_write_back_is_exit_2(tmp_path):
    result, out, _ = run(tmp_path, snapshot({"a": waiting(1, 60)}, system_time="9999-12-31 23:00:00"))
    assert result.exit_code == 2 and "system_time=" in result.stderr and "year 9000" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("key, value", [("gpus", "inf"), ("physmem", "1e400"), ("physmem", "9" * 400 + " gb")])
def test_absurd_node_extras_are_warnings_naming_the_key(tmp_path, key, value):
    result, out, _ = run(tmp_path, snapshot({"a": waiting(1, 60)}, nodes={"n1": {"ncores": 4, key: value}}))
    assert result.exit_code == 0 and f"node n1: {key}=" in result.stderr and "internal error" not in result.stderr


def test_numbers_of_thousands_of_digits_in_traces_are_exit_2_or_read_as_names(tmp_path):
    """Found by the history fuzzer: Python refuses int() of more than 4,300 digits, which broke
    a MaxProcs header (exit 1) and a sacct JobID (backtest, exit 1)."""
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxProcs: " + "9" * 5000 + "\n1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    result = CliRunner().invoke(main, ["history", "import", str(trace), "--history", str(tmp_path / "h.db")])
    assert result.exit_code == 2 and "MaxProcs" in result.output and "beyond any machine" in result.output
    sacct = tmp_path / "sacct.txt"
    sacct.write_text("JobID|User|Group|Account|Partition|QOS|NNodes|NCPUS|Timelimit|Submit|Start|End|State\n"
                     + "9" * 5000 + "|u|g|a|p|normal|1|4|00:10:00|2026-11-25T10:00:00|2026-11-25T10:01:00|"
                     "2026-11-25T10:05:00|COMPLETED\n"
                     "2|u|g|a|p|normal|1|4|00:10:00|2026-11-25T10:00:30|2026-11-25T10:05:00|2026-11-25T10:09:00|COMPLETED\n")
    result = CliRunner().invoke(main, ["backtest", str(sacct), "--every", "60", "--nodes", "1", "--cores", "4"])
    assert result.exit_code in (0, 2) and "internal error" not in result.output, result.output


def test_a_dependency_beside_an_array_of_100000_tasks_is_resolved_in_linear_time():
    """An array's id names all its tasks: keeping them in a list with a membership test made
    resolving dependencies quadratic (found by the fuzzer: ``ArrayTaskId=1-99999%2`` in
    LLview 2's sample beside a job that waits for another took 76 s of a 82 s forecast)."""
    from jufo.engine import dependency
    from jufo.engine.job import Job

    tasks = [Job(f"1100_{k}", k, {}, "Pending", array="1100", task=str(k)) for k in range(100_000)]
    after = Job("1300", 100_000, {"dependency": "afterok:1100"}, "Pending")
    began = time.perf_counter()
    waits = dependency.resolve([*tasks, after])
    assert time.perf_counter() - began < 10  # a second here; the list took minutes
    assert list(waits) == [after] and [job for _, job in waits[after]] == tasks


@pytest.mark.parametrize("stop, code, said", [("TimedOut", 124, "passed its --timeout"), ("Terminated", 143, "terminated")])
def test_an_error_raised_while_a_timeout_or_sigterm_unwinds_ends_the_run_as_that_signal(capsys, stop, code, said):
    """A signal that interrupts a lock half-taken makes its ``with`` fail on release ("cannot
    release un-acquired lock", once in CI as a backtest's --timeout came): the run still ends as
    the signal asks, not as an internal error."""
    from jufo import cli, signals

    @cli.guarded
    def interrupted():
        try:
            raise getattr(signals, stop)()
        finally:
            raise RuntimeError("cannot release un-acquired lock")

    with pytest.raises(SystemExit) as done:
        interrupted()
    assert done.value.code == code and said in capsys.readouterr().err


def test_a_syntax_error_in_jufos_own_module_is_the_parser_out_of_memory_and_in_another_an_internal_error(tmp_path):
    """Compiling a module imported late under a memory limit, CPython's parser may report the
    failed allocation as a SyntaxError (seen at 30 MiB of address space without cached
    bytecode); jufo's own modules compile, so there it is said as out of memory."""
    import subprocess
    import sys

    probe = ("import sys, jufo.cli as cli\n"
             "@cli.guarded\n"
             "def late():\n"
             "    raise SyntaxError(\"expected ':'\", (sys.argv[1], 251, 1, 'x'))\n"
             "late()\n")
    own = subprocess.run([sys.executable, "-c", probe, str(ROOT / "jufo" / "engine" / "configuration.py")],
                         capture_output=True, text=True, cwd=ROOT)
    assert own.returncode == 1 and own.stderr.startswith("jufo: error: out of memory"), own.stderr
    other = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "site.py")], capture_output=True, text=True,
                           cwd=ROOT)
    assert other.returncode == 1 and other.stderr.startswith("jufo: internal error: SyntaxError"), other.stderr
