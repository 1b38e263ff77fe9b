"""Real-world LML as LLview's Slurm adapter and PTP's LML_da write it (issue 5)."""

import pytest
from click.testing import CliRunner

from conftest import SAMPLES, predictions, running, snapshot, waiting
from jufo.cli import main
from jufo.engine.node import Machine, Node, parse_classes, parse_nodelist
from jufo.io.hostlist import expand_hostlist


def predict(tmp_path, raw: bytes, *options: str):
    src, out = tmp_path / "in.xml", tmp_path / "out.xml"
    src.write_bytes(raw)
    result = CliRunner().invoke(main, ["predict", str(src), "-o", str(out), *options])
    assert result.exit_code == 0, result.stderr
    return out.read_bytes(), result.stderr


def without_results(data: bytes) -> bytes:
    return b"\n".join(line for line in data.split(b"\n") if b'key="jufo_' not in line)


@pytest.mark.parametrize("sample,start", [("slurm-adapter.xml", "06/03/25-15:00:00"),
                                          ("slurm-adapter-maint.xml", "06/03/25-12:00:00")])
def test_slurm_adapter_acceptance(tmp_path, sample, start):
    raw = (SAMPLES / sample).read_bytes()
    out, _ = predict(tmp_path, raw)
    assert predictions(out)["j000002"]["jufo_starttime"] == start
    assert predictions(out)["j000002"]["jufo_nodelist"] == "(jrc0001,128)(jrc0002,128)"
    assert without_results(out) == raw  # pstat objects, tables, the adapter's own keys: all kept


def test_ptp_loadleveler_acceptance(tmp_path):
    raw = (SAMPLES / "ptp-loadleveler.xml").read_bytes()
    out, stderr = predict(tmp_path, raw)
    jobs = predictions(out)
    assert jobs["j000002"]["jufo_starttime"] == "11/24/11-15:00:00"  # now
    assert jobs["j000002"]["jufo_nodelist"] == "(node01,1)"  # one core, beside the running tasks
    assert jobs["j000001"]["jufo_ranges"] == "(1(1-2))"  # tasks on core indices 0 and 1
    assert jobs["j000003"]["jufo_reason"].startswith("Held")
    assert "job j000002: totalcores: no size given" in stderr
    assert without_results(out) == raw


def test_no_scheduler_object_runs_defaults(tmp_path):
    out, _ = predict(tmp_path, snapshot({"a": waiting(2, 10)}))
    assert predictions(out)["a"]["jufo_starttime"] == "01/10/12-12:00:00"


@pytest.fixture
def machine():
    nodes = [Node(0, "nd1", "jrc0001", 128, None), Node(1, "nd2", "jrc0002", 128, None),
             Node(2, "nd3", "node01", 8, None)]
    return Machine(nodes)


def test_cores_per_node_pairs(machine):
    assert parse_nodelist("(jrc0001,128)(jrc0002,128)", machine, 256) == [(0, None, 128), (1, None, 128)]


def test_per_task_pairs(machine):
    # a repeated name, or a core index 0, means one pair per task
    assert parse_nodelist("(node01,0)(node01,1)", machine, 2) == [(2, 1, None), (2, 2, None)]
    assert parse_nodelist("(node01,0)", machine, 1) == [(2, 1, None)]


def test_single_ambiguous_pair(machine):
    """(node01,4): 4 cores for a 4-core job; the task on core index 4 for a 1-core job."""
    assert parse_nodelist("(node01,4)", machine, 4) == [(2, None, 4)]
    assert parse_nodelist("(node01,4)", machine, 1) == [(2, 1 << 4, None)]
    assert parse_nodelist("(node01,4)", machine, None) == [(2, None, 4)]  # unknown size: cores


def test_hostlists(machine):
    assert expand_hostlist("jrc[0001-0002,0007],login1") == ["jrc0001", "jrc0002", "jrc0007", "login1"]
    assert [n for n, _, _ in parse_nodelist("jrc[0001-0002]", machine)] == [0, 1]
    assert [n for n, _, _ in parse_nodelist("jrc0002,node01", machine)] == [1, 2]
    with pytest.raises(ValueError, match="no node named 'jrc0009'"):
        parse_nodelist("jrc[0009]", machine)


