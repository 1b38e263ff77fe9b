"""What LLview 2's Slurm adapter writes: separate files, Slurm states and reasons, userprio,
job arrays with throttles, heterogeneous jobs, runtime, gpulist (issue 11)."""

from __future__ import annotations

import os
import random
import re

import pytest
from click.testing import CliRunner

from conftest import SAMPLES, T0, predictions, running, snapshot, waiting
from jufo.io import lml
from jufo.cli import main
from jufo.io.slurm import parse_tasks
from jufo.io.slurm import Meaning, classify

SET = SAMPLES / "llview2"
FILES = ["sysinfo_LML.xml", "nodes_LML.xml", "jobs_LML.xml", "reservation_LML.xml", "classes_LML.xml"]


def run(tmp_path, *args: str):
    out = tmp_path / "out.xml"
    result = CliRunner().invoke(main, [*args, "-o", str(out)])
    return result, (out.read_bytes() if out.exists() else None)


def by_step(xml: bytes) -> dict[str, dict[str, str]]:
    """jufo_* data per job step (the object names of the LLview 2 set)."""
    doc = lml.parse(xml)
    jobs = predictions(xml)
    return {o.name: jobs.get(o.id, {}) for o in doc.of_type("job")}


def test_llview2_set_predicts_as_its_comment_says(tmp_path):
    result, out = run(tmp_path, "predict", *(str(SET / f) for f in FILES))
    assert result.exit_code == 0, result.stderr
    jobs = by_step(out)
    assert jobs["1200"]["jufo_starttime"] == jobs["1201"]["jufo_starttime"] == "06/03/25-10:00:00"  # het: together
    assert jobs["1300"]["jufo_starttime"] == "06/03/25-11:00:00"  # after 1001 ends
    assert jobs["1100"]["jufo_starttime"] == "06/03/25-11:00:00"
    assert jobs["1100"]["jufo_endtime"] == "06/03/25-20:00:00"
    assert jobs["1100"]["jufo_array_tasks"] == "4"
    assert jobs["1100"]["jufo_array_starts"] == "2-3=06/03/25-11:00:00;4-5=06/03/25-18:00:00"
    assert jobs["1400"]["jufo_reason"].startswith("Held: reason 'JobHeldUser'")
    assert "system_sysprio=userprio" in out.decode()  # the batch system's priority is the order
    assert result.stderr == ""  # nothing in the set is unexpected


def test_llview2s_classes_cap_each_users_running_jobs_of_a_qos(tmp_path):
    """LLview 2's ``classes_LML.xml`` lists Slurm's QOS with ``max_jobs_pu`` (``MaxJobsPU``):
    with QOS normal lowered from 32 to 1, bob's array 1100 runs its tasks one at a time, not
    two (its throttle) at once."""
    import shutil

    folder = tmp_path / "set"
    shutil.copytree(SET, folder)
    classes = folder / "classes_LML.xml"
    assert classes.read_text().count('value="32"') == 1
    classes.write_text(classes.read_text().replace('value="32"', 'value="1"'))
    result, out = run(tmp_path, "predict", *(str(folder / f) for f in FILES))
    assert result.exit_code == 0, result.stderr
    assert by_step(out)["1100"]["jufo_array_starts"] == \
        "2=06/03/25-11:00:00;3=06/03/25-18:00:00;4=06/03/25-20:00:00;5=06/03/25-22:00:00"


def test_merged_output_holds_every_input_unchanged(tmp_path):
    """Stripping jufo_* from the output leaves the inputs' objects and data, in file order."""
    _, out = run(tmp_path, "predict", *(str(SET / f) for f in FILES))
    doc = lml.parse(out)
    expected = []
    for name in FILES:
        expected += [(o.id, o.type, o.name, o.data) for o in lml.read(str(SET / name)).objects]
    got = [(o.id, o.type, o.name, {k: v for k, v in o.data.items() if not k.startswith("jufo_")})
           for o in doc.objects]
    assert got == expected
    first = (SET / FILES[0]).read_bytes()
    assert out.startswith(first[:first.index(b"<lml:lgui")])  # the first file's prolog
    again, out2 = run(tmp_path, "predict", *(str(SET / f) for f in FILES))
    assert out2 == out  # byte-identical


