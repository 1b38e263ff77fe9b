"""Scheduler keys, their checks, and the restricted priority formula."""

import pytest

from conftest import snapshot, waiting


@pytest.mark.parametrize("key,value", [
    ("scheduling_algorithm", "SJF"), ("system_state", "Quantum"), ("maxtopdogs", "some"),
    ("maxtopdogs", "-2"), ("topdogs_per_queue", "maybe"), ("maxnumjobs", "1.5"),
    ("node_sharing", "2"), ("horizon", "tomorrow"), ("plan_max_job_user", "many"), ("plan_min_age_reserve", "-60"),
    ("plan_array_resv", "twenty"),
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


def _asteval(formula: str, values: dict[str, float]) -> float:
    """What jufo computed before it compiled formulas: asteval over the float-constant formula."""
    import io
    import math

    from asteval import Interpreter

    from jufo.engine.sorter import CALLS

    interp = Interpreter(minimal=True, use_numpy=False, writer=io.StringIO(), err_writer=io.StringIO())
    interp.symtable.update(CALLS)
    interp.symtable.update(values)
    result = interp(formula)
    if interp.error or not isinstance(result, (int, float)):
        return math.nan
    return float(result)


def _random_formula(rng, depth: int = 0) -> str:
    leaves = ["AGE", "NOW", "a", "b", "0", "1", "2.5", "3600", "-7", "1e300", "10001", "0.5"]
    if depth > 4 or rng.random() < 0.3:
        return rng.choice(leaves)
    kind = rng.random()
    if kind < 0.6:
        op = rng.choice(["+", "-", "*", "/", "//", "%", "**"])
        return f"({_random_formula(rng, depth + 1)} {op} {_random_formula(rng, depth + 1)})"
    if kind < 0.75:
        return f"{rng.choice(['-', '+'])}{_random_formula(rng, depth + 1)}"
    call = rng.choice(["min", "max", "abs", "log", "sqrt"])
    args = 1 if call in ("abs", "log", "sqrt") else rng.randint(2, 3)
    return f"{call}({', '.join(_random_formula(rng, depth + 1) for _ in range(args))})"


def test_compiled_formulas_compute_what_asteval_computed():
    """Formulas are compiled into closures over their checked tree (``sorter._compile``), and a
    time-dependent one is made ready per job with its fixed parts evaluated once
    (``Formula.at_times``): 3,000 random formulas over random values, edge values included
    (0, negatives, 1e300, exponents beyond asteval's 10,000), give asteval's value to the bit,
    or NaN where it gave none."""
    import math
    import random

    from jufo.engine.sorter import Formula, FormulaError

    def same(x: float, y: float) -> bool:
        return (math.isnan(x) and math.isnan(y)) or repr(x) == repr(y)

    rng = random.Random(11)
    checked = 0
    while checked < 3000:
        text = _random_formula(rng)
        try:
            formula = Formula(text, [])
        except FormulaError:
            continue  # refused (overflows with every name at 1): nothing is evaluated
        for _ in range(3):
            values = {name: rng.choice([0.0, 1.0, -1.0, 0.5, 2.0, 3600.0, 1e6, -1e6, 1e300, rng.uniform(-1e4, 1e4)])
                      for name in ("AGE", "NOW", "a", "b")}
            expected = _asteval(formula.floats, values) if formula._single is None else float(
                formula._single[0] * values[formula._single[1]])
            assert same(formula.evaluate(values), expected), (text, values)
            fixed = {k: v for k, v in values.items() if k not in ("AGE", "NOW")}
            timed = {k: values[k] for k in ("AGE", "NOW")}
            assert same(formula.at_times(fixed)(timed), expected), (text, values)
        checked += 1


@pytest.mark.parametrize("text,saturation", [
    ("1000 * min(AGE, 3600) / 3600 + 1000 * (a / 3000 + b / 384000) / 2", 3600.0),  # jufo slurm config's
    ("min(7, AGE, 50) * a - min(AGE, 20) / (b - 3)", 20.0),
    ("log(min(AGE, 100) + 1) * sqrt(abs(a)) + b ** 2", 100.0),
    ("min(AGE, -5) + a", -5.0),
    ("AGE + a", None), ("min(AGE, a) + b", None), ("min(AGE, 600) + NOW", None), ("max(AGE, 600)", None),
])
def test_a_job_past_the_saturation_age_keeps_its_key(text, saturation):
    """Slurm's age factor stops growing at PriorityMaxAge: past that age (``Formula.saturation``)
    a job's key is kept instead of evaluated again, and from ``freeze_time`` on no job's key
    changes. Checked against evaluating the formula anew, to the bit, at times that cross it."""
    import math
    import random

    from jufo.engine.job import Job
    from jufo.engine.sorter import Formula, JobSorter
    from jufo.io.errors import Report

    rng = random.Random(5)
    jobs = [Job(f"j{i}", i, {"a": str(rng.choice([0, 1, 7, 3000, -2.5])), "b": str(rng.choice([3, 128, 0.5]))},
                "Idle", queued=rng.randint(-5000, 0)) for i in range(60)]
    formula = Formula(text, jobs)
    assert formula.saturation == saturation

    def fresh(now: int) -> list[tuple]:
        out = []
        for job in jobs:
            value = formula.evaluate({"AGE": float(now - job.queued), "NOW": 1e9 + now,
                                      "a": float(job.data["a"]), "b": float(job.data["b"])})
            out.append((-(-math.inf if math.isnan(value) else value), job.queued, job.index))
        return out

    sorter = JobSorter(formula, 10**9, Report(quiet=True))
    times = sorted(rng.sample(range(0, 8000), 120))
    for now in times:
        assert sorter.keys(jobs, now) == fresh(now), now
    freeze = sorter.freeze_time(jobs)
    if saturation is None:
        assert freeze is None
        return
    frozen = sorter.frozen_at(freeze)
    assert frozen.static and not sorter.static
    for now in [freeze, freeze + 1, freeze + 10**6]:
        assert fresh(now) == [frozen.key(job, now) for job in jobs] == fresh(freeze)
