"""The Slurm labs' records, kept as test data: tests/data/slurm/lab-kth.tar.xz (139 KB), a real
Slurm 22.05 with 100 nodes replaying 320 jobs of KTH-SP2 (time / 100), captured every 30 s
(105 captures), and lab-mixed.tar.xz (135 KB): 32 nodes of 4 cores in an exclusive and a
core-shared partition, priority/multifactor (age, size), 327 jobs of HPC2N (time / 75), a
maintenance reservation, a dependency chain and a throttled array (141 captures); each with
its sacct. jufo is held to what it measured on it, so a change that makes it
agree less with Slurm, or forecast worse, fails here."""

from __future__ import annotations

import json
import sys
import tarfile

import pytest
from click.testing import CliRunner

from conftest import ROOT
from jufo.cli import main
from jufo.io import lml

RECORDS = ROOT / "tests" / "data" / "slurm"


def lab_module(name: str):
    """A script of ``lab/`` (``score``, ``adequacy``), imported as a module: the folder is
    not a package, so it goes on the import path once."""
    import importlib

    folder = str(ROOT / "lab")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(name)


def unpack(tmp_path_factory, name: str):
    where = tmp_path_factory.mktemp(name)
    with tarfile.open(RECORDS / f"{name}.tar.xz") as tar:
        tar.extractall(where, filter="data")
    return where


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return unpack(tmp_path_factory, "lab-kth")


def test_the_mixed_lab_walltime_forecast_is_slurms_own_plan(tmp_path_factory):
    """With the settings ``jufo slurm config`` reads, the walltime-only forecast is Slurm's own
    backfill plan (``plan=slurm``), exclusive and core-shared partitions, multifactor priority
    and a maintenance reservation included. This record has no sdiag, so jufo plans as of the
    last change it shows; Slurm's own pass may be a few seconds older or newer."""
    score = lab_module("score")

    result = score.score(unpack(tmp_path_factory, "lab-mixed"), history=False, every=6)
    # measured on all 141 captures: 95.8 % of 5,614 within 60 s of Slurm's estimate (24.0 % when
    # the walltime forecast was jufo's simulation of Slurm, whose planned jobs hold only cores)
    assert result["fidelity_compared"] > 800
    assert result["fidelity_within_60s"] >= 0.9, result["differ_examples"][:5]
    assert result["walltime"]["median_abs_error"] == result["slurm"]["median_abs_error"]


def test_an_unseen_mixed_lab_walltime_forecast_is_slurms_own_plan(tmp_path_factory):
    """lab-unseen.tar.xz (93 KB): the mixed shape on another window of HPC2N (300 jobs from the
    100,000th, time / 75, 99 captures in 49 minutes), recorded after today's changes to the
    ranges and never used to tune them. Measured on all 99 captures: 98.9 % of 1,762
    job-snapshots within 60 s of Slurm's estimate; history forecast 65 s against Slurm's 185 s
    median absolute error, range held 51.6 % (39.2 % before the ranges' widening; 676 of the 703
    misses late; 77.7 % since ranges reach toward the walltime forecast)."""
    score = lab_module("score")

    result = score.score(unpack(tmp_path_factory, "lab-unseen"), history=False, every=6)
    assert result["fidelity_compared"] > 250
    assert result["fidelity_within_60s"] >= 0.9, result["differ_examples"][:5]


def test_ranges_hold_when_the_queue_changes_faster_than_forecasts_are_scored(tmp_path_factory):
    """On the unseen lab, jobs queued behind the maintenance reservation all started later than
    the history forecast said, while the ranges were cut from how quick starters' forecasts
    had fared: 39.5 % held on every third capture (51.6 % on all). Reaching toward the
    walltime forecast as far as recent jobs ran beyond their predicted run times, they hold
    72.5 % (77.7 % on all, median width 299 s against a remaining wait of 316 s)."""
    score = lab_module("score")

    result = score.score(unpack(tmp_path_factory, "lab-unseen"), history=True, every=3)
    ranges = result["range"]
    assert ranges["with_range"] > 300
    assert ranges["coverage"] >= 0.65, ranges
    assert ranges["median_width"] <= 2 * ranges["median_remaining_wait"], ranges
    assert result["history"]["median_abs_error"] < 0.5 * result["slurm"]["median_abs_error"]


def test_walltime_forecast_agrees_with_slurms_own_estimate(lab):
    score = lab_module("score")

    result = score.score(lab, history=False, every=4)  # every 4th capture: 27 of 105, a few seconds
    assert result["fidelity_compared"] > 300
    # measured on all 105 captures: 95.6 % of 1,604 within 60 s (73.1 % with jufo's simulation
    # of Slurm instead of its plan)
    assert result["fidelity_within_60s"] >= 0.9, result["differ_examples"][:5]


def test_with_real_run_times_the_history_forecast_is_slurms_schedule(lab):
    """``score --exact`` gives the history forecast every job's real run time: what is left is
    where jufo's model of the lab's Slurm differs from it. Measured on all 105 captures: 9 s
    median absolute error (the history forecast as made: 39 s; Slurm's own estimate 136 s),
    within 5 min 100 %; the second KTH lab 4 s (21 s), the mixed lab 3 s (35.5 s). So on a real
    Slurm the history forecast's error is its run times', the waiting jobs' more than the
    running ones' (``--exact waiting``). Here every 4th capture."""
    score = lab_module("score")

    made, exact, waiting = (score.score(lab, history=True, every=4, exact=given) for given in (None, "all", "waiting"))
    assert made["walltime"] == exact["walltime"] and made["slurm"] == exact["slurm"]  # only the history one knows
    assert exact["history"]["count"] == made["history"]["count"] > 300
    assert exact["history"]["median_abs_error"] <= 10 < waiting["history"]["median_abs_error"] \
        < made["history"]["median_abs_error"]
    assert exact["history"]["within_5min"] >= 0.99


def test_exact_without_history_is_a_usage_error(capsys):
    score = lab_module("score")

    with pytest.raises(SystemExit) as stop:
        score.main([str(RECORDS), "--exact"])
    assert stop.value.code == 2 and "--exact is for the history forecast" in capsys.readouterr().err


def test_backtest_of_the_labs_own_sacct(lab):
    site = lab / "site.xml"
    assert CliRunner().invoke(main, ["slurm", "config", "--from", str(lab / "capture" / "0000"), "-o", str(site),
                                     "-q"]).exit_code == 0
    done = CliRunner().invoke(main, ["backtest", str(lab / "sacct.txt"), "--nodes", "100", "--config", str(site),
                                     "--every", "60", "--json"])
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    overall = result["overall"]
    assert result["forecasts"] > 700
    # measured: history 49 s, walltime 142 s, starts now 137 s median absolute error, 80 % range
    # held 74.2 %, 70.4 % before ranges that held less were widened (with compression instead of
    # Slurm's replanning, replan=no: 43 s and 75.5 %;
    # replanning is kept for what the captures and the replay show, see docs/slurm.md)
    assert overall["history"]["median_abs_error"] < 0.5 * overall["walltime"]["median_abs_error"]
    assert overall["history"]["median_abs_error"] < overall["starts now"]["median_abs_error"]
    assert overall["history"]["coverage"] >= 0.72


def test_snapshots_and_sacct_imports_take_turns_without_rewriting_accounting(tmp_path_factory, tmp_path):
    """The operator's cron: import sacct up to now, predict with the history, again. A snapshot
    lists finished jobs too (its reader does not size or date them: they are not scheduled);
    they once got the snapshot's time as submit date and one node, overwrote what sacct had
    recorded, and the next import refused the history as another system's."""
    import sqlite3
    import time as clock

    lab = unpack(tmp_path_factory, "lab-mixed")
    runner, db, site = CliRunner(), tmp_path / "h.db", tmp_path / "site.xml"
    assert runner.invoke(main, ["slurm", "config", "--from", str(lab / "capture" / "0000"), "-o", str(site),
                                "-q"]).exit_code == 0
    sacct = {line.split("|")[0]: line.split("|") for line in (lab / "sacct.txt").read_text().splitlines()[1:]}
    for cap in ("0003", "0006", "0009"):
        at = int((lab / "capture" / cap / "at").read_text())
        until = clock.strftime("%Y-%m-%dT%H:%M:%S", clock.gmtime(at))
        done = runner.invoke(main, ["history", "import", str(lab / "sacct.txt"), "--history", str(db),
                                    "--until", until])
        assert done.exit_code == 0, done.output
        snap = tmp_path / f"{cap}.xml"
        assert runner.invoke(main, ["slurm", "snapshot", "--from", str(lab / "capture" / cap),
                                    "-o", str(snap)]).exit_code == 0
        done = runner.invoke(main, ["predict", str(snap), "--config", str(site), "--history", str(db),
                                    "-o", str(tmp_path / "out.xml"), "-q"])
        assert done.exit_code == 0, done.output
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT id, nodes, cores, submit FROM jobs WHERE source = 'sacct'").fetchall()
    assert len(rows) > 30
    for job_id, nodes, cores, submit in rows:
        line = sacct[job_id]
        assert (nodes, cores) == (int(line[12]), int(line[13])), job_id
        assert clock.strftime("%Y-%m-%dT%H:%M:%S", clock.gmtime(submit)) == line[7], job_id


def test_history_show_scores_slurms_own_estimate_beside_jufos_forecast(lab, tmp_path):
    """Every capture read as a cron run would (slurm snapshot, predict --history): the history
    keeps Slurm's estimate with each forecast, and history show scores both against the real
    starts on the same forecasts. Measured on this record (105 captures): 776 kept forecasts,
    Slurm estimated 738; on those the history forecast 39 s median absolute error, Slurm's
    estimate 150 s; the walltime-only forecast (Slurm's plan) 142 s on all 776; the ranges held
    77.5 %."""
    runner, db, site = CliRunner(), tmp_path / "h.db", tmp_path / "site.xml"
    assert runner.invoke(main, ["slurm", "config", "--from", str(lab / "capture" / "0000"), "-o", str(site),
                                "-q"]).exit_code == 0
    for cap in sorted((lab / "capture").iterdir()):
        assert runner.invoke(main, ["slurm", "snapshot", "--from", str(cap), "-o", str(tmp_path / "raw.xml")]).exit_code == 0
        done = runner.invoke(main, ["predict", str(tmp_path / "raw.xml"), "--config", str(site), "--history", str(db),
                                    "-o", str(tmp_path / "out.xml"), "-q"])
        assert done.exit_code == 0, done.output
    shown = json.loads(runner.invoke(main, ["history", "show", "--history", str(db), "--json"]).stdout)
    fared = shown["forecasts_so_far"]["overall"]
    slurm, same = fared["batch system"], fared["history, same forecasts"]
    assert slurm["count"] == same["count"] > 700
    assert same["median_abs_error"] <= 0.3 * slurm["median_abs_error"]
    assert abs(fared["walltime"]["median_abs_error"] - slurm["median_abs_error"]) <= 15  # Slurm's own plan
    assert fared["history"]["median_abs_error"] < fared["starts now"]["median_abs_error"] / 3
    assert 0.72 <= fared["history"]["coverage"] <= 0.85 and fared["history"]["with_range"] > 0.9