def test_merged_is_the_same_as_one_combined_file(tmp_path):
    """One file holding all five files' objects predicts the same as the five files."""
    from lxml import etree

    roots = [etree.fromstring((SET / name).read_bytes()) for name in FILES]
    for root in roots[1:]:
        roots[0].find("objects").extend(root.find("objects"))
        roots[0].find("information").extend(root.find("information"))
    combined = tmp_path / "combined.xml"
    combined.write_bytes(etree.tostring(roots[0], xml_declaration=True, encoding="UTF-8"))
    _, one = run(tmp_path, "predict", str(combined))
    _, five = run(tmp_path, "predict", *(str(SET / f) for f in FILES))
    assert predictions(one) == predictions(five)
    stripped = b"\n".join(line for line in one.split(b"\n") if b'key="jufo_' not in line)
    assert stripped == combined.read_bytes()  # the prediction only adds jufo_* lines


def test_clashes_name_both_files(tmp_path):
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    a.write_bytes(snapshot({"j1": waiting(1, 10)}))
    b.write_bytes(snapshot({"j1": waiting(2, 10)}))  # same ids; j1's taskspernode differs
    result, out = run(tmp_path, "predict", str(a), str(b))
    assert result.exit_code == 2 and out is None
    assert "taskspernode='2'" in result.stderr and str(a) in result.stderr and str(b) in result.stderr
    b.write_bytes(snapshot({"j2": waiting(1, 10)}, system_time="01/10/12-12:05:00"))
    result, _ = run(tmp_path, "predict", str(a), str(b))
    assert result.exit_code == 2 and "system_time" in result.stderr and str(a) in result.stderr
    b.write_bytes(lml.build([("j1", "node", {"ncores": "4"})]))
    result, _ = run(tmp_path, "predict", str(a), str(b))
    assert result.exit_code == 2 and "names job" in result.stderr and "but node" in result.stderr


def test_identical_objects_in_two_files_merge(tmp_path):
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    a.write_bytes(snapshot({"j1": waiting(1, 10)}))
    b.write_bytes(snapshot({"j2": waiting(1, 10)}))  # sys and n1 again, alike
    result, out = run(tmp_path, "predict", str(a), str(b))
    assert result.exit_code == 0, result.stderr
    assert set(predictions(out)) >= {"j1", "j2"}


def test_validate_and_show_take_several_files(tmp_path):
    files = [str(SET / f) for f in FILES]
    result = CliRunner().invoke(main, ["validate", *files])
    assert result.exit_code == 0, result.output
    assert "valid (" in result.output
    _, out = run(tmp_path, "predict", *files)
    p = tmp_path / "p.xml"
    p.write_bytes(out)
    shown = CliRunner().invoke(main, ["show", str(p)])
    assert shown.exit_code == 0 and "1100" in shown.output
    twice = CliRunner().invoke(main, ["predict", "-", "-", "-o", str(tmp_path / "x.xml")])
    assert twice.exit_code == 2 and "only once" in twice.stderr


@pytest.mark.parametrize("reason,meaning", [
    ("Priority", Meaning.WAITING), ("Resources", Meaning.WAITING), ("None", Meaning.WAITING),
    ("ReqNodeNotAvail, UnavailableNodes:jrc0001", Meaning.WAITING), ("JobArrayTaskLimit", Meaning.WAITING),
    ("JobHeldUser", Meaning.HELD), ("JobHeldAdmin", Meaning.HELD), ("DependencyNeverSatisfied", Meaning.HELD),
    ("PartitionTimeLimit", Meaning.HELD), ("AssocGrpCPUMinutesLimit", Meaning.HELD),
    ("AssocGrpBillingMinutes", Meaning.HELD), ("QOSGrpMemoryMinutes", Meaning.HELD),  # spent budgets
    ("AssocGrpGRES", Meaning.LIMIT), ("QOSMaxGRESPerUser", Meaning.LIMIT), ("MaxJobsPerAccount", Meaning.LIMIT),
    ("QOSMaxCpuPerNode", Meaning.HELD), ("AssocMaxGRESPerJob", Meaning.HELD), ("QOSMinGRES", Meaning.HELD),
    ("MaxCpuRunMinsPerUser", Meaning.LIMIT), ("launch failed requeued held", Meaning.HELD),
    ("JobHoldMaxRequeue", Meaning.HELD), ("MaxMemPerLimit", Meaning.HELD),
    ("QOSMaxWallDurationPerJobLimit", Meaning.HELD), ("Dependency", Meaning.DEPENDENCY),
    ("BeginTime", Meaning.NOT_BEFORE), ("Reservation", Meaning.RESERVATION),
    ("QOSMaxJobsPerUserLimit", Meaning.LIMIT), ("AssocGrpCpuLimit", Meaning.LIMIT),
    ("QOSMaxCpuPerUserLimit", Meaning.LIMIT), ("SomethingNew", Meaning.WAITING),
    ("AssocGrpCPURunMinutesLimit", Meaning.LIMIT), ("QOSGrpCPUMinutesLimit", Meaning.HELD),
])
def test_reason_table(reason, meaning):
    assert classify(reason) is meaning