def test_classes_both_spellings():
    assert parse_classes("[batch:128][devel:64]") == {"batch": 128, "devel": 64}
    assert parse_classes("(small,4)") == {"small": 4}


def test_node_states(tmp_path):
    nodes = {"n1": {"ncores": 4, "state": "Down"}, "n2": {"ncores": 4, "state": "Idle"}}
    out, _ = predict(tmp_path, snapshot({"a": waiting(4, 10), "b": waiting(4, 10, queued="01/10/12-11:10:00")},
                                        nodes=nodes))
    jobs = predictions(out)
    assert jobs["a"]["jufo_nodelist"] == "(n2,4)"  # not on the down node
    assert jobs["b"]["jufo_starttime"] == "01/10/12-12:00:10"


@pytest.mark.parametrize("state", ["NodeState", "AttributeState"])
def test_slurm_node_states_as_llview2_leaves_them(tmp_path, state):
    """LLview 2 maps a few of Slurm's node states and leaves the rest as Slurm wrote them: a
    draining node (with a running job, which goes on) and one not responding (``*``) take no
    new job; a powered-down one does (Slurm boots it). The draining node's job holds no core
    another job could have had: b starts when a ends, not when the draining node's job does."""
    nodes = {"drain": {"ncores": 4, "state": "MIXED+DRAIN"}, "noresp": {"ncores": 4, "state": "IDLE*"},
             "cloud": {"ncores": 4, "state": "IDLE+CLOUD+POWERED_DOWN"}}
    jobs = {"r": running(2, 600, nodelist="(drain,2)"), "a": waiting(4, 100),
            "b": waiting(4, 100, queued="01/10/12-11:10:00")}
    out, _ = predict(tmp_path, snapshot(jobs, nodes=nodes, scheduler={"system_state": state}))
    got = predictions(out)
    assert got["a"]["jufo_starttime"] == "01/10/12-12:00:00" and got["b"]["jufo_starttime"] == "01/10/12-12:01:40"
    assert got["r"]["jufo_endtime"] == "01/10/12-12:10:00"
    if state == "NodeState":
        assert got["a"]["jufo_nodelist"] == got["b"]["jufo_nodelist"] == "(cloud,4)"


def test_exclusive_partitions_are_read_off_the_running_jobs(tmp_path):
    """LLview 2's files do not say a partition is OverSubscribe=EXCLUSIVE, and show a pending
    job of it with one core per node. Where every running job of a queue (three at least)
    holds whole nodes, its waiting jobs are taken to as well: ``w`` waits for two whole
    nodes, not for one core on each of n4 and n5. ``exclusive_queues=none`` says otherwise,
    and a queue whose running jobs share a node is not read so."""
    nodes = {f"n{i}": 4 for i in range(1, 6)}
    jobs = {f"r{i}": running(4, 600 * i, wall=3600, nodelist=f"(n{i},4)") for i in range(1, 4)}
    jobs["s"] = running(1, 300, wall=3600, nodelist="(n4,1)", queue="shared")
    jobs["w"] = waiting(1, 100, nodes=2)
    got = predictions(predict(tmp_path, snapshot(jobs, nodes=nodes))[0])
    assert got["w"]["jufo_starttime"] == "01/10/12-12:05:00"  # when s leaves n4 whole
    assert got["w"]["jufo_nodelist"] == "(n4,4)(n5,4)"
    said = predictions(predict(tmp_path, snapshot(jobs, nodes=nodes, scheduler={"exclusive_queues": "none"}))[0])
    assert said["w"]["jufo_starttime"] == "01/10/12-12:00:00" and said["w"]["jufo_nodelist"] == "(n4,1)(n5,1)"
    jobs["r3"] = running(2, 1800, wall=3600, nodelist="(n3,2)")  # a batch job sharing its node
    shared = predictions(predict(tmp_path, snapshot(jobs, nodes=nodes))[0])
    assert shared["w"]["jufo_starttime"] == "01/10/12-12:00:00"


