"""Scheduler keys, their checks, and the restricted priority formula."""

import pytest

from conftest import snapshot, waiting


@pytest.mark.parametrize("key,value", [
    ("scheduling_algorithm", "SJF"), ("system_state", "Quantum"), ("maxtopdogs", "some"),
    ("maxtopdogs", "-2"), ("topdogs_per_queue", "maybe"), ("maxnumjobs", "1.5"),
    ("node_sharing", "2"), ("horizon", "tomorrow"),
])
def test_bad_values_exit_2(jufo, key, value):
    run = jufo(snapshot({"a": waiting(1, 5)}, scheduler={key: value}))
    assert run.exit_code == 2
    assert run.stderr.strip().startswith(f"jufo: error: scheduler sched: {key}={value!r}")
    assert run.output == b""


def test_unknown_key_is_a_warning(jufo):
    run = jufo(snapshot({"a": waiting(1, 5)}, scheduler={"colour": "blue"}))
    assert run.exit_code == 0
    assert "warning: scheduler sched: colour='blue': unknown scheduler key" in run.stderr


def test_quiet_silences_warnings_but_not_an_unknown_scheduler_key(jufo):
    job = {k: v for k, v in waiting(1, 5).items() if k != "queuedate"}  # a warning -q hides
    run = jufo(snapshot({"a": job}), "-q")
    assert run.exit_code == 0 and run.stderr == ""
    run = jufo(snapshot({"a": job}, scheduler={"maxtopdog": "all"}), "-q")
    assert run.exit_code == 0
    assert run.stderr.strip().startswith("jufo: warning: scheduler sched: maxtopdog='all': unknown scheduler key")


def test_a_misspelt_key_on_the_command_line_is_exit_2_with_a_hint(jufo):
    run = jufo(snapshot({"a": waiting(1, 5)}), "--set", "maxtopdog=all", "-q")
    assert run.exit_code == 2 and run.output == b""
    assert run.stderr.strip() == "jufo: error: --set: maxtopdog='all': unknown scheduler key; did you mean 'maxtopdogs'?"


def test_a_misspelt_key_in_a_preset_is_exit_2(jufo, tmp_path):
    preset = tmp_path / "p.xml"
    preset.write_bytes(snapshot({}, scheduler={"sheduling_algorithm": "FCFS"}))
    run = jufo(snapshot({"a": waiting(1, 5)}), "--config", str(preset))
    assert run.exit_code == 2 and "did you mean 'scheduling_algorithm'?" in run.stderr and str(preset) in run.stderr


def test_case_insensitive_names(jufo):
    run = jufo(snapshot({"a": waiting(1, 5)}, scheduler={"scheduling_algorithm": "fcfs", "system_state": "attributestate"}))
    assert run.exit_code == 0 and run.jobs["a"]["jufo_resources"] == "cores=1"


@pytest.mark.parametrize("formula", [
    "__import__('os').system('true')",
    "open('/etc/passwd')",
    "totalcores.__class__",
    "[x for x in (1,)]",
    "lambda: 1",
    "totalcores if 1 else 2",
    "exec('1')",
    "'text'",
    "nosuchkey * 2",
    "totalcores *",
    "min(totalcores, key=abs)",
    "(a := 1)",
])
def test_formula_refused_before_scheduling(jufo, formula):
    run = jufo(snapshot({"a": waiting(1, 5)}, scheduler={"system_sysprio": formula}))
    assert run.exit_code == 2, formula
    assert "system_sysprio=" in run.stderr and "refused" in run.stderr
    assert run.output == b""


def test_formula_orders_jobs(jufo):
    # one 4-core node, busy for 10 s; size-first priority puts the 4-core job first
    jobs = {
        "small": waiting(1, 5, queued="01/10/12-11:00:00"),
        "big": waiting(4, 5, queued="01/10/12-11:30:00", totalcores=4),
        "blocker": {"state": "Running", "owner": "r", "queuedate": "01/10/12-11:00:00",
                    "dispatchdate": "01/10/12-11:59:50", "wall": 20, "nummachines": 1, "taskspernode": 4},
    }
    fcfs = {"scheduling_algorithm": "FCFS"}
    by_age = jufo(snapshot(jobs, scheduler=fcfs))
    assert (by_age.start("small"), by_age.start("big")) == (10, 15)
    by_size = jufo(snapshot(jobs, scheduler={**fcfs, "system_sysprio": "totalcores * 1000 - DATEqueuedate"}))
    assert (by_size.start("big"), by_size.start("small")) == (10, 15)


def test_formula_functions_and_missing_keys(jufo):
    jobs = {"a": waiting(1, 5, userprio=4), "b": waiting(1, 5, queued="01/10/12-11:10:00")}
    run = jufo(snapshot(jobs, scheduler={"scheduling_algorithm": "FCFS",
                                         "system_sysprio": "sqrt(max(userprio, 0)) + abs(log(1)) - min(1, 2)"}))
    assert run.exit_code == 0, run.stderr
    assert run.start("a") == 0 and run.start("b") == 0


def test_formula_error_for_a_job_gives_lowest_priority(jufo):
    jobs = {"a": waiting(4, 5, queued="01/10/12-10:00:00", userprio=0),
            "b": waiting(4, 5, queued="01/10/12-11:00:00", userprio=2)}
    run = jufo(snapshot(jobs, scheduler={"scheduling_algorithm": "FCFS", "system_sysprio": "1 / userprio"}))
    assert run.exit_code == 0
    assert "job a: system_sysprio='1 / userprio': cannot be evaluated" in run.stderr
    assert (run.start("b"), run.start("a")) == (0, 5)


def test_age_priority_is_recomputed(jufo):
    """AGE grows during the simulation: a formula over it is evaluated at every event."""
    jobs = {
        "blocker": {"state": "Running", "owner": "r", "queuedate": "01/10/12-11:00:00",
                    "dispatchdate": "01/10/12-11:59:50", "wall": 20, "nummachines": 1, "taskspernode": 4},
        # old job with low weight vs. new job with high weight; AGE*1 dominates only later
        "old": waiting(4, 5, queued="01/10/12-11:59:00", userprio=0),
        "new": waiting(4, 5, queued="01/10/12-11:59:59", userprio=50),
    }
    run = jufo(snapshot(jobs, scheduler={"scheduling_algorithm": "FCFS", "system_sysprio": "AGE + userprio"}))
    # at t=10: old AGE 70, new AGE 11 + 50 = 61 → old first
    assert (run.start("old"), run.start("new")) == (10, 15)