def jobs_of(tmp_path, jobs, nodes=None, **kw):
    src = tmp_path / "in.xml"
    src.write_bytes(snapshot(jobs, nodes, **kw))
    result, out = run(tmp_path, "predict", str(src))
    assert result.exit_code == 0, result.stderr
    return predictions(out), result.stderr


def test_slurm_state_names(tmp_path):
    jobs, _ = jobs_of(tmp_path, {
        "r": {**running(4, 100), "state": "RUNNING", "nodelist": "(n2,4)"},
        "p": {**waiting(4, 10), "state": "PENDING"},
        "c": {**waiting(4, 10), "state": "COMPLETING"},
        "s": {**waiting(4, 10), "state": "Suspended"},
        "h": {**waiting(4, 10), "state": "REQUEUE_HOLD"},
        "cfg": {**running(4, 50), "state": "Pending", "starttime": "01/10/12-11:59:00", "nodelist": "(n1,4)"},
    }, {"n1": 4, "n2": 4})
    assert jobs["p"]["jufo_starttime"] == "01/10/12-12:00:50"  # after cfg: configuring holds its node
    assert jobs["c"]["jufo_reason"].startswith("NotQueued")
    assert jobs["s"]["jufo_reason"].startswith("Suspended")
    assert jobs["h"]["jufo_reason"].startswith("Held")


def test_held_reasons_and_detailedstatus(tmp_path):
    jobs, _ = jobs_of(tmp_path, {
        "a": waiting(1, 10, state="Pending", reason="JobHeldAdmin"),
        "b": waiting(1, 10, state="Pending", reason="None", detailedstatus="SYSTEM_ON_HOLD"),
        "c": waiting(1, 10, state="Pending", reason="AssocGrpCPUMinutesLimit"),
        "d": waiting(1, 10, state="Pending", reason="Priority"),
    })
    assert all(jobs[j]["jufo_reason"].startswith("Held") for j in "abc")
    assert "detailedstatus 'SYSTEM_ON_HOLD'" in jobs["b"]["jufo_reason"]
    assert jobs["d"]["jufo_starttime"] == T0


def test_begin_time_is_a_not_before(tmp_path):
    jobs, _ = jobs_of(tmp_path, {
        "b": waiting(1, 10, state="Pending", reason="BeginTime", starttime="01/10/12-15:00:00"),
        "e": waiting(1, 10, state="Pending", reason="Resources", starttime="01/10/12-15:00:00"),
    })
    assert jobs["b"]["jufo_starttime"] == "01/10/12-15:00:00"
    assert jobs["e"]["jufo_starttime"] == T0  # a pending job's starttime is only Slurm's estimate


def test_per_user_limit_keeps_the_user_at_what_runs_now(tmp_path):
    """QOSMaxJobsPerUserLimit with 2 running: the user's next jobs start as those end, one each."""
    jobs, _ = jobs_of(tmp_path, {
        "r1": running(1, 100, owner="u"), "r2": running(1, 200, owner="u"),
        "a": waiting(1, 1000, state="Pending", reason="QOSMaxJobsPerUserLimit"),
        "b": waiting(1, 1000, state="Pending", reason="QOSMaxJobsPerUserLimit"),
        "c": waiting(1, 1000, state="Pending", reason="QOSMaxJobsPerUserLimit"),
        "other": waiting(1, 10, owner="v", state="Pending", reason="Priority"),
    }, {"n1": 16})
    assert jobs["a"]["jufo_starttime"] == "01/10/12-12:01:40"
    assert jobs["b"]["jufo_starttime"] == "01/10/12-12:03:20"
    assert jobs["c"]["jufo_starttime"] == "01/10/12-12:18:20"  # when a ends
    assert jobs["other"]["jufo_starttime"] == T0  # other users are not capped
    src = tmp_path / "free.xml"
    src.write_bytes(snapshot({"a": waiting(1, 1000, state="Pending", reason="QOSMaxJobsPerUserLimit")}))
    result, out = run(tmp_path, "predict", str(src))
    assert predictions(out)["a"]["jufo_starttime"] == T0  # nothing of theirs runs: not capped