def test_size_keys(tmp_path):
    jobs = {
        "numnodes_ppn": {**waiting(1, 10), "nummachines": "", "taskspernode": "", "numnodes": 2, "ppn": 3},
        "tasks_tpt": {"state": "Idle", "queuedate": "01/10/12-11:00:00", "wall": 10, "totaltasks": 3, "tpt": 2},
    }
    out, _ = predict(tmp_path, snapshot(jobs, nodes={"n1": 8, "n2": 8}))
    got = predictions(out)
    assert got["numnodes_ppn"]["jufo_nodelist"] == "(n1,3)(n2,3)"
    assert got["tasks_tpt"]["jufo_nodelist"] == "(n1,6)"


def test_pending_and_held_states(tmp_path):
    jobs = {"p": {**waiting(1, 10), "state": "Pending"}, "h": {**waiting(1, 10), "state": "System Hold"},
            "r": {**running(1, 50), "starttime": "01/10/12-11:59:10", "dispatchdate": ""}}
    out, _ = predict(tmp_path, snapshot(jobs))
    got = predictions(out)
    assert got["p"]["jufo_starttime"] == "01/10/12-12:00:00"
    assert got["h"]["jufo_reason"].startswith("Held: state 'System Hold'")
    assert got["r"]["jufo_endtime"] == "01/10/12-12:00:50"  # running: starttime + wall


@pytest.mark.parametrize("when", [{"endtime": "01/10/12-12:01:00"}, {"wall": "00:01:00"}, {"wall": "60"}])
def test_reservation_end_forms(tmp_path, when):
    res = {"maint": {"starttime": "01/10/12-12:00:00", "nodelist": "n[1]", "flags": "MAINT", **when}}
    out, _ = predict(tmp_path, snapshot({"a": waiting(4, 10)}, nodes={"n1": 4}, reservations=res))
    assert predictions(out)["a"]["jufo_starttime"] == "01/10/12-12:01:00"


def test_bad_reservation_is_left_out_with_a_warning(tmp_path):
    res = {"r1": {"starttime": "01/10/12-12:00:00", "wall": "1:00:00", "nodelist": "nosuch[1-2]"}}
    out, stderr = predict(tmp_path, snapshot({"a": waiting(4, 10)}, reservations=res))
    assert "reservation r1: nodelist='nosuch[1-2]': no node named 'nosuch1'; reservation left out" in stderr
    assert predictions(out)["a"]["jufo_starttime"] == "01/10/12-12:00:00"


def test_config_precedence(tmp_path):
    """--set > --config > the snapshot's scheduler object > defaults."""
    raw = (SAMPLES / "thesis-table-3.1.xml").read_bytes()  # says Backfilling
    fcfs, _ = predict(tmp_path, raw, "--config", "fcfs")
    assert predictions(fcfs)["j4"]["jufo_starttime"] == "01/10/12-12:00:06"  # FCFS: j4 waits
    both, _ = predict(tmp_path, raw, "--config", "fcfs", "--set", "scheduling_algorithm=List")
    assert predictions(both)["j1"]["jufo_starttime"] == "01/10/12-12:00:00"  # List: j1 first
    preset = tmp_path / "mine.xml"
    preset.write_bytes(snapshot({}, scheduler={"scheduling_algorithm": "FCFS"}))
    by_path, _ = predict(tmp_path, raw, "--config", str(preset))
    assert by_path == fcfs


def test_missing_preset(tmp_path):
    src = tmp_path / "in.xml"
    src.write_bytes(snapshot({}))
    result = CliRunner().invoke(main, ["predict", str(src), "--config", "nope"])
    assert result.exit_code == 2 and "--config='nope'" in result.stderr


PRESETS = sorted(p.stem for p in (SAMPLES.parent / "configs").glob("*.xml"))


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_run(tmp_path, preset):
    predict(tmp_path, (SAMPLES / "slurm-adapter.xml").read_bytes(), "--config", preset)


# Mallmann's strategies on one machine of 4 cores: which of three waiting jobs goes first
STRATEGY_FIRST = {"fcfs": "old", "sptf": "short", "lptf": "long", "sjsf": "small", "ljsf": "big",
                  "scdf": "short", "lcdf": "long"}