def test_replay_of_the_labs_stream_with_its_own_settings_simulates(lab):
    """``jufo replay`` of the stream the lab submitted, with the settings ``jufo slurm config``
    reads (``plan=slurm``), against Slurm's own residence times (Baranov's P, lab/adequacy.py).
    The plan is the walltime-only forecast of a snapshot: a replay with real run times must
    simulate, and a plan made at time zero must not test jobs submitted later. With the plan
    applied, P was 613 s (mean residence 218 s); simulated with compression, 119 s; with
    reservations made anew at each early end, as Slurm's backfill does (``replan=yes``), 92 s."""
    adequacy = lab_module("adequacy")

    run = adequacy.runs(lab)
    slurm = {k: v["end"] - v["submit"] for k, v in run.items()}
    p, jobs = adequacy.p_of(slurm, adequacy.replay(run, lab, 100, 1))
    assert jobs == 320 and p < 100, p


def test_replay_is_as_close_to_slurm_as_slurm_is_to_itself(tmp_path_factory):
    """Baranov's adequacy on lab-adequacy.tar.xz (9 KB): two runs of a real Slurm 22.05 with
    the same 200-job KTH-SP2 stream on 32 nodes (``slurmlab.py run ... --nodes 32 --jobs 200
    --skip 5000 --scale 100 --procs 100 --accounting``, the second beside the first with
    ``--ports 1000``), their sacct and first capture. jufo's replay of each run's stream with
    ``jufo slurm config``'s settings is nearer that run (P 21.1 s and 16.6 s) than the two runs
    are to each other (P_ideal 69.8 s); with compression instead of Slurm's replanning it was
    84.6 s and 33.1 s."""
    adequacy = lab_module("adequacy")

    where = unpack(tmp_path_factory, "lab-adequacy")
    runs = {name: adequacy.runs(where / name) for name in ("run-a", "run-b")}
    residence = {name: {k: v["end"] - v["submit"] for k, v in run.items()} for name, run in runs.items()}
    ideal, both = adequacy.p_of(residence["run-a"], residence["run-b"])
    assert both == 200 and ideal > 30
    for name, run in runs.items():
        p, jobs = adequacy.p_of(residence[name], adequacy.replay(run, where / name, 32, 1))
        assert jobs == 200 and p < ideal / 2, (name, p, ideal)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """The mixed lab, with its site file and a snapshot of its machine (``jufo slurm config``
    and ``jufo slurm snapshot`` of its first capture)."""
    where = unpack(tmp_path_factory, "lab-mixed")
    first = str(where / "capture" / "0000")
    for command, name in (("config", "site.xml"), ("snapshot", "machine.xml")):
        done = CliRunner().invoke(main, ["slurm", command, "--from", first, "-o", str(where / name)])
        assert done.exit_code == 0, done.output
    return where