def test_userprio_is_the_default_order_only_without_a_formula(tmp_path):
    jobs = {"old": waiting(4, 100, userprio=10, queued="01/10/12-10:00:00"),
            "new": waiting(4, 100, userprio=90, queued="01/10/12-11:00:00")}
    got, _ = jobs_of(tmp_path, jobs)
    assert got["new"]["jufo_starttime"] == T0 and got["old"]["jufo_starttime"] == "01/10/12-12:01:40"
    got, _ = jobs_of(tmp_path, jobs, scheduler={"system_sysprio": "-DATEqueuedate"})
    assert got["old"]["jufo_starttime"] == T0
    partial = {**jobs, "none": waiting(4, 100, queued="01/10/12-09:00:00")}
    got, _ = jobs_of(tmp_path, partial)
    assert got["none"]["jufo_starttime"] == T0  # not every job has it: queue order


def test_array_tasks_and_throttle(tmp_path):
    jobs, _ = jobs_of(tmp_path, {
        "t1": running(1, 100, ArrayJobId="7", ArrayTaskId="1"),
        "arr": waiting(1, 100, ArrayJobId="7", ArrayTaskId="2-6%2", state="Pending"),
    }, {"n1": 8})
    arr = jobs["arr"]
    assert arr["jufo_array_tasks"] == "5"
    # one more now (t1 runs), then two at a time every 100 s
    assert arr["jufo_array_starts"] == "2=01/10/12-12:00:00;3-4=01/10/12-12:01:40;5-6=01/10/12-12:03:20"
    assert arr["jufo_starttime"] == T0 and arr["jufo_endtime"] == "01/10/12-12:05:00"
    unthrottled, _ = jobs_of(tmp_path, {"arr": waiting(1, 100, ArrayJobId="7", ArrayTaskId="1-3,9")}, {"n1": 8})
    assert unthrottled["arr"]["jufo_array_starts"] == "1-3=01/10/12-12:00:00;9=01/10/12-12:00:00"


def throttled_arrays(seed: int) -> bytes:
    """1-3 arrays of 5-40 tasks throttled to 1-3, some tasks running, among single jobs of
    the same shapes, on 2-5 nodes; most ending before their wall, some arriving later."""
    rng = random.Random(seed)
    nodes = {f"n{i}": rng.choice([2, 4]) for i in range(rng.randint(2, 5))}
    jobs: dict[str, dict] = {}
    for a in range(rng.randint(1, 3)):
        wall = rng.randint(1, 8) * 60
        for t in range(rng.randint(0, 2)):
            jobs[f"t{a}{t}"] = running(1, rng.randint(1, wall), wall, ArrayJobId=f"{a}", ArrayTaskId=f"{t}")
        extra = {"actualruntime": rng.randint(1, wall)} if rng.random() < 0.7 else {}
        jobs[f"arr{a}"] = waiting(rng.choice([1, 2]), wall, ArrayJobId=f"{a}", state="Pending",
                                  ArrayTaskId=f"2-{rng.randint(6, 41)}%{rng.randint(1, 3)}",
                                  queued=f"01/10/12-11:{rng.randint(0, 59):02d}:00", **extra)
    for i in range(rng.randint(0, 15)):
        extra = {"actualruntime": rng.randint(1, 480)} if rng.random() < 0.7 else {}
        queued = f"01/10/12-{rng.choice([11, 12])}:{rng.randint(0, 59):02d}:00"
        jobs[f"j{i:02d}"] = waiting(rng.choice([1, 2, 4]), rng.randint(1, 8) * 60, queued=queued,
                                   owner=rng.choice(["u", "v"]), **extra)
    return snapshot(jobs, nodes)