@pytest.mark.parametrize("strategy", sorted(STRATEGY_FIRST))
def test_strategy_presets_order(tmp_path, strategy):
    """old: 2 cores x 500 s (queued first); short: 2 x 10; long: 2 x 5000; small: 1 x 100; big: 4 x 400.
    Nothing is free until 100 s; whichever job the strategy ranks first starts then."""
    jobs = {"run": running(4, 100),
            "old": waiting(2, 500, queued="01/10/12-10:00:00", totalcores=2), "short": waiting(2, 10, totalcores=2),
            "long": waiting(2, 5000, totalcores=2), "small": waiting(1, 100, totalcores=1),
            "big": waiting(4, 400, totalcores=4)}
    for name in (strategy, f"{strategy}-bf"):
        out, _ = predict(tmp_path, snapshot(jobs), "--config", name)
        starts = {j: v.get("jufo_starttime") for j, v in predictions(out).items() if j in jobs and j != "run"}
        first = min((v, j) for j, v in starts.items() if v)[0]
        assert starts[STRATEGY_FIRST[strategy]] == first == "01/10/12-12:01:40", (name, starts)


def test_dependencies_wait_for_the_simulated_jobs(tmp_path):
    jobs = {
        "first": {**waiting(4, 30), "step": "100"},
        "after_ok": {**waiting(1, 10, queued="01/10/12-11:10:00"), "step": "101", "dependency": "afterok:100"},
        "after_start": {**waiting(1, 10, queued="01/10/12-11:20:00"), "step": "102",
                        "dependency": "after:101"},
        "gone": {**waiting(1, 10, queued="01/10/12-11:30:00"), "dependency": "afterany:999:100"},
        "held_dep": {**waiting(1, 10, queued="01/10/12-11:40:00"), "dependency": "afterok:103"},
        "held": {**waiting(1, 10, queued="01/10/12-11:50:00"), "step": "103", "state": "User Hold"},
    }
    out, _ = predict(tmp_path, snapshot(jobs))
    got = predictions(out)
    assert got["first"]["jufo_starttime"] == "01/10/12-12:00:00"
    assert got["after_ok"]["jufo_starttime"] == "01/10/12-12:00:30"  # when 100 has ended
    assert got["after_start"]["jufo_starttime"] == "01/10/12-12:00:30"  # as soon as 101 starts
    assert got["gone"]["jufo_starttime"] == "01/10/12-12:00:30"  # 999 is not in the snapshot: done
    assert got["held_dep"]["jufo_reason"].startswith("Dependency: waits for job 103 to end (Held")


def test_dependency_on_a_running_job(tmp_path):
    jobs = {"r": {**running(1, ends_in=40), "step": "7"}, "d": {**waiting(1, 5), "dependency": "afterok:7"}}
    out, _ = predict(tmp_path, snapshot(jobs))
    assert predictions(out)["d"]["jufo_starttime"] == "01/10/12-12:00:40"


def test_singleton_and_loadleveler_steps(tmp_path):
    jobs = {
        "s1": {**waiting(1, 20), "name": "nightly", "dependency": "singleton"},
        "s2": {**waiting(1, 20, queued="01/10/12-11:10:00"), "name": "nightly", "dependency": "singleton"},
        "st0": {**waiting(1, 15), "step": "p6a.77.0"},
        "st1": {**waiting(1, 5, queued="01/10/12-11:00:01"), "step": "p6a.77.1", "dependency": "(step0 == 0)"},
    }
    out, _ = predict(tmp_path, snapshot(jobs))
    got = predictions(out)
    assert got["s2"]["jufo_starttime"] == "01/10/12-12:00:20"
    assert got["st1"]["jufo_starttime"] == "01/10/12-12:00:15"


def test_gpu_jobs_only_on_gpu_nodes(tmp_path):
    nodes = {"cpu1": {"ncores": 4}, "gpu1": {"ncores": 4, "gpus": "4"}}
    jobs = {"g": {**waiting(1, 10), "totalgpus": 2}, "c": waiting(1, 10, queued="01/10/12-11:10:00"),
            "too_many": {**waiting(1, 10), "totalgpus": 8}}
    out, _ = predict(tmp_path, snapshot(jobs, nodes=nodes))
    got = predictions(out)
    assert got["g"]["jufo_nodelist"] == "(gpu1,1)"
    assert got["c"]["jufo_nodelist"] == "(cpu1,1)"
    assert got["too_many"]["jufo_reason"].startswith("ExceedsSystem: asks 1 nodes with 1 cores and 8 GPUs")