def _backtest(lab, *machine: str) -> dict:
    done = CliRunner().invoke(main, ["backtest", str(lab / "sacct.txt"), *machine, "--config", str(lab / "site.xml"),
                                     "--every", "60", "--json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def test_backtest_of_a_partitioned_machine_runs_each_job_in_its_partition(mixed):
    """sacct does not say which nodes a partition has: with ``--nodes`` every job shares one pool.
    ``--machine`` takes them from a snapshot of the machine. The mixed lab's 32 nodes as one
    pool gave its shared partition (where 326 of its 331 jobs ran) twice its room."""
    own = _backtest(mixed, "--machine", str(mixed / "machine.xml"))
    pooled = _backtest(mixed, "--nodes", "32", "--cores", "4")
    # measured: history 125 s against 372 s pooled; walltime-only 603 s, "starts now" 411 s
    assert own["forecasts"] == pooled["forecasts"] > 1500
    history = own["overall"]["history"]["median_abs_error"]
    assert history < 0.5 * pooled["overall"]["history"]["median_abs_error"]
    assert history < 0.4 * own["overall"]["walltime"]["median_abs_error"]
    assert history < 0.5 * own["overall"]["starts now"]["median_abs_error"]


def test_a_machine_snapshot_places_running_jobs_in_their_partitions(mixed):
    from jufo.engine.node import name_pairs
    from jufo.io import accounting, swf
    from jufo.learn.backtest import machine_layout

    layout = machine_layout(str(mixed / "machine.xml"))
    records, _ = accounting.read_sacct(accounting.text_lines(str(mixed / "sacct.txt")), "sacct.txt")
    trace = swf.trace_of_records(records, "sacct.txt")
    of_queue = {q: {layout.nodes[i][0] for i in positions} for q, positions, _ in layout.members}
    assert sorted(of_queue) == ["batch", "shared"] and not of_queue["batch"] & of_queue["shared"]
    placed = set()
    for at in range(600, 4200, 300):
        _, entries, _ = swf.snapshot_entries(trace, swf.Conversion(at=at, layout=layout))
        for _, data, _, state, _, _ in entries:
            if state == "running" and data["nodelist"]:
                names = {name for name, _ in name_pairs(data["nodelist"])}
                assert names <= of_queue[data["queue"]], (data["queue"], names)
                placed.add(data["queue"])
    assert placed == {"batch", "shared"}


@pytest.mark.parametrize("given, message", [
    (["--nodes", "16"], "--machine gives the nodes; drop --nodes"),
    (["--cores", "4"], "drop --cores"),
])
def test_machine_and_node_counts_exclude_each_other(mixed, given, message):
    done = CliRunner().invoke(main, ["backtest", str(mixed / "sacct.txt"), "--machine", str(mixed / "machine.xml"),
                                     *given])
    assert done.exit_code == 2 and message in done.output


def test_a_machine_file_without_nodes_is_refused(mixed, tmp_path):
    empty = tmp_path / "empty.xml"
    empty.write_bytes(b'<lml:lgui xmlns:lml="http://eclipse.org/ptp/lml" version="1.1"><objects>'
                      b'<object id="q" name="q" type="queue"/></objects></lml:lgui>')
    done = CliRunner().invoke(main, ["backtest", str(mixed / "sacct.txt"), "--machine", str(empty)])
    assert done.exit_code == 2 and "no node objects" in done.output and "Traceback" not in done.output
    done = CliRunner().invoke(main, ["backtest", str(mixed / "sacct.txt"), "--machine", str(tmp_path / "missing.xml")])
    assert done.exit_code == 2 and "Traceback" not in done.output
    bad = tmp_path / "bad.xml"
    bad.write_text((mixed / "machine.xml").read_text().replace('key="ncores" value="4"', 'key="ncores" value="x"', 1))
    done = CliRunner().invoke(main, ["backtest", str(mixed / "sacct.txt"), "--machine", str(bad)])
    assert done.exit_code == 2 and f"--machine {bad}: node " in done.output and "ncores='x'" in done.output


def test_retro_forecasts_of_a_partitioned_machine(mixed, tmp_path):
    """``history import --retro`` on a site's sacct with ``--machine``: the forecasts it keeps
    are made on the partitions' own nodes (hourly: this record of 72 minutes has two such
    snapshots, 47 waiting jobs)."""
    db = tmp_path / "h.db"
    done = CliRunner().invoke(main, ["history", "import", str(mixed / "sacct.txt"), "--history", str(db), "--retro",
                                     "1", "--machine", str(mixed / "machine.xml"), "--config", str(mixed / "site.xml")])
    assert done.exit_code == 0, done.output
    kept = int(done.output.split("kept ")[1].split()[0].replace(",", ""))
    assert kept > 20
    done = CliRunner().invoke(main, ["history", "import", str(mixed / "sacct.txt"), "--history", str(db), "--retro",
                                     "1", "--machine", str(mixed / "machine.xml"), "--nodes", "16"])
    assert done.exit_code == 2 and "drop --nodes" in done.output


def test_partitions_the_machine_lacks_are_named(mixed, tmp_path):
    """Jobs of a partition the --machine snapshot does not have are left out with a warning
    naming it; when that is every job, exit 2 naming the partitions on both sides."""
    lines = (mixed / "sacct.txt").read_text().splitlines()
    column = lines[0].split("|").index("Partition")

    def renamed(every: int) -> str:
        out = [lines[0]]
        for k, line in enumerate(lines[1:]):
            fields = line.split("|")
            if k % every == 0 and fields[column] == "shared":
                fields[column] = "gpu"
            out.append("|".join(fields))
        return "\n".join(out) + "\n"

    some, alls = tmp_path / "some.txt", tmp_path / "all.txt"
    some.write_text(renamed(3))
    alls.write_text(renamed(1).replace("|batch|", "|gpu|"))
    done = CliRunner().invoke(main, ["backtest", str(some), "--machine", str(mixed / "machine.xml"), "--every", "300"])
    assert done.exit_code == 0, done.output
    assert "the --machine snapshot has no partition gpu (" in done.stderr
    done = CliRunner().invoke(main, ["backtest", str(alls), "--machine", str(mixed / "machine.xml")])
    assert done.exit_code == 2
    assert "Partition='gpu'" in done.output and "its partitions: batch, shared" in done.output


def test_the_benchmarks_site_accounting_backtests_on_its_partitions(tmp_path):
    """``benchmarks.bench juropa-sacct-backtest``'s accounting, small: a big and a devel
    partition, every job forecast in its own (no partition missing, none too big)."""
    from dataclasses import replace

    sys.path.insert(0, str(ROOT))
    from benchmarks.bench import CASES, synthetic_sacct

    sacct, machine = synthetic_sacct(str(tmp_path), replace(CASES["juropa"], nodes=64), jobs=800, gap=3600)
    done = CliRunner().invoke(main, ["backtest", sacct, "--machine", machine, "--every", "3600", "--json"])
    assert done.exit_code == 0, done.output
    assert "warning" not in done.stderr
    result = json.loads(done.stdout)
    assert result["forecasts"] > 300
    overall = result["overall"]
    assert overall["history"]["median_abs_error"] < overall["walltime"]["median_abs_error"]


def test_a_partition_limited_to_some_cores_of_its_nodes_sizes_its_jobs_by_them(mixed, tmp_path):
    """A node's class may give a partition fewer cores than the node has ("[shared:2]" on a
    4-core node): the partition's jobs are sized and bounded by those, and a class of 0 cores
    gives the partition none of that node."""
    from jufo.learn.backtest import machine_layout

    text = (mixed / "machine.xml").read_text()
    limited = tmp_path / "limited.xml"
    limited.write_text(text.replace("[shared:4]", "[shared:2][debug:0]"))
    layout = machine_layout(str(limited))
    positions, total, per_node = layout.room("shared")
    assert per_node == 2 and total == 2 * len(positions) == 32
    assert layout.room("debug") is None
    assert machine_layout(str(mixed / "machine.xml")).room("shared")[1:] == (64, 4)


def test_a_second_kth_lab_recorded_after_the_range_changes(tmp_path_factory):
    """lab-kth2.tar.xz (123 KB): the KTH shape on another window of the trace (320 jobs from
    the 20,000th, time / 100, 105 captures in 53 minutes), recorded after ranges reached toward
    the walltime forecast and used for nothing but this check. Measured on all captures
    (``python lab/score.py DIR --history``): 98.5 % of 988 job-snapshots within 60 s of Slurm's
    estimate; history forecast 21 s against Slurm's 75 s median absolute error (0.28×), within
    5 min 99.8 % against 94.7 %; ranges held 78.2 % (74.0 % before they spanned the planning
    grid, 72.1 % before they reached toward the walltime forecast), median width 105 s against a
    remaining wait of 80 s. On every third capture, as here: 96.8 %, 23.5 s against 88 s, ranges
    81.2 % (75.9 % before the grid)."""
    score = lab_module("score")

    result = score.score(unpack(tmp_path_factory, "lab-kth2"), history=True, every=3)
    assert result["fidelity_compared"] > 250
    assert result["fidelity_within_60s"] >= 0.9, result["differ_examples"][:5]
    assert result["history"]["median_abs_error"] <= 0.35 * result["slurm"]["median_abs_error"]
    assert result["history"]["within_5min"] >= result["slurm"]["within_5min"]
    assert 0.75 <= result["range"]["coverage"] <= 0.85 and \
        result["range"]["median_width"] <= 2 * result["range"]["median_remaining_wait"], result["range"]


def test_the_logged_labs_ranges_span_the_planning_grid(tmp_path_factory):
    """The logged lab (lab-passes.tar.xz, Slurm's backfill log beside its captures): its history
    ranges missed early, many of them narrower than Slurm's 60 s planning step, whose plan may
    hold a job to a step its start comes before. Reaching half a step either side of the
    forecast, they hold 77.3 % on every third capture, as here (73.8 % before), and 77.8 % on
    all 215 (73.6 % before; median width 284 s against a remaining wait of 396 s)."""
    score = lab_module("score")

    result = score.score(unpack(tmp_path_factory, "lab-passes"), history=True, every=3)
    ranges = result["range"]
    assert ranges["with_range"] > 2000
    assert 0.75 <= ranges["coverage"] <= 0.85 and ranges["median_width"] <= 2 * ranges["median_remaining_wait"], ranges


def test_a_quiet_lab_where_jufos_plan_and_slurms_estimate_differ_the_real_start_is_jufos(tmp_path_factory):
    """lab-quiet.tar.xz (87 KB), recorded 2026-11-27 and used for nothing else: HPC2N's trace from
    its 150,000th job (320 jobs, time / 75) on 64 nodes of 2 cores, one exclusive partition,
    priority/basic, 90 captures every 30 s in 45 minutes (``python lab/slurmlab.py run
    ../shared/traces/HPC2N-2002-2.1-cln.swf.gz --dir DIR --nodes 64 --cores 2 --jobs 320 --skip
    150000 --scale 75 --procs 240 --every 30 --accounting --tail 1200``). A quiet machine: 60
    pending job-snapshots, a median remaining wait of 14 s. The walltime forecast is within 60 s
    of Slurm's estimate on 30 of 37; the other 7 are one capture's burst, where Slurm's estimate
    (1,069–1,737 s ahead) was a pass from before jobs ended and the jobs started within 68 s, the
    first four as jufo's plan said (0–47 s). Median absolute errors: Slurm's 56 s, the walltime
    forecast 44 s, the history forecast 6 s, "starts now" 10 s."""
    score = lab_module("score")

    result = score.score(unpack(tmp_path_factory, "lab-quiet"), history=False)
    differ = result["differ_examples"]
    assert result["fidelity_compared"] >= 30 and len(differ) == 7, differ
    assert all(abs(d["actual"] - d["jufo"]) < abs(d["actual"] - d["slurm"]) for d in differ), differ
    assert result["walltime"]["median_abs_error"] < result["slurm"]["median_abs_error"]


def test_a_fair_share_lab_is_planned_in_the_priority_slurm_computed(tmp_path_factory):
    """lab-fairshare.tar.xz (115 KB), recorded 2026-11-27: KTH's trace from its 12,000th job
    (320 jobs, time / 100) on 100 nodes of 1 core, one exclusive partition, priority/multifactor
    with fair share (weight 10,000, usage halving every 10 minutes) and age (1,000), as most sites
    run it; 99 captures every 30 s in 50 minutes (``python lab/slurmlab.py run
    ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz --dir DIR --nodes 100 --cores 1 --jobs 320
    --skip 12000 --scale 100 --procs 100 --every 30 --accounting --priority fairshare --tail
    1200``). jufo cannot recompute fair share: ``jufo slurm config`` orders by the priority Slurm
    computed (``userprio``), and so planned, the walltime forecast is Slurm's own estimate on
    540 of 557 job-snapshots (96.9 %)."""
    score = lab_module("score")

    folder = unpack(tmp_path_factory, "lab-fairshare")
    site = (folder / "capture" / "0000" / "config.txt").read_text()
    assert "PriorityWeightFairShare" in site and "priority/multifactor" in site
    result = score.score(folder, history=False)
    assert result["fidelity_compared"] == 557 and result["fidelity_within_60s"] >= 0.95
    assert result["walltime"]["median_abs_error"] <= result["slurm"]["median_abs_error"]


def test_a_second_fair_share_lab_is_planned_in_the_priority_slurm_computed(tmp_path_factory):
    """lab-fairshare2.tar.xz (125 KB), recorded 2026-11-28 as ``lab-fairshare`` on another window
    (``--skip 20000``; the lab's folder written as /var/lib/jufo-lab): 105 captures in 53 minutes,
    608 pending job-snapshots. Ordered by the priority Slurm computed, the walltime forecast is
    Slurm's own estimate within 60 s on 569 of 576 (98.8 %)."""
    score = lab_module("score")

    folder = unpack(tmp_path_factory, "lab-fairshare2")
    assert "PriorityWeightFairshare=10000" in (folder / "slurm.conf.txt").read_text()
    result = score.score(folder, history=False)
    assert result["job_snapshots"] == 608 and result["fidelity_compared"] == 576
    assert result["fidelity_within_60s"] >= 0.95
    assert result["walltime"]["median_abs_error"] <= result["slurm"]["median_abs_error"]


def test_a_lab_whose_qos_limits_running_jobs_per_user(tmp_path_factory):
    """lab-limit.tar.xz (219 KB), recorded 2026-11-27: KTH's trace from its 16,000th job (320
    jobs, time / 100) on 100 nodes of 1 core, ``priority/basic``, the normal QOS letting each user
    run at most 5 jobs at once (``python lab/slurmlab.py run
    ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz --dir DIR --nodes 100 --cores 1 --jobs 320
    --skip 16000 --scale 100 --procs 100 --every 30 --accounting --user-limit 5``), 150 captures
    with ``qos.txt``. Of 2,887 pending job-snapshots 1,832 wait as QOSMaxJobsPerUserLimit, and
    Slurm gives an estimate for only 1,027 of all: jufo forecasts every one, and where Slurm
    has one, the walltime forecast is within 60 s of it on 928 (90.4 %)."""
    score = lab_module("score")

    folder = unpack(tmp_path_factory, "lab-limit")
    capture = folder / "capture" / "0060"
    assert "AccountingStorageEnforce" in (folder / "slurm.conf.txt").read_text()
    assert "QOSMaxJobsPerUserLimit" in (capture / "job.txt").read_text()
    snap = tmp_path_factory.mktemp("limit") / "snap.xml"
    assert CliRunner().invoke(main, ["slurm", "snapshot", "--from", str(capture), "-o", str(snap)]).exit_code == 0
    assert [o.data for o in lml.read(str(snap)).of_type("class")] == [{"name": "normal", "max_jobs_pu": "5"}]
    result = score.score(folder, history=False)
    assert result["job_snapshots"] == result["walltime"]["count"] == 2887
    assert result["slurm"]["count"] == result["fidelity_compared"] == 1027
    assert result["fidelity_within_60s"] >= 0.95  # (94.0 % while the plan let a user start past the limit)
    assert result["walltime"]["median_abs_error"] < result["starts now"]["median_abs_error"]


def test_slurms_pass_starts_no_job_past_its_users_qos_limit(tmp_path_factory):
    """At capture 0090 of lab-limit, user jlab2 runs 2 jobs and 8 of its pending jobs fit on
    free nodes, their reason still Priority. Slurm's backfill counts the jobs it starts against
    the QOS's MaxJobsPU (acct_policy_job_runnable_pre_select) and passes over the rest, so the
    walltime forecast (``plan=slurm``, as ``jufo slurm config`` writes it) starts 3 of them now,
    not all 8; Slurm's estimate for those it passed over is 90 to 254 s later."""
    folder = unpack(tmp_path_factory, "lab-limit")
    capture = folder / "capture" / "0090"
    out = tmp_path_factory.mktemp("limit0090")
    runner = CliRunner()
    for args in (["slurm", "snapshot", "--from", str(capture), "-o", str(out / "raw.xml")],
                 ["slurm", "config", "--from", str(capture), "-o", str(out / "site.xml")],
                 ["predict", str(out / "raw.xml"), "--config", str(out / "site.xml"), "-o", str(out / "out.xml")]):
        assert runner.invoke(main, args).exit_code == 0, args
    jobs = [o.data for o in lml.read(str(out / "out.xml")).of_type("job") if o.data.get("owner") == "jlab2"]
    running = [d for d in jobs if d.get("state") == "Running"]
    starting = [d for d in jobs if d.get("state") == "Pending" and d["jufo_starttime"] == "11/27/26-06:59:09"]
    assert len(running) == 2
    assert len(starting) + len(running) == 5, [d.get("step") for d in starting]


def _simulated_spans(capture, out) -> tuple[lml.Document, list[tuple[dict[str, str], int, int]]]:
    """``predict --set plan=simulate`` of a lab capture as ``jufo slurm snapshot`` and ``jufo
    slurm config`` read it (files in ``out``): the output, and each running or predicted job's
    data with the span it holds in the forecast (a running job's from the capture on)."""
    from jufo.io.dates import parse_date

    runner = CliRunner()
    for args in (["slurm", "snapshot", "--from", str(capture), "-o", str(out / "raw.xml")],
                 ["slurm", "config", "--from", str(capture), "-o", str(out / "site.xml")],
                 ["predict", str(out / "raw.xml"), "--config", str(out / "site.xml"), "--set", "plan=simulate",
                  "-o", str(out / "out.xml")]):
        assert runner.invoke(main, args).exit_code == 0, args
    doc = lml.read(str(out / "out.xml"))
    now = parse_date(doc.of_type("system")[0].data["system_time"])[0]
    return doc, [(d, now, parse_date(d["endtime"])[0]) if d["state"] == "Running" else
                 (d, parse_date(d["jufo_starttime"])[0], parse_date(d["jufo_endtime"])[0])
                 for d in (o.data for o in doc.of_type("job")) if d["state"] == "Running" or d.get("jufo_starttime")]


def test_a_lab_whose_qos_limits_the_jobs_each_account_runs(tmp_path_factory):
    """lab-account.tar.xz (182 KB), recorded 2026-12-03: lab-limit's window of KTH's trace (300
    jobs from the 16,000th, time / 100) on 100 nodes of 1 core, ``priority/basic``, six Unix
    users in two Slurm accounts, the normal QOS letting each account's users together run at
    most 6 jobs at once (``python lab/slurmlab.py run ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz
    --dir DIR --nodes 100 --cores 1 --jobs 300 --skip 16000 --scale 100 --procs 100 --every 30
    --accounting --users 6 --accounts 2 --account-limit 6 --tail 900``), 124 captures with
    ``qos.txt``. The simulation holds each account to 6 jobs at every instant of every capture
    (before jufo read ``MaxJobsPA``, an account ran up to 17 at once in it on 51 captures, since
    Slurm's reason capped only users running something), and the history forecast is 55 s from
    the real starts over all 2,542 pending job-snapshots (111 s before; "starts now" 188 s)."""
    score = lab_module("score")

    folder = unpack(tmp_path_factory, "lab-account")
    out = tmp_path_factory.mktemp("account")
    for capture in sorted((folder / "capture").iterdir())[60:110:5]:
        doc, spans = _simulated_spans(capture, out)
        assert [o.data for o in doc.of_type("class")] == [{"name": "normal", "max_jobs_pa": "6"}]
        for account in ("lab1", "lab2"):
            most = max(sum(d["account"] == account and s <= t < e for d, s, e in spans) for _, t, _ in spans)
            assert most <= 6, (capture.name, account, most)
    result = score.score(folder, history=True, every=4)
    assert result["job_snapshots"] == 645
    assert result["history"]["median_abs_error"] <= 0.4 * result["starts now"]["median_abs_error"], result["history"]
    assert result["history"]["within_5min"] >= 0.95 and 0.75 <= result["range"]["coverage"] <= 0.9


def test_a_lab_whose_qos_limits_all_its_jobs_together(tmp_path_factory):
    """lab-qos.tar.xz (157 KB), recorded 2026-12-04: lab-limit's window of KTH's trace (200 jobs
    from the 16,000th, time / 100) on 100 nodes of 1 core, ``priority/basic``, the normal QOS
    letting all its jobs together run at most 10 jobs and hold at most 60 cores at once
    (``GrpJobs=10``, ``GrpTRES=cpu=60``: ``python lab/slurmlab.py run
    ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz --dir DIR --nodes 100 --cores 1 --jobs 200
    --skip 16000 --scale 100 --procs 100 --every 30 --accounting --qos-cpus 60 --qos-jobs 10``),
    130 captures with ``qos.txt``. Slurm gives no estimate (``StartTime=Unknown``) for a job its
    QOS holds, and has one for 307 of the 2,624 pending job-snapshots. The simulation holds the
    QOS to 10 jobs and 60 cores at every instant of every capture checked (before jufo read
    ``GrpTRES`` it ran up to 100 cores at once), and on every 4th capture the history forecast
    is 87 s from the real starts (251 s before; "starts now" 379.5 s), its 80 % ranges held
    80.0 % at 1.2x the remaining wait (77.7 % at 5.6x before)."""
    score = lab_module("score")

    folder = unpack(tmp_path_factory, "lab-qos")
    out = tmp_path_factory.mktemp("qos")
    most = [0, 0]
    for capture in sorted((folder / "capture").iterdir())[10:100:10]:
        doc, spans = _simulated_spans(capture, out)
        assert [o.data for o in doc.of_type("class")] == [{"name": "normal", "grp_jobs": "10", "grp_tres": "cpu=60"}]
        for _, t, _ in spans:
            at = [int(d["totalcores"]) for d, s, e in spans if s <= t < e]
            most = [max(most[0], len(at)), max(most[1], sum(at))]
    assert most == [10, 60]
    result = score.score(folder, history=True, every=4)
    assert result["job_snapshots"] == 662
    assert result["history"]["median_abs_error"] <= 0.3 * result["starts now"]["median_abs_error"], result["history"]
    assert result["history"]["within_5min"] >= 0.75 and 0.75 <= result["range"]["coverage"] <= 0.85
    assert result["range"]["median_width"] <= 2 * result["range"]["median_remaining_wait"]


def test_a_lab_whose_qos_limits_all_its_jobs_together_without_the_limits(tmp_path_factory):
    """lab-qos without its ``qos.txt`` (what LLview 2's files give: no ``GrpJobs``, no
    ``GrpTRES``): the reasons ``QOSGrpJobsLimit`` and ``QOSGrpCpuLimit`` say the QOS is at its
    limit, so the simulation holds the QOS's jobs together to what it runs now (its largest
    waiting job's cores, where more), and every job-snapshot still gets a forecast. On every 4th
    capture the history forecast is 127 s from the real starts, where it was 251 s while each
    user was held to what the user ran ("starts now" 379.5 s)."""
    score = lab_module("score")

    folder = unpack(tmp_path_factory, "lab-qos")  # (a copy of its own)
    for qos in folder.glob("capture/*/qos.txt"):
        qos.unlink()
    result = score.score(folder, history=True, every=4)
    assert result["job_snapshots"] == result["history"]["count"] == 662
    assert result["history"]["median_abs_error"] <= 0.4 * result["starts now"]["median_abs_error"], result["history"]


def test_a_lab_whose_users_cancel_jobs_that_wait(tmp_path_factory):
    """lab-cancel.tar.xz (112 KB), recorded 2026-11-27: KTH's trace from its 24,000th job (320
    jobs, time / 100) on 100 nodes of 1 core, ``priority/basic``, each of 57 jobs cancelled if
    still pending 1–10 minutes after its submit (``python lab/slurmlab.py run
    ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz --dir DIR --nodes 100 --cores 1 --jobs 320
    --skip 24000 --scale 100 --procs 100 --every 30 --accounting --cancel 0.15 --tail 1200``):
    4 were (109, 138, 149, 166), shown by scontrol with StartTime = EndTime and by this sacct
    with Start None. None of their 15 pending job-snapshots is scored, since they never started;
    measured on all 75 captures: 1,186 job-snapshots, the walltime forecast within 60 s of
    Slurm's estimate on 98.4 %, the history forecast 23.5 s against Slurm's 128 s (0.18x;
    25 s and 78.5 % within 60 s before cancelled jobs were read as never run, 83.2 % then;
    24 s and 82.7 % since jufo expects cancellations)."""
    score = lab_module("score")

    from jufo.io import accounting

    folder = unpack(tmp_path_factory, "lab-cancel")
    cancelled = {"109", "138", "149", "166"}
    records, counts = accounting.read_sacct(accounting.text_lines(str(folder / "sacct.txt")), "sacct.txt")
    assert {r.id for r in records if r.never_ran} == cancelled and counts["never_ran"] == 4
    real = score.real_starts(sorted((folder / "capture").iterdir()))
    assert not cancelled & set(real) and len(real) == 316
    result = score.score(folder, history=True, every=3)
    assert result["fidelity_within_60s"] >= 0.95
    assert result["history"]["median_abs_error"] <= 0.25 * result["slurm"]["median_abs_error"], result["history"]
    assert result["history"]["within_60s"] >= 0.75 and 0.75 <= result["range"]["coverage"] <= 0.9


def test_a_lab_where_a_fifth_of_the_waiting_jobs_are_cancelled(tmp_path_factory):
    """lab-cancel2.tar.xz (111 KB), recorded 2026-11-27: KTH's trace from its 18,000th job
    (320 jobs, time / 100) on 100 nodes of 1 core, ``priority/basic``, 125 jobs given a patience
    of 1–10 minutes (``python lab/slurmlab.py run ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz
    --dir DIR --nodes 100 --cores 1 --jobs 320 --skip 18000 --scale 100 --procs 100 --every 30
    --accounting --cancel 0.4 --tail 900``): 14 were cancelled while pending. Measured on all 93
    captures: 698 job-snapshots of jobs that started (64 more of the cancelled ones, no longer
    scored), the walltime forecast within 60 s of Slurm's estimate on 97.0 %, the history
    forecast 23 s against Slurm's 71.5 s (0.32x; 25 s before jufo expected cancellations, 84.7 %
    within 60 s against 80.7 %). The jobs behind a cancelled one start earlier than a forecast
    that runs every waiting job; jufo before cancelled jobs were read as never run learned a
    0-s run from each, which pulled its forecasts earlier by chance: 17 s on the same 698."""
    score = lab_module("score")

    from jufo.io import accounting

    folder = unpack(tmp_path_factory, "lab-cancel2")
    records, counts = accounting.read_sacct(accounting.text_lines(str(folder / "sacct.txt")), "sacct.txt")
    cancelled = {r.id for r in records if r.never_ran}
    assert counts["never_ran"] == len(cancelled) == 14
    assert not cancelled & set(score.real_starts(sorted((folder / "capture").iterdir())))
    rows: list[dict] = []
    result = score.score(folder, history=True, every=3, rows=rows)
    assert result["fidelity_within_60s"] >= 0.95
    assert result["history"]["median_abs_error"] <= 0.5 * result["slurm"]["median_abs_error"], result["history"]
    # the rows score.py --rows writes: one per job-snapshot scored, the same errors
    assert len(rows) == result["job_snapshots"] and set(rows[0]) == set(score.ROW_FIELDS)
    errors = sorted(abs(r["actual"] - r["history"]) for r in rows if r["history"] is not None)
    assert errors[(len(errors) - 1) // 2] <= result["history"]["median_abs_error"] <= errors[len(errors) // 2]
    assert any("cancellations" in (r["model"] or "") for r in rows)  # the forecast expected them


def _most_cores_at_once(forecast) -> dict[str, int]:
    """Each user's most cores at one instant of the forecast: running jobs from their start,
    waiting ones from their forecast start, each until its forecast end."""
    from jufo.io.dates import parse_date

    events: dict[str, list[tuple[int, int]]] = {}
    for obj in lml.read(str(forecast)).of_type("job"):
        d = obj.data
        start = d.get("starttime") if d.get("state") == "Running" else d.get("jufo_starttime")
        if not start or not start[:1].isdigit() or not d.get("jufo_endtime"):
            continue
        cores = int(d["totalcores"])
        events.setdefault(d["owner"], []).extend([(parse_date(start)[0], cores),
                                                  (parse_date(d["jufo_endtime"])[0], -cores)])
    most = {}
    for user, changes in events.items():
        level = best = 0
        for _, change in sorted(changes, key=lambda e: (e[0], e[1])):  # ends before starts
            level += change
            best = max(best, level)
        most[user] = best
    return most


def test_a_lab_whose_qos_limits_the_cores_each_user_holds(tmp_path_factory):
    """lab-cpus.tar.xz (143 KB), recorded 2026-11-27: KTH's trace from its 8,000th job (320 jobs,
    time / 100) on 100 nodes of 1 core, ``priority/basic``, the normal QOS holding each user to
    30 CPUs at once (``python lab/slurmlab.py run ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz
    --dir DIR --nodes 100 --cores 1 --jobs 320 --skip 8000 --scale 100 --procs 100 --every 30
    --accounting --user-cpus 30 --tail 1200``); 129 captures with ``qos.txt`` in 64 minutes.
    Of 1,425 pending job-snapshots 1,406 wait as QOSMaxCpuPerUserLimit; Slurm has an estimate
    for 74, off by 1,944 s (median). Measured on all captures: the walltime forecast 122 s
    median absolute error (298 s before MaxTRESPU was read), within 5 min 77.8 % (51.2 %). The
    simulation's plan holds every user to 30 cores (before: up to 90); without ``qos.txt`` it
    is the forecast of before."""
    import shutil

    score = lab_module("score")

    folder = unpack(tmp_path_factory, "lab-cpus")
    captures = sorted((folder / "capture").iterdir())
    snap, out = folder / "snap.xml", folder / "out.xml"
    for cap in captures[10::20]:
        assert CliRunner().invoke(main, ["slurm", "snapshot", "--from", str(cap), "-o", str(snap)]).exit_code == 0
        assert [o.data for o in lml.read(str(snap)).of_type("class")] == [{"name": "normal", "max_tres_pu": "cpu=30"}]
        done = CliRunner().invoke(main, ["predict", str(snap), "-o", str(out), "-q", "--set", "plan=simulate"])
        assert done.exit_code == 0, done.output
        assert max(_most_cores_at_once(out).values()) <= 30, cap.name
    blind = tmp_path_factory.mktemp("blind")  # the same record without qos.txt: no MaxTRESPU known
    shutil.copytree(folder / "capture", blind / "capture")
    shutil.copy(folder / "sacct.txt", blind / "sacct.txt")
    for qos in (blind / "capture").glob("*/qos.txt"):
        qos.unlink()
    known, unknown = (score.score(where, history=False, every=4) for where in (folder, blind))
    assert known["job_snapshots"] == unknown["job_snapshots"] > 300
    assert known["walltime"]["median_abs_error"] < 0.6 * unknown["walltime"]["median_abs_error"], \
        (known["walltime"], unknown["walltime"])
    assert known["walltime"]["within_5min"] > unknown["walltime"]["within_5min"] + 0.15
    assert known["walltime"]["median_abs_error"] < 0.5 * known["starts now"]["median_abs_error"]


def test_a_lab_with_one_unix_user_for_each_trace_user(tmp_path_factory):
    """lab-users.tar.xz (138 KB): the first KTH lab's workload, the same 320 jobs at the same
    times, recorded again 2026-11-27 with each of the window's 34 trace users its own Unix user
    (``slurmlab.py run ... --skip 5000 --users 40``), where the first lab had three. Measured on
    all 101 captures (``python lab/score.py DIR --history``): the walltime forecast within 60 s
    of Slurm's estimate on 97.0 % of 824; Slurm's estimate 89 s median absolute error, the
    history forecast 29 s (0.33×, within 5 min 97.5 %), "starts now" 96 s; ranges held 79.3 %
    of 760 at 160 s against a remaining wait of 96 s; with the real run times (``--exact``)
    3 s. Users of their own do not take the history forecast to 0.25× Slurm's: its run times
    at submit are as good as on the first lab (14.5 s median error against 15.5 s). Here every
    third capture."""
    score = lab_module("score")

    lab = unpack(tmp_path_factory, "lab-users")
    users = {line.split("\t")[3] for line in (lab / "submitted.tsv").read_text().splitlines()[1:]}
    assert len(users) == 34
    result = score.score(lab, history=True, every=3)
    assert result["fidelity_compared"] > 200
    assert result["fidelity_within_60s"] >= 0.9, result["differ_examples"][:5]
    assert result["history"]["median_abs_error"] <= 0.45 * result["slurm"]["median_abs_error"]
    assert result["history"]["within_5min"] >= result["slurm"]["within_5min"]
    assert result["history"]["median_abs_error"] < result["starts now"]["median_abs_error"]


def test_the_history_forecast_holds_to_slurms_backfill_limits(tmp_path_factory):
    """A lab whose Slurm limits its backfill (``bf_max_job_user=2,bf_min_age_reserve=60``, up
    to 139 pending): the simulation behind the history forecast holds its passes to the same
    limits, so a user's jobs past the second wait for the head of the queue, as in Slurm.
    Measured on all 149 captures: 112 s median absolute error over 6,993 job-snapshots (170 s
    before the simulation held to them; "starts now" 385 s), within 5 min 80.7 % (71.5 %); on
    the 1,269 Slurm estimated, Slurm 65 s, the history forecast 73 s (100 s). Here every fifth
    capture: 106 s against 175 s with the limits turned off."""
    score = lab_module("score")

    lab = unpack(tmp_path_factory, "lab-bflimits2")
    held = score.score(lab, history=True, every=5)
    free = score.score(lab, history=True, every=5, settings=["plan_max_job_user=0", "plan_min_age_reserve=0"])
    assert held["history"]["count"] == free["history"]["count"] > 1000
    assert held["history"]["median_abs_error"] <= 0.7 * free["history"]["median_abs_error"]
    assert held["history"]["median_abs_error"] < 0.4 * held["starts now"]["median_abs_error"]
    assert held["history"]["within_5min"] >= free["history"]["within_5min"] + 0.08
    assert 0.75 <= held["range"]["coverage"] <= 0.9


def test_a_lab_whose_jobs_ask_as_users_write_them(tmp_path_factory):
    """lab-shapes.tar.xz (142 KB), recorded 2026-11-29 and used for nothing else: the mixed shape
    on another window of HPC2N (300 jobs from the 122,000th, time / 75), its shared jobs asked
    as users write them (a quarter ``-N 2 --ntasks-per-node=k``, a fifth ``-c 2`` tasks, a tenth
    ``--mincpus=2``, a sixth ``--gres=gpu:1``), 8 of the shared partition's 16 nodes with 2 GPUs
    each and ``Weight=10`` (``python lab/slurmlab.py run ../shared/traces/HPC2N-2002-2.1-cln.swf.gz
    --dir DIR --nodes 32 --cores 4 --jobs 300 --skip 122000 --scale 75 --procs 120 --partitions
    mixed --priority multifactor --accounting --every 30 --tail 1200 --gpus 2 --gpu-nodes 8
    --gpu-weight 10 --shapes``; 127 captures in 64 minutes). On all 127: the walltime forecast
    within 60 s of Slurm's estimate on 92.5 % of 2,693 job-snapshots (78.2 % with the code
    before it read --ntasks-per-node, --mincpus, node weights and the will-run test's view of
    GPU jobs, 87.0 % before an array's waiting tasks asked the nodes of their TRES; 98.0 % of
    the 1,868 in captures taken after Slurm's last pass saw the latest change); history
    forecast 39 s against Slurm's 323 s median absolute error."""
    score = lab_module("score")

    result = score.score(unpack(tmp_path_factory, "lab-shapes"), history=True, every=3)
    assert result["fidelity_compared"] > 800
    # 97.0 % (90.9 % before an array's tasks asked their TRES's nodes; 82.8 % before the shapes)
    assert result["fidelity_within_60s"] >= 0.93, result["differ_examples"][:5]
    # where Slurm's last pass had seen the capture's latest change (score.newer_than_last_pass): 98.6 % of 581
    assert result["fidelity_seen_by_last_pass"]["within_60s"] >= 0.95, result["fidelity_seen_by_last_pass"]
    assert result["history"]["median_abs_error"] <= 0.25 * result["slurm"]["median_abs_error"]
    assert result["history"]["within_5min"] >= 2 * result["slurm"]["within_5min"]


def test_a_lab_under_fair_share_with_memory_a_consumable(tmp_path_factory):
    """lab-memory.tar.xz (141 KB), recorded 2026-11-29 and used for nothing else: the mixed shape
    on a third window of HPC2N (300 jobs from the 60,000th, time / 100) with fair share (five
    users), memory a consumable (``CR_Core_Memory``, 100 MB a CPU by default, an eighth of the
    shared jobs ``--mem-per-cpu=300`` on nodes of 1,000 MB) and the shapes of
    ``test_a_lab_whose_jobs_ask_as_users_write_them`` (``python lab/slurmlab.py run
    ../shared/traces/HPC2N-2002-2.1-cln.swf.gz --dir DIR --nodes 32 --cores 4 --jobs 300 --skip
    60000 --scale 100 --procs 120 --partitions mixed --priority fairshare --accounting --every 30
    --tail 1200 --memory --shapes --cancel 0.1 --users 5``; 134 captures in 68 minutes). On all
    134: the walltime forecast within 60 s of Slurm's estimate on 94.1 % of 6,621 job-snapshots;
    history forecast 311 s against Slurm's 776 s median absolute error (0.40×, short of the
    0.25× the other records reach): later jobs of lighter users overtake (given the real run
    times, job-snapshots overtaken by more than ten later jobs start 407 s after the forecast,
    those overtaken by none 22 s before it)."""
    score = lab_module("score")

    lab = unpack(tmp_path_factory, "lab-memory")
    raw = lab / "capture-0048.xml"
    assert CliRunner().invoke(main, ["slurm", "snapshot", "--from", str(lab / "capture" / "0048"),
                                     "-o", str(raw)]).exit_code == 0
    jobs = {o.data["step"]: o.data for o in lml.read(str(raw)).of_type("job")}
    # -n 4 --mem-per-cpu=300: three CPUs fill a node's 1,000 MB, so two nodes, as NumNodes says
    assert (jobs["62"]["numnodes"], jobs["62"]["totalcores"], jobs["62"]["mempercpu"]) == ("2", "4", "300")
    result = score.score(lab, history=True, every=3)
    assert result["fidelity_compared"] > 2000
    assert result["fidelity_within_60s"] >= 0.92, result["differ_examples"][:5]  # 95.2 % of 2,224
    assert result["fidelity_seen_by_last_pass"]["within_60s"] >= 0.94  # 96.6 % of 1,571
    # 303.5 s against Slurm's 820.5 s and "starts now" 609.5 s; within 5 min 49.6 % against 29.0 %
    assert result["history"]["median_abs_error"] <= 0.45 * result["slurm"]["median_abs_error"]
    assert result["history"]["median_abs_error"] <= 0.6 * result["starts now"]["median_abs_error"]
    assert result["history"]["within_5min"] >= 1.5 * result["slurm"]["within_5min"]
    assert 0.7 <= result["range"]["coverage"] <= 0.85  # 76.5 % of 2,069


def test_a_third_kth_lab_recorded_after_the_model_was_made(tmp_path_factory):
    """lab-kth3.tar.xz (81 KB), recorded 2026-11-29 and used for nothing else: another window of
    KTH-SP2 (300 jobs from the 24,000th, time / 60) on 64 nodes of one core, ``priority/basic``,
    one exclusive partition (``python lab/slurmlab.py run
    ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz --dir DIR --nodes 64 --cores 1 --jobs 300 --skip
    24000 --scale 60 --procs 100 --every 30 --tail 1200 --accounting --ports 1000``; 117 captures
    in 60 minutes). On all 117: the walltime forecast within 60 s of Slurm's estimate on 95.9 % of
    1,253 job-snapshots (every one of the 753 where Slurm's last pass had seen the latest change);
    history forecast 28 s against Slurm's 168 s median absolute error (0.17×), within 60 s 72.3 %
    against 20.0 %, "starts now" 91 s; 80 % ranges held 77.2 % of 1,209."""
    score = lab_module("score")

    result = score.score(unpack(tmp_path_factory, "lab-kth3"), history=True, every=3)
    assert result["fidelity_compared"] > 400
    assert result["fidelity_within_60s"] >= 0.88, result["differ_examples"][:5]  # 90.7 % of 428
    assert result["fidelity_seen_by_last_pass"]["within_60s"] >= 0.98  # 231 of 231
    # 20 s against Slurm's 190 s and "starts now" 93 s; within 60 s 80.0 % against 17.8 %
    assert result["history"]["median_abs_error"] <= 0.25 * result["slurm"]["median_abs_error"]
    assert result["history"]["within_60s"] >= 2 * result["slurm"]["within_60s"]
    assert result["history"]["within_5min"] >= result["slurm"]["within_5min"]
    assert 0.75 <= result["range"]["coverage"] <= 0.85  # 79.6 % of 397


def test_a_fair_share_lab_whose_usage_decays_as_slurms_default(tmp_path_factory):
    """lab-fairshare3.tar.xz (109 KB), recorded 2026-11-29 and used for nothing else: the mixed
    shape on a fourth window of HPC2N (300 jobs from the 90,000th, time / 100) with fair share
    over five users whose usage halves every 101 lab minutes, Slurm's default of 7 days at this
    scale, where the other fair-share records halve it every 10 (``python lab/slurmlab.py run
    ../shared/traces/HPC2N-2002-2.1-cln.swf.gz --dir DIR --nodes 32 --cores 4 --jobs 300 --skip
    90000 --scale 100 --procs 120 --partitions mixed --priority fairshare --accounting --every 30
    --tail 600 --users 5 --halflife 101 --ports 1000``; 129 captures in 64 minutes). On all 129:
    the walltime forecast within 60 s of Slurm's estimate on 98.7 % of 3,814 job-snapshots; the
    history forecast 103 s against Slurm's 275 s median absolute error (0.37×), and unbiased
    (median error +2 s, where `lab-memory`'s fast-swinging priorities left it +225 s); given the
    real run times 22 s. Its ranges held 77.6 % of 3,864 (72.0 % of 2,708 before they reached
    as far as the jobs still waiting had waited)."""
    score = lab_module("score")

    lab = unpack(tmp_path_factory, "lab-fairshare3")
    assert "PriorityDecayHalfLife=0-01:41:00" in (lab / "slurm.conf.txt").read_text()
    result = score.score(lab, history=True, every=3)
    assert result["fidelity_compared"] > 1200
    assert result["fidelity_within_60s"] >= 0.97, result["differ_examples"][:5]  # 1,265 of 1,265
    # 111.5 s against Slurm's 259 s and "starts now" 572 s; within 5 min 70.8 % against 51.9 %
    assert result["history"]["median_abs_error"] <= 0.5 * result["slurm"]["median_abs_error"]
    assert result["history"]["median_abs_error"] <= 0.25 * result["starts now"]["median_abs_error"]
    assert abs(result["history"]["median_error"]) <= 60  # +3 s
    assert result["history"]["within_5min"] >= 1.3 * result["slurm"]["within_5min"]
    # 76.9 % of 1,261 held (66.9 % of 786 before the ranges reached as far as jobs still
    # waiting had waited: the rest had none)
    assert result["range"]["with_range"] > 1200
    assert 0.72 <= result["range"]["coverage"] <= 0.88


def test_a_lab_with_a_sites_mix_of_settings(tmp_path_factory):
    """lab-site.tar.xz (104 KB), recorded 2026-11-29 and used for nothing else: several of a
    site's settings at once on a KTH window (300 jobs from the 16,000th, time / 100, on 32
    four-core nodes): fair share over eight users whose usage halves every 101 lab minutes
    (Slurm's default of 7 days at this scale) with age, a QOS that runs at most 8 jobs per
    user, 5 % of jobs cancelled 1-10 minutes after their submit if still pending, and a second,
    higher-tier partition over half the nodes that no job asked for (``python lab/slurmlab.py
    run ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz --dir DIR --nodes 32 --cores 4 --jobs 300
    --skip 16000 --scale 100 --procs 100 --partitions overlap --priority fairshare --halflife
    101 --accounting --every 30 --tail 900 --users 8 --cancel 0.05 --user-limit 8 --ports
    1000``; 124 captures in 62 minutes). On all 124: the walltime forecast within 60 s of
    Slurm's estimate on 98.1 % of 1,941 job-snapshots; the history forecast 75 s against
    Slurm's 136 s median absolute error (0.55×, on the same job-snapshots too), "starts now"
    184 s; given the real run times 61 s; its ranges held 89.3 % of 1,931."""
    score = lab_module("score")

    lab = unpack(tmp_path_factory, "lab-site")
    conf = (lab / "slurm.conf.txt").read_text()
    assert "PriorityDecayHalfLife=0-01:41:00" in conf and "PriorityTier=2" in conf
    result = score.score(lab, history=True, every=3)
    assert result["fidelity_compared"] > 600
    assert result["fidelity_within_60s"] >= 0.97, result["differ_examples"][:5]  # 647 of 648
    # 70 s against Slurm's 141 s and "starts now" 184 s; within 5 min 88.8 % against 79.0 %
    assert result["history"]["median_abs_error"] <= 0.6 * result["slurm"]["median_abs_error"]
    assert result["history"]["median_abs_error"] <= 0.5 * result["starts now"]["median_abs_error"]
    assert abs(result["history"]["median_error"]) <= 60  # +5 s
    assert result["history"]["within_5min"] >= 1.05 * result["slurm"]["within_5min"]
    # 90.1 % of 626 held: more than the 80 % promised (the ranges widen where the latest held
    # less, and are never narrowed)
    assert result["range"]["with_range"] > 600
    assert 0.78 <= result["range"]["coverage"] <= 0.95


def test_a_lab_recorded_in_berlin_time_is_read_in_its_own_clock(tmp_path_factory, tmp_path):
    """lab-berlin.tar.xz (88 KB), recorded 2026-11-29 with every daemon and every capture under
    ``TZ=Europe/Berlin`` (UTC+1), so scontrol, sdiag and sacct print the time an hour ahead of
    UTC, as at a site in central Europe: KTH-SP2's 160 jobs from the 9,000th, time / 100, on 100
    nodes of one core (``python lab/slurmlab.py run ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz
    --dir DIR --install --nodes 100 --cores 1 --jobs 160 --skip 9000 --scale 100 --procs 100
    --every 30 --accounting --tail 900``; 94 captures in 47 minutes, 315 pending job-snapshots).
    On all of them (``python lab/score.py DIR --history``, on a machine in UTC): the walltime
    forecast within 60 s of Slurm's estimate on 99.3 % of 295, history forecast 36 s against
    Slurm's 73 s median absolute error, 80 % ranges held 78.9 % of 266. jufo before it read the
    snapshot's time in the site's clock: 4.1 %, 2,563 s, 2.3 %. On every third capture, as here:
    99.0 % of 97, 36 s against 78 s, within 60 s 74.3 % against 43.3 %, ranges 77.3 % of 75."""
    score = lab_module("score")

    lab = unpack(tmp_path_factory, "lab-berlin")
    first = lab / "capture" / "0000"
    as_of = (first / "config.txt").read_text().splitlines()[0].rsplit(" ", 1)[1]
    from jufo.io.dates import parse_date

    assert parse_date(as_of)[0] - int((first / "at").read_text()) == 3600  # printed an hour ahead of UTC
    raw = tmp_path / "raw.xml"
    assert CliRunner().invoke(main, ["slurm", "snapshot", "--from", str(first), "-o", str(raw)]).exit_code == 0
    assert parse_date(lml.read(str(raw)).of_type("system")[0].data["system_time"])[0] == parse_date(as_of)[0]
    result = score.score(lab, history=True, every=3)
    assert result["fidelity_compared"] > 80
    assert result["fidelity_within_60s"] >= 0.95, result["differ_examples"][:5]
    assert result["history"]["median_abs_error"] <= 0.5 * result["slurm"]["median_abs_error"]
    assert result["history"]["within_60s"] >= 1.5 * result["slurm"]["within_60s"]
    assert result["history"]["within_5min"] >= result["slurm"]["within_5min"]
    assert 0.7 <= result["range"]["coverage"] <= 0.9


def test_a_gpu_lab_whose_jobs_wait_for_gpus_is_forecast_with_them(tmp_path_factory):
    """lab-gpus.tar.xz (125 KB), recorded 2026-11-29: 16 nodes of 4 cores, an exclusive
    partition and a core-shared one whose 8 nodes have one GPU each, 60 % of the shared jobs
    asking ``--gres=gpu:1`` (227 of 404), so the GPUs run out before the cores: KTH-SP2's 400
    jobs from the 21,000th, time / 100 (``python lab/slurmlab.py run
    ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz --dir DIR --nodes 16 --cores 4 --gpus 1
    --partitions mixed --gpu-jobs 0.6 --jobs 400 --skip 21000 --scale 100 --procs 100 --every 30
    --tail 900 --accounting``; 132 captures in 66 minutes, 1,619 pending job-snapshots). On all of
    them (``python lab/score.py DIR --history``): the walltime forecast within 60 s of Slurm's
    estimate on 96.2 % of 1,305; the history forecast 26 s median absolute error against Slurm's
    105 s (on the job-snapshots Slurm estimated: 18 s against 105 s, 0.17x), within 60 s 74.3 %
    against 37.3 %, ranges held 86.5 % of 1,569. jufo before its simulation counted GPUs: 50 s
    (38 s against 105 s, 0.36x), 59.3 %, ranges 82.3 %. On every third capture, as here: 94.1 %
    of 439, 26 s against 104 s, within 60 s 74.7 % against 39.0 %, ranges 86.4 % of 484 (before:
    51 s, 58.2 %, 81.8 %). Since ranges reach toward now as far as recent jobs ended short of
    their predicted run times (2026-12-01), they hold more than promised here: 91.7 % of all,
    91.9 % on every third capture, at 1.12x the remaining wait where they were 0.90x."""
    score = lab_module("score")
    lab = unpack(tmp_path_factory, "lab-gpus")
    asked = json.loads((lab / "workload.json").read_text())
    assert sum("--gres=gpu:1" in job["extra"] for job in asked) >= 200
    assert "Gres=gpu:1" in (lab / "slurm.conf.txt").read_text()
    result = score.score(lab, history=True, every=3)
    assert result["fidelity_compared"] > 400
    assert result["fidelity_within_60s"] >= 0.93, result["differ_examples"][:5]
    assert result["history"]["median_abs_error"] <= 0.3 * result["slurm"]["median_abs_error"]
    assert result["history"]["within_60s"] >= 1.7 * result["slurm"]["within_60s"]
    assert result["history"]["within_5min"] >= result["slurm"]["within_5min"]
    assert 0.75 <= result["range"]["coverage"] <= 0.95


def test_a_lab_under_slurms_default_backfill_interval_with_a_burst_at_its_start(tmp_path_factory):
    """lab-default.tar.xz (77 KB), recorded 2026-12-01 with Slurm's default ``bf_interval=30``
    (every other record has 5): the mixed shape on HPC2N's 300 jobs from the 130,000th, all
    submitted within the first seconds, time / 75 (``python lab/slurmlab.py run
    ../shared/traces/HPC2N-2002-2.1-cln.swf.gz --dir DIR --nodes 32 --cores 4 --jobs 300 --skip
    130000 --scale 75 --procs 240 --partitions mixed --priority multifactor --accounting --every
    30 --tail 1200 --bf-interval 30``; 42 captures in 21 minutes, 4,430 pending job-snapshots;
    the record ends 20 minutes after the last submission, 144 jobs still waiting). On all of
    them (``python lab/score.py DIR --history``): the walltime forecast within 60 s of Slurm's
    estimate on 94.5 % of 4,420; the history forecast 82 s median absolute error against
    Slurm's 622 s (0.13x on the same job-snapshots), within 5 min 88.4 % against 26.0 %; 80 %
    ranges held 88.6 % of 4,237. The burst waits in the record's first minutes, when ranges were
    cut from a few quick starters: before ranges reached all the way to the walltime forecast
    while fewer than 30 overruns were known, they held 56.5 % (on the first 42 captures of a run
    of the same window, with the same code). On every third capture, as here: 92.9 % of 1,411,
    83 s against 621 s, within 5 min 88.6 % against 26.7 %, ranges 76.4 % of 1,222 (55.5 % before)."""
    score = lab_module("score")
    lab = unpack(tmp_path_factory, "lab-default")
    assert "bf_interval=30," in (lab / "slurm.conf.txt").read_text()
    result = score.score(lab, history=True, every=3, rewind=True)
    assert result["fidelity_compared"] > 1300
    # where the capture is newer than Slurm's last pass (76.9 % of 433), planned as Slurm saw it then: 95.8 %
    assert result["fidelity_newer_planned_as_last_pass_saw"]["within_60s"] >= 0.93
    assert result["fidelity_within_60s"] >= 0.9, result["differ_examples"][:5]
    assert result["history"]["median_abs_error"] <= 0.25 * result["slurm"]["median_abs_error"]
    assert result["history"]["within_5min"] >= 2 * result["slurm"]["within_5min"]
    assert 0.7 <= result["range"]["coverage"] <= 0.9


def test_a_lab_record_scored_in_its_traces_time_as_a_backtest_scores_a_trace(tmp_path_factory):
    """``score.py --scale 75`` on lab-default (HPC2N's time / 75): each lab second counts 75 trace
    seconds, so the errors are the lab's times 75, the ranges held the same share, and every
    job-snapshot falls in one class of its real wait; Slurm's estimate is counted where the lab
    score counts it (not stale)."""
    score = lab_module("score")
    lab = unpack(tmp_path_factory, "lab-default")
    rows: list[dict] = []
    result = score.score(lab, history=True, every=6, rows=rows)
    trace = score.in_trace_time(rows, 75)
    overall = trace["overall"]
    assert overall["history"]["count"] == result["history"]["count"] == len(rows)
    assert abs(overall["history"]["median_abs_error"] - 75 * result["history"]["median_abs_error"]) <= 75
    assert abs(overall["batch system"]["median_abs_error"] - 75 * result["slurm"]["median_abs_error"]) <= 75
    assert overall["batch system"]["count"] == result["slurm"]["count"]
    assert overall["history"]["coverage"] == pytest.approx(result["range"]["coverage"])
    assert sum(block["history"]["count"] for block in trace["by_wait"].values()) == len(rows)
    longest = trace["by_wait"]["over 6 h"]["starts now"]
    assert longest["count"] and longest["within_1h"] == 0  # a wait over 6 h is over 1 h from "now"
    text = score.table({**result, "scale": 75, "in_trace_time": trace})
    assert "in the trace's time (x 75" in text and "over 6 h" in text


def test_a_kth_lab_under_slurms_default_backfill_interval_is_planned_as_slurm_saw_it(tmp_path_factory):
    """lab-kthd.tar.xz (149 KB), recorded 2026-12-01: lab-kth's window (KTH-SP2's 320 jobs from
    the 5,000th, time / 100, 100 one-core nodes, priority/basic) under Slurm's default
    ``bf_interval=30`` (``python lab/slurmlab.py run ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz
    --dir DIR --install --nodes 100 --cores 1 --jobs 320 --skip 5000 --scale 100 --procs 100 --every
    30 --accounting --bf-interval 30``; 102 captures in 51 minutes, 1,392 pending job-snapshots).
    Jobs end every few seconds and Slurm plans every 30, so most captures show a change its last
    pass had not seen: there its estimates are older than the capture, and jufo's plan of the
    capture is within 60 s of them on 79.3 % of 966 (100 % of 203 where the pass had seen
    everything). Planned as Slurm saw them at that pass (``score.rewound``), 99.2 % of the 966.
    On all captures: Slurm's estimate 78 s median absolute error, the walltime forecast 62 s, the
    history forecast 33 s (within 5 min 99.0 % against 85.3 %), ranges 74.4 % of 1,343 (78.0 %
    since they reach toward now). On every third capture, as here: fidelity 85.8 % of 379, as
    Slurm saw them 99.4 % of 322; 33 s against 90 s (34 s on Slurm's job-snapshots, 0.38x),
    ranges 73.8 % of 397 (78.1 %)."""
    score = lab_module("score")
    lab = unpack(tmp_path_factory, "lab-kthd")
    assert "bf_interval=30," in (lab / "slurm.conf.txt").read_text()
    result = score.score(lab, history=True, every=3, rewind=True)
    assert result["fidelity_compared"] > 350
    seen, newer = result["fidelity_seen_by_last_pass"], result["fidelity_newer_than_last_pass"]
    as_seen = result["fidelity_newer_planned_as_last_pass_saw"]
    assert seen["within_60s"] >= 0.95 and newer["compared"] > 4 * seen["compared"]
    assert as_seen["compared"] == newer["compared"]
    assert as_seen["within_60s"] >= 0.95 > newer["within_60s"]
    assert result["history"]["median_abs_error"] <= 0.5 * result["slurm"]["median_abs_error"]
    assert result["history"]["median_abs_error"] < result["walltime"]["median_abs_error"]
    assert result["history"]["within_5min"] >= result["slurm"]["within_5min"]
    assert 0.65 <= result["range"]["coverage"] <= 0.9


def test_a_quiet_kth_window_under_slurms_default_backfill_interval(tmp_path_factory):
    """lab-kth4.tar.xz (129 KB), recorded 2026-12-01/02: KTH-SP2's jobs from the 26,500th, a
    window no record had used, time / 100, 100 one-core nodes, priority/basic, Slurm's default
    ``bf_interval=30`` (``python lab/slurmlab.py run ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz
    --dir DIR --nodes 100 --cores 1 --jobs 320 --skip 26500 --scale 100 --procs 100 --every 30
    --accounting --bf-interval 30 --ports 1000``; ended by hand after 66 minutes, 310 jobs
    submitted, 133 captures). The window kept the machine mostly free: 89 pending job-snapshots.
    On all of them (``python lab/score.py DIR --history --rewind``): the walltime forecast within
    60 s of Slurm's estimate on 92.6 % of 54 (100 % of the 9 its last pass had seen, 91.1 % of 45
    newer, 100 % of those planned as the pass saw them); Slurm's estimate 39 s median absolute
    error (the jobs ahead ended before their limits, and waiting jobs started at once), the
    walltime forecast 38 s, the history forecast 3 s (0.08x), within 60 s 100 % against 81.5 %;
    ranges held 47 of 47."""
    score = lab_module("score")
    lab = unpack(tmp_path_factory, "lab-kth4")
    assert "bf_interval=30," in (lab / "slurm.conf.txt").read_text()
    assert sum(1 for _ in open(lab / "sacct.txt")) > 300
    result = score.score(lab, history=True, rewind=True)
    assert result["fidelity_compared"] > 50
    assert result["fidelity_within_60s"] >= 0.9, result["differ_examples"][:5]
    assert result["fidelity_newer_planned_as_last_pass_saw"]["within_60s"] >= 0.95
    assert result["history"]["median_abs_error"] <= 0.25 * result["slurm"]["median_abs_error"]
    assert result["history"]["within_60s"] >= result["slurm"]["within_60s"]
    assert result["range"]["with_range"] > 40 and result["range"]["coverage"] >= 0.8


def sacct_states(lab) -> list[str]:
    """Each job's state in a lab record's ``sacct.txt`` (``CANCELLED by 0`` read as ``CANCELLED``)."""
    return [line.rsplit("|", 1)[-1].split()[0] for line in open(lab / "sacct.txt")][1:]


def test_a_kth_lab_whose_jobs_run_into_their_limits_as_on_the_real_machine(tmp_path_factory):
    """lab-timeouts.tar.xz (176 KB), recorded 2026-12-02: KTH-SP2's jobs from the 7,000th, a
    window no record had used, time / 100, 100 one-core nodes, priority/basic, Slurm's default
    ``bf_interval=30``, and ``--timeouts``: the 66 of 320 jobs that ran 98 % of their limit or
    more on the real machine run into it again, and Slurm kills them 1-29 s after it (20 s in the
    median), at its 30-second limit check (state TIMEOUT; ``python lab/slurmlab.py run
    ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz --dir DIR --nodes 100 --cores 1 --jobs 320
    --skip 7000 --scale 100 --procs 100 --every 30 --accounting --bf-interval 30 --timeouts``;
    147 captures in 74 minutes, every daemon stopped at the end). No record before had a job
    past its limit. On its 1,691 pending job-snapshots (``python lab/score.py DIR --history
    --rewind``): the walltime forecast within 60 s of Slurm's estimate on 78.2 % of 1,512 (94.2 %
    of the 138 its last pass had seen, 99.4 % of the 1,374 newer ones planned as the pass saw
    them); Slurm's estimate 99 s median absolute error, the walltime forecast 76 s, the history
    forecast 44 s (0.44x), within 60 s 58.2 % against 36.4 %; ranges held 81.4 % of 1,652 at
    1.74x the remaining wait (218 against 125 s). Ending a job predicted to run into its limit
    as long after it as such jobs did was measured on this record and not made
    (docs/forecasting.md): 44-45 s either way."""
    score = lab_module("score")
    lab = unpack(tmp_path_factory, "lab-timeouts")
    assert "bf_interval=30," in (lab / "slurm.conf.txt").read_text()
    states = sacct_states(lab)
    assert len(states) == 320 and states.count("TIMEOUT") >= 50
    result = score.score(lab, history=True, rewind=True)
    assert result["job_snapshots"] > 1500 and result["fidelity_compared"] > 1400
    assert result["fidelity_newer_planned_as_last_pass_saw"]["within_60s"] >= 0.95
    assert result["history"]["median_abs_error"] <= 0.5 * result["slurm"]["median_abs_error"]
    assert result["history"]["within_60s"] >= 1.5 * result["slurm"]["within_60s"]
    assert 0.75 <= result["range"]["coverage"] <= 0.87 and result["range"]["with_range"] > 1500


def test_the_mixed_lab_whose_jobs_run_into_their_limits(tmp_path_factory):
    """lab-mixtimeouts.tar.xz (152 KB), recorded 2026-12-02: the mixed workload
    (priority/multifactor, an exclusive and a core-shared partition, a maintenance reservation,
    a dependency chain, a throttled array) on HPC2N's jobs from the 22,500th, a window no record
    had used, at Slurm's default ``bf_interval=30`` and with ``--timeouts``: 67 jobs killed
    0-29 s past their limits (15 s in the median). ``python lab/slurmlab.py run
    ../shared/traces/HPC2N-2002-2.1-cln.swf.gz --dir DIR --nodes 32 --cores 4 --jobs 320 --skip
    22500 --scale 100 --procs 240 --partitions mixed --priority multifactor --accounting --every 30
    --bf-interval 30 --ports 1000 --timeouts``; the window overloads the lab, so it was ended by
    hand after 59 minutes (115 captures, 21 jobs still pending). On its 3,920 pending
    job-snapshots (``python lab/score.py DIR --history --rewind``): fidelity 90.5 % of 3,730 (98.9 %
    of those Slurm's last pass had seen, 94.8 % of the newer ones planned as it saw them); Slurm's
    estimate 490 s median absolute error, the walltime forecast 483 s, the history forecast 57 s
    (0.12x), within 60 s 51.8 % against 23.3 %, within 5 min 91.6 % against 30.2 %; ranges held
    85.5 % of 3,865 at 1.87x the remaining wait (655 against 350 s)."""
    score = lab_module("score")
    lab = unpack(tmp_path_factory, "lab-mixtimeouts")
    assert "bf_interval=30," in (lab / "slurm.conf.txt").read_text()
    assert sacct_states(lab).count("TIMEOUT") >= 50
    result = score.score(lab, history=True, rewind=True)
    assert result["job_snapshots"] > 3500 and result["fidelity_compared"] > 3500
    assert result["fidelity_within_60s"] >= 0.85
    assert result["fidelity_seen_by_last_pass"]["within_60s"] >= 0.95
    assert result["history"]["median_abs_error"] <= 0.25 * result["slurm"]["median_abs_error"]
    assert result["history"]["within_60s"] >= 1.8 * result["slurm"]["within_60s"]
    assert result["history"]["within_5min"] >= 2 * result["slurm"]["within_5min"]
    assert 0.78 <= result["range"]["coverage"] <= 0.9 and result["range"]["with_range"] > 3500


def test_a_capture_rewound_to_slurms_last_pass(tmp_path_factory, tmp_path):
    """``score.rewound``: a job submitted after the pass is left out, one started after it is
    pending again on no nodes, one that ended after it runs again to its limit, the capture's
    time is the pass's; jobs as they were at the pass are untouched."""
    score = lab_module("score")
    from jufo.io import scontrol, slurm

    lab = unpack(tmp_path_factory, "lab-kthd")
    cap = lab / "capture" / "0050"
    last = score.rewound(cap, tmp_path / "seen")
    assert last == scontrol.backfill_pass((cap / "sdiag.txt").read_text())
    assert (tmp_path / "seen" / "at").read_text().strip() == str(last)

    def records(folder):
        return {r["JobId"]: r for r in scontrol.parse_records((folder / "job.txt").read_text(), "job.txt", "JobId")}

    before, after = records(cap), records(tmp_path / "seen")
    changed = 0
    for job, rec in before.items():
        submit, start, end = (score._date(rec.get(k)) for k in ("SubmitTime", "StartTime", "EndTime"))
        if submit > last:
            assert job not in after
            changed += 1
        elif rec["JobState"] != "PENDING" and start is not None and start > last:
            assert after[job]["JobState"] == "PENDING" and after[job]["NodeList"] == "(null)"
            changed += 1
        elif rec["JobState"] == "COMPLETED" and start <= last < end:
            assert after[job]["JobState"] == "RUNNING"
            assert score._date(after[job]["EndTime"]) == start + slurm.seconds_of(rec["TimeLimit"])
            changed += 1
        elif rec["JobState"] == "RUNNING":  # as long as it had run by then
            assert slurm.seconds_of(after[job]["RunTime"]) == last - start
            assert {**after[job], "RunTime": rec["RunTime"]} == rec
        else:
            assert after[job] == rec
    assert changed >= 3
    snap = tmp_path / "seen.xml"
    assert main(["slurm", "snapshot", "--from", str(tmp_path / "seen"), "-o", str(snap)], standalone_mode=False) in (0, None)


def test_a_capture_rewound_where_the_clock_is_not_utc(tmp_path_factory, tmp_path):
    """Slurm prints dates in local time and sdiag both ways: a capture made 5 h 30 min east of
    UTC is rewound to the same jobs in the same states, every printed date moved alike."""
    score = lab_module("score")
    from jufo.io import scontrol
    from test_scontrol import _elsewhere

    cap = unpack(tmp_path_factory, "lab-kthd") / "capture" / "0050"
    there = _elsewhere(cap, tmp_path / "there", 19800)
    assert score.rewound(cap, tmp_path / "a") == score.rewound(there, tmp_path / "b")

    def states(folder):
        return {r["JobId"]: (r["JobState"], r["RunTime"])
                for r in scontrol.parse_records((folder / "job.txt").read_text(), "job.txt", "JobId")}

    assert states(tmp_path / "a") == states(tmp_path / "b")
    assert len(states(tmp_path / "a")) < len(states(cap))  # jobs submitted after the pass left out


def test_a_mixed_lab_under_slurms_default_backfill_interval(tmp_path_factory):
    """lab-mixd.tar.xz (156 KB), recorded 2026-12-01 with Slurm's default ``bf_interval=30``: the
    mixed shape (an exclusive and a core-shared partition, priority/multifactor, a maintenance
    reservation, a dependency chain, a throttled array) on HPC2N's 320 jobs from the 60,000th,
    time / 100, never seen before (``python lab/slurmlab.py run
    ../shared/traces/HPC2N-2002-2.1-cln.swf.gz --dir DIR --nodes 32 --cores 4 --jobs 320 --skip
    60000 --scale 100 --procs 240 --partitions mixed --priority multifactor --accounting --every
    30 --bf-interval 30``; 110 captures in 55 minutes, ended by hand with jobs still waiting, as
    the machine was overloaded; 6,686 pending job-snapshots). On all of them (``python
    lab/score.py DIR --history --rewind``): the walltime forecast within 60 s of Slurm's estimate
    on 91.4 % of 6,545 (99.9 % of 3,257 where Slurm's last pass had seen everything, 83.0 % of
    3,288 where not, 96.0 % of those planned as the pass saw them); Slurm's estimate 1,707 s median
    absolute error, the history forecast 205 s (203 s on Slurm's, 0.12x), within 5 min 57.7 %
    against 16.5 %; ranges 72.0 % of 6,636. On every third capture, as here: 91.5 % of 2,174,
    100 % / 84.2 % / 96.4 %; 226 s against 1,704 s (0.13x), within 5 min 56.4 against 16.7 %,
    ranges 69.1 % of 2,206 (74.7 % since they reach toward now)."""
    score = lab_module("score")
    lab = unpack(tmp_path_factory, "lab-mixd")
    assert "bf_interval=30," in (lab / "slurm.conf.txt").read_text()
    result = score.score(lab, history=True, every=3, rewind=True)
    assert result["fidelity_compared"] > 2000
    assert result["fidelity_within_60s"] >= 0.9, result["differ_examples"][:5]
    assert result["fidelity_seen_by_last_pass"]["within_60s"] >= 0.98
    assert result["fidelity_newer_planned_as_last_pass_saw"]["within_60s"] >= 0.93
    assert result["history"]["median_abs_error"] <= 0.25 * result["slurm"]["median_abs_error"]
    assert result["history"]["within_5min"] >= 2 * result["slurm"]["within_5min"]
    assert 0.6 <= result["range"]["coverage"] <= 0.9