@pytest.mark.parametrize("seed", range(int(os.environ.get("JUFO_SEEDS", "40")) // 2))
def test_full_arrays_are_passed_over_as_one_class(seed, monkeypatch):
    """While an array's throttle is full, a pass skips its tasks as one class and the check
    of a task reads the full throttle from memory: every start, resource, flag and reason
    equals a run that checks each task against the throttle in every pass, and the skip
    does happen."""
    from jufo.io.errors import Report
    from jufo.forecast import predict
    from jufo.engine.queue import QueueLimits, peak
    from jufo.engine.state import SystemState
    from test_invariants import settings_all

    raw = throttled_arrays(seed)

    def outcome(settings):
        forecast = predict(lml.parse(raw), Report(quiet=True), settings)
        return {j.id: (j.start, j.end, str(j.resources), j.topdog, j.backfilled, j.reason) for j in forecast.jobs}

    def every_time(self, array, start, end):  # the check before the memory of full throttles
        cap = self.array_caps.get(array) if array is not None and self.array_caps else None
        spans = self.by_array.get(array, ())
        if cap is None or len(spans) < cap or peak(spans, start, max(end, start + 1), lambda s: 1) + 1 <= cap:
            return None
        return f"JobArrayTaskLimit: array {array} runs at most {cap} tasks at once"

    looks = {"skipping": 0, "every time": 0}  # capped tasks a pass looked at
    phase = "skipping"
    capped = SystemState.user_capped

    def counted(self, job, t):
        held = capped(self, job, t)
        looks[phase] += held
        return held

    monkeypatch.setattr(SystemState, "user_capped", counted)
    for settings in settings_all():
        if settings["scheduling_algorithm"] != "Backfilling":
            continue
        phase = "skipping"
        skipping = outcome(settings)
        with monkeypatch.context() as m:
            m.setattr(QueueLimits, "array_exceeded", every_time)
            phase = "every time"
            assert outcome(settings) == skipping, settings
    assert looks["skipping"] < looks["every time"], looks


def test_dependency_on_an_array_waits_for_every_task(tmp_path):
    jobs, _ = jobs_of(tmp_path, {
        "arr": waiting(1, 100, ArrayJobId="7", ArrayTaskId="1-4%1", step="7"),
        "after": waiting(1, 10, dependency="afterok:7(unfulfilled)"),
        "one": waiting(1, 10, dependency="afterok:7_1"),
    }, {"n1": 8})
    assert jobs["after"]["jufo_starttime"] == "01/10/12-12:06:40"
    assert jobs["one"]["jufo_starttime"] == "01/10/12-12:01:40"


def test_bad_array_task_list_is_one_job_with_a_warning(tmp_path):
    jobs, stderr = jobs_of(tmp_path, {"arr": waiting(1, 100, ArrayJobId="7", ArrayTaskId="x-y")})
    assert jobs["arr"]["jufo_starttime"] == T0
    assert "ArrayTaskId='x-y'" in stderr
    with pytest.raises(ValueError):
        parse_tasks("1-99999999")
    with pytest.raises(ValueError):
        parse_tasks("1-10%0")
    assert parse_tasks("[1-3]%1") == ([1, 2, 3], 1)


def test_het_components_start_together(tmp_path):
    """1 node + 2 nodes: neither may start on the one free node now; both start at 100 s."""
    nodes = {f"n{i}": 4 for i in range(1, 4)}
    jobs, _ = jobs_of(tmp_path, {
        "r": running(4, 100, nodes=2, nodelist="(n1,4)(n2,4)"),
        "h0": waiting(4, 50, HetJobId="5", HetJobOffset="0", state="Pending"),
        "h1": waiting(4, 200, nodes=2, HetJobId="5", HetJobOffset="1", state="Pending"),
    }, nodes)
    assert jobs["h0"]["jufo_starttime"] == jobs["h1"]["jufo_starttime"] == "01/10/12-12:01:40"
    assert jobs["h0"]["jufo_endtime"] == "01/10/12-12:02:30"  # each runs its own wall
    assert jobs["h1"]["jufo_endtime"] == "01/10/12-12:05:00"
    assert jobs["h0"]["jufo_nodelist"] == "(n1,4)(n2,4)(n3,4)"  # the leader holds all components' nodes


def test_het_component_that_can_never_fit(tmp_path):
    jobs, _ = jobs_of(tmp_path, {
        "h0": waiting(4, 50, HetJobId="5", HetJobOffset="0"),
        "h1": waiting(4, 50, nodes=2, HetJobId="5", HetJobOffset="1"),
    }, {"n1": 4, "n2": 4})
    assert "jufo_starttime" not in jobs["h1"]
    assert jobs["h1"]["jufo_reason"].startswith("HetJob: starts with component")


def test_runtime_of_running_jobs(tmp_path):
    """runtime wins over the start date when they disagree (a suspension), with a warning;
    without a start date, the start is system_time - runtime."""
    jobs, stderr = jobs_of(tmp_path, {
        "susp": {**running(4, 100), "runtime": "0"},  # started 0 s ago by its runtime: ends at 100 s wall
        "nostart": {"state": "Running", "wall": "300", "runtime": "200", "nummachines": 1, "taskspernode": 4},
        "w": waiting(4, 10),
    }, {"n1": 4, "n2": 4})
    assert jobs["susp"]["jufo_endtime"] == "01/10/12-12:01:40"
    assert jobs["nostart"]["jufo_endtime"] == "01/10/12-12:01:40"
    assert "disagrees with dispatchdate" not in stderr  # 0 s vs 0 s
    jobs, stderr = jobs_of(tmp_path, {"late": {**running(4, 100, wall=1000), "runtime": "100"}}, {"n1": 4})
    assert jobs["late"]["jufo_endtime"] == "01/10/12-12:15:00"  # 1000 - 100 s from now
    assert "runtime='100': disagrees with dispatchdate by 800 s" in stderr


def test_gpu_entries_the_combiner_appends_are_not_cores(tmp_path):
    """LML_da's combiner appends (node,ncores+gpu) per gpulist entry to a running job's nodelist."""
    nodes = {"g1": {"ncores": 4, "gpus": 2}, "g2": {"ncores": 4, "gpus": 2}}
    jobs, stderr = jobs_of(tmp_path, {
        "r": running(2, 100, nodelist="(g1,2)(g1,4)(g1,5)", gpulist="(g1,0)(g1,1)", totalcores=2),
        "w": waiting(2, 10, nummachines=1),
    }, nodes)
    assert "warning" not in stderr, stderr
    assert jobs["r"]["jufo_nodelist"] == "(g1,2)"
    assert jobs["w"]["jufo_nodelist"] == "(g1,2)"  # the other two cores of g1


def test_totaltasks_zero_is_an_unknown_size(tmp_path):
    job = {"state": "Idle", "queuedate": "01/10/12-11:00:00", "wall": "10", "totaltasks": "0"}
    jobs, stderr = jobs_of(tmp_path, {"ll": job})
    assert jobs["ll"]["jufo_starttime"] == T0
    assert "no size given" in stderr


def test_hostlists_separated_by_spaces(tmp_path):
    jobs, stderr = jobs_of(tmp_path, {"w": waiting(4, 3600)}, {"a1": 4, "a2": 4},
                           reservations={"m": {"starttime": "01/10/12-12:30:00", "endtime": "01/10/12-13:00:00",
                                               "nodelist": "a1 a2"}})
    assert "warning" not in stderr
    assert jobs["w"]["jufo_starttime"] == "01/10/12-13:00:00"


def test_sample_comment_states_the_predictions():
    text = (SET / "jobs_LML.xml").read_text()
    assert re.search(r"1200 and 1201 start at 10:00", text) and "11:00..20:00" in text


def test_batch_estimate_beside_the_prediction(tmp_path):
    """A pending job's starttime (Slurm's own estimate) is shown by show and scored by evaluate."""
    import json

    _, out = run(tmp_path, "predict", *(str(SET / f) for f in FILES))
    predicted = tmp_path / "p.xml"
    predicted.write_bytes(out)
    shown = CliRunner().invoke(main, ["show", str(predicted)])
    line = next(l for l in shown.output.splitlines() if l.startswith("1100_[2-5%2]"))
    assert "BATCH_EST" in shown.output
    # the array's record spans its tasks: first start, last end, the nodes they are planned on
    assert line.split()[5:10] == ["2025-06-03T11:00:00", "2025-06-03T20:00:00", "2", "jrc[0001-0002]",
                                  "2025-06-03T10:00:00"]
    actual = tmp_path / "actual.xml"
    actual.write_bytes(lml.build([("a", "job", {"step": "1100", "state": "Running", "queuedate": "2025-06-03 07:50:00",
                                                "starttime": "2025-06-03 10:30:00", "endtime": "2025-06-03 12:30:00"}),
                                  ("b", "job", {"step": "1300", "state": "Running", "queuedate": "2025-06-03 08:30:00",
                                                "starttime": "2025-06-03 11:00:00", "endtime": "2025-06-03 12:00:00"})]))
    result = CliRunner().invoke(main, ["evaluate", str(predicted), "--actual", str(actual), "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert figures["errors"]["count"] == 2
    assert figures["batch_estimate"]["count"] == 1 and figures["batch_estimate"]["mean"] == 1800
    assert figures["jufo_same_jobs"]["count"] == 1 and figures["jufo_same_jobs"]["mean"] == -1800
    text = CliRunner().invoke(main, ["evaluate", str(predicted), "--actual", str(actual)]).output
    assert "the batch system's own estimate" in text


def test_keys_match_sacct_names():
    """A running array task (scontrol: its own JobId) and a pending one expanded from the array
    record share sacct's name; het components are het+offset: so the history can follow them."""
    from jufo.io.errors import Report
    from jufo.engine.snapshot import read_snapshot

    doc = lml.read_all([str(SET / f) for f in FILES])
    keys = {job.key for job in read_snapshot(doc, Report(quiet=True)).jobs}
    assert {"1100_1", "1100_2", "1100_5", "1200+0", "1200+1", "1001", "1300"} <= keys


@pytest.mark.parametrize("seed", range(10))
def test_a_pools_profile_answers_as_the_spans_do(seed):
    """``Pool.peak`` (a holder's profile, read once from each start until its spans change)
    gives ``peak`` of the holder's spans for every window, through adds and discards."""
    import random

    from jufo.engine.queue import Pool, peak

    class Span:
        def __init__(self, start, end, cores, nodes):
            self.start, self.end, self.cores = start, end, cores
            self.job = type("J", (), {"nodes": nodes})()

    rng = random.Random(seed)
    pool = Pool("QOSLimit: QOS")
    pool.limit({}, {"q": 100}, {"q": 10})
    held: list = []
    for _ in range(300):
        if held and rng.random() < 0.3:
            span = held.pop(rng.randrange(len(held)))
            pool.discard("q", span)
        elif rng.random() < 0.4:
            lo = rng.randint(0, 50)
            span = Span(lo, lo + rng.randint(1, 40), rng.randint(1, 8), rng.randint(1, 3))
            held.append(span)
            pool.add("q", span)
        start = rng.choice([0, 10, rng.randint(0, 60)])
        end = start + rng.randint(1, 50)
        assert pool.peak("q", "cores", start, end) == peak(held, start, end, lambda s: s.cores)
        assert pool.peak("q", "nodes", start, end) == peak(held, start, end, lambda s: s.job.nodes)


def test_a_qos_group_limit_forecast_is_the_same_with_its_profile(monkeypatch):
    """A JUROPA-like snapshot whose QOS may hold half the cores (``benchmarks.bench``'s
    ``juropa-qos``, smaller): every start, end and resource is the one a check that sums the
    QOS's spans anew at every question gives (``peak``); on the whole ``juropa-qos`` case the
    profile takes ``predict`` from 158 s to 3.2 s."""
    from benchmarks.bench import Shape, generate
    from jufo.engine.queue import Pool, peak
    from jufo.forecast import predict
    from jufo.io.errors import Report

    raw = generate(Shape(jobs=300, nodes=600, qos_share=0.5))

    def outcome():
        forecast = predict(lml.parse(raw), Report(quiet=True), {})
        return {j.id: (j.start, j.end, str(j.resources)) for j in forecast.jobs}

    profiled = outcome()
    monkeypatch.setattr(Pool, "peak", lambda self, holder, kind, start, end: peak(
        self.spans.get(holder, ()), start, end, (lambda s: s.cores) if kind == "cores" else (lambda s: s.job.nodes)))
    assert outcome() == profiled
    assert sum(start is not None for start, _, _ in profiled.values()) > 250