def test_status_where_state_is_missing(tmp_path):
    jobs = {"w": {**waiting(1, 10), "state": "", "status": "SUBMITTED"},
            "c": {**waiting(1, 10), "state": "", "status": "COMPLETED"}}
    out, _ = predict(tmp_path, snapshot(jobs))
    got = predictions(out)
    assert got["w"]["jufo_starttime"] == "01/10/12-12:00:00"
    assert got["c"]["jufo_reason"].startswith("NotQueued: state 'COMPLETED'")


def bound_case(**extra_res):
    reservation = {"resid": "r1", "starttime": "01/10/12-12:00:10", "endtime": "01/10/12-12:01:00",
                   "nodelist": "n1", "userlist": "alice", **extra_res}
    return {"r1obj": reservation}


def test_jobs_bound_to_a_reservation_run_inside_it(tmp_path):
    jobs = {"a": waiting(4, 20, owner="alice"), "b": waiting(4, 100, owner="bob", queued="01/10/12-11:10:00"),
            "k": waiting(2, 10, owner="carol", queued="01/10/12-11:20:00", reservation="r1")}
    out, _ = predict(tmp_path, snapshot(jobs, nodes={"n1": 4, "n2": 4}, reservations=bound_case()))
    got = predictions(out)
    assert got["a"]["jufo_starttime"] == "01/10/12-12:00:10"  # alice is listed: inside r1, from its start
    assert got["a"]["jufo_nodelist"] == "(n1,4)"
    assert got["b"]["jufo_nodelist"] == "(n2,4)"  # not bound: r1 blocks n1 for it
    assert got["k"]["jufo_starttime"] == "01/10/12-12:00:30"  # names r1; after alice's job, inside r1
    assert got["k"]["jufo_nodelist"] == "(n1,2)"


def test_bound_job_waits_for_running_jobs_on_the_reserved_cores(tmp_path):
    jobs = {"r": running(4, ends_in=25, nodelist="(n1,4)"), "a": waiting(4, 20, owner="alice")}
    out, _ = predict(tmp_path, snapshot(jobs, nodes={"n1": 4, "n2": 4}, reservations=bound_case()))
    assert predictions(out)["a"]["jufo_starttime"] == "01/10/12-12:00:25"


def test_bound_job_that_does_not_fit_inside(tmp_path):
    jobs = {"a": waiting(4, 100, owner="alice")}  # 100 s, the reservation lasts 50
    out, _ = predict(tmp_path, snapshot(jobs, nodes={"n1": 4, "n2": 4}, reservations=bound_case()))
    assert predictions(out)["a"]["jufo_reason"].startswith("Reservation: no room inside reservation r1")


def test_binding_with_core_counts(tmp_path):
    jobs = {"a": waiting(4, 20, owner="alice"), "b": waiting(8, 20, owner="bob")}
    out, _ = predict(tmp_path, snapshot(jobs, nodes={"n1": 4, "n2": 4}, reservations=bound_case(),
                                        scheduler={"system_state": "AttributeState"}))
    got = predictions(out)
    assert got["a"]["jufo_starttime"] == "01/10/12-12:00:10"
    assert got["b"]["jufo_starttime"] == "01/10/12-12:01:00"  # all 8 cores only after r1


def test_memory_only_where_both_sides_give_it(tmp_path):
    nodes = {"small": {"ncores": 4, "availmem": "16000 mb"}, "big": {"ncores": 4, "physmem": "512G"},
             "unknown": {"ncores": 4}}
    jobs = {"needs": {**waiting(1, 10), "memory": "64G"}, "any": waiting(4, 10, queued="01/10/12-11:10:00"),
            "huge": {**waiting(1, 10, nodes=3), "memory": "64G"}}
    out, _ = predict(tmp_path, snapshot(jobs, nodes=nodes))
    got = predictions(out)
    assert got["needs"]["jufo_nodelist"] == "(big,1)"  # not the 16 GB node
    assert got["any"]["jufo_nodelist"] == "(small,4)"  # no memory asked: any node
    assert got["huge"]["jufo_reason"].endswith("may use 2 such nodes")  # big, and unknown (not given)
