"""Job semantics: reasons, defaults, future submissions, limits, node lists, sharing, horizon."""

from conftest import running, snapshot, waiting


def test_exceeds_system_leaves_others_unaffected(jufo):
    jobs = {"huge": waiting(2, 10, nodes=2), "fat": waiting(8, 10), "ok": waiting(4, 10),
            "ok2": waiting(2, 10, queued="01/10/12-11:30:00")}
    run = jufo(snapshot(jobs, nodes={"n1": 4}))
    assert run.jobs["huge"]["jufo_reason"] == "ExceedsSystem: asks 2 nodes, the system has 1"
    assert run.jobs["fat"]["jufo_reason"] == "ExceedsSystem: asks 8 cores per node, the largest node has 4"
    assert (run.start("ok"), run.start("ok2")) == (0, 10)
    attr = jufo(snapshot(jobs, nodes={"n1": 4}, scheduler={"system_state": "AttributeState"}))
    assert attr.jobs["fat"]["jufo_reason"] == "ExceedsSystem: asks 8 cores, the system has 4"


def test_bad_wall_gives_reason_not_exit(jufo):
    run = jufo(snapshot({"a": waiting(1, "ten"), "b": waiting(1, 10)}))
    assert run.exit_code == 0
    assert run.jobs["a"]["jufo_reason"].startswith("BadInput: wall")
    assert run.start("b") == 0


def test_wall_in_clock_form(jufo):
    run = jufo(snapshot({"a": waiting(1, "00:01:30")}))
    assert run.jobs["a"]["jufo_endtime"] == "01/10/12-12:01:30"


def test_an_unlimited_wall_runs_the_queues_maxtime_or_a_year(jufo):
    """LLview 2 passes Slurm's ``TimeLimit=UNLIMITED`` on as it is: Slurm's backfill plans such a
    job with its partition's MaxTime, or a year where that is unlimited too. A running one holds
    its node (it does not end at system_time), a waiting one gets a forecast."""
    jobs = {"r": {**running(4, 0, wall=100), "wall": "UNLIMITED", "dispatchdate": "01/10/12-12:00:00"},
            "q": waiting(4, "UNLIMITED", queue="short"), "w": waiting(4, "UNLIMITED")}
    run = jufo(snapshot(jobs, nodes={"n1": 4, "n2": 4}, queues={"short": {"maxtime": "3600"}}))
    assert run.exit_code == 0
    assert run.jobs["r"]["jufo_endtime"] == "01/09/13-12:00:00"  # started at T0: 365 days later (2012 is leap)
    assert (run.start("q"), run.jobs["q"]["jufo_endtime"]) == (0, "01/10/12-13:00:00")  # the queue's MaxTime
    assert run.start("w") == 3600  # after q, on n2: n1 is held for a year


def test_a_job_pending_in_several_partitions_starts_at_once_where_one_has_idle_nodes(jufo):
    """Slurm starts a job pending in several partitions (``Partition=p1,p2``) where it can start
    first. p1, listed first, is full until T0+1000 s; p2's nodes are idle: the job starts now in
    p2 (it waited for p1 before). With no partition idle it goes to the first listed that fits, and
    a job too wide for the idle one waits for the first that can hold it."""
    nodes = {"a1": {"ncores": 4, "avail_classes": "(p1,4)"}, "a2": {"ncores": 4, "avail_classes": "(p1,4)"},
             "b1": {"ncores": 4, "avail_classes": "(p2,4)"}}
    busy = {"r": running(4, 1000, wall=2000, nodes=2, queue="p1", nodelist="(a1,4)(a2,4)")}
    run = jufo(snapshot({**busy, "j": waiting(4, 600, queue="p1,p2")}, nodes=nodes))
    assert run.exit_code == 0, run.stderr
    assert run.start("j") == 0 and run.jobs["j"]["jufo_nodelist"].startswith("(b1")
    # both partitions busy: the first listed
    full = {**busy, "s": running(4, 500, wall=2000, queue="p2", nodelist="(b1,4)")}
    run = jufo(snapshot({**full, "j": waiting(4, 600, queue="p1,p2")}, nodes=nodes))
    assert run.start("j") == 1000 and run.jobs["j"]["jufo_nodelist"].startswith("(a")
    # two nodes: p2 cannot hold it, so it waits for p1
    run = jufo(snapshot({**busy, "j": waiting(4, 600, queue="p1,p2", nummachines=2)}, nodes=nodes))
    assert run.start("j") == 1000


def test_size_spellings(jufo):
    """Counts read as plain digits, padded, or ``4.000`` alike; zero, negative or words make the
    job BadInput naming the key and value; a wall of 0 s is allowed (it ends at once)."""
    jobs = {"plain": waiting(2, 60, nodes="2"), "padded": waiting(" 2 ", 60, nodes=" 2"),
            "decimal": waiting("2.000", "60", nodes="2.000"), "zero": waiting(2, 60, nodes="0"),
            "negative": waiting("-2", 60), "word": waiting(2, 60, nodes="two"), "instant": waiting(1, "0")}
    run = jufo(snapshot(jobs, nodes={"n1": 4, "n2": 4}))
    # each 2 nodes x 2 cores: two fill the two 4-core nodes, the third waits for them
    assert [run.start(name) for name in ("plain", "padded", "decimal")] == [0, 0, 60]
    assert run.jobs["zero"]["jufo_reason"] == "BadInput: nummachines: nummachines='0' is not a positive whole number"
    assert run.jobs["negative"]["jufo_reason"] == \
        "BadInput: taskspernode: taskspernode='-2' is not a positive whole number"
    assert run.jobs["word"]["jufo_reason"].startswith("BadInput: nummachines: nummachines='two'")
    assert run.jobs["instant"].get("jufo_endtime") == run.jobs["instant"].get("jufo_starttime")


def test_other_states_not_scheduled(jufo):
    run = jufo(snapshot({"a": {**waiting(1, 10), "state": "Completed"}}))
    assert run.jobs["a"]["jufo_reason"].startswith("NotQueued: state 'Completed'")


def test_missing_queuedate_defaults_with_warning(jufo):
    job = waiting(1, 10)
    del job["queuedate"]
    run = jufo(snapshot({"a": job}))
    assert run.start("a") == 0
    assert "job a: queuedate: missing; assuming system_time" in run.stderr


def test_no_size_defaults_to_one_core(jufo):
    run = jufo(snapshot({"a": {"state": "Idle", "wall": 10, "queuedate": "01/10/12-11:00:00"}}))
    assert run.jobs["a"]["jufo_ranges"] == "(1(1))"
    assert "assuming 1 node, 1 core" in run.stderr


def test_totalcores_only_spreads_over_fewest_nodes(jufo):
    run = jufo(snapshot({"a": {"state": "Idle", "wall": 10, "totalcores": 6, "queuedate": "01/10/12-11:00:00"}},
                        nodes={"n1": 4, "n2": 4}))
    assert run.jobs["a"]["jufo_ranges"] == "(1-2(1-3))"
    assert run.jobs["a"]["jufo_nodelist"] == "(n1,3)(n2,3)"


def test_future_submission_waits_for_its_queuedate(jufo):
    run = jufo(snapshot({"later": waiting(1, 10, queued="01/10/12-12:05:00")}))
    assert run.start("later") == 300


def test_running_job_past_its_end_ends_at_time_zero(jufo):
    jobs = {"late": running(4, ends_in=-50), "a": waiting(4, 10)}
    run = jufo(snapshot(jobs))
    assert run.jobs["late"]["jufo_endtime"] == "01/10/12-12:00:00"
    assert run.start("a") == 0


def test_running_nodelist_forms(jufo):
    nodes = {"n1": 4, "n2": 4}
    nested = jufo(snapshot({"r": running(2, 50, nodes=2, nodelist="(1-2(3-4))")}, nodes=nodes))
    assert nested.jobs["r"]["jufo_ranges"] == "(1-2(3-4))"
    named = jufo(snapshot({"r": running(3, 50, nodelist="(n2,3)")}, nodes=nodes))
    assert named.jobs["r"]["jufo_ranges"] == "(2(1-3))"
    several = jufo(snapshot({"r": running(2, 50, nodelist="(2(1,4))")}, nodes=nodes))
    assert several.jobs["r"]["jufo_ranges"] == "(2(1,4))"
    # without core numbers: the lowest free cores, here after another running job
    both = jufo(snapshot({"r1": running(2, 50, nodelist="(1(1-2))"), "r2": running(2, 50, nodelist="(1)")}, nodes=nodes))
    assert both.jobs["r2"]["jufo_ranges"] == "(1(3-4))"


def test_running_nodelist_that_overlaps_is_counted_once(jufo):
    jobs = {"r1": running(2, 50, nodelist="(1(1-2))"), "r2": running(2, 50, nodelist="(1(2-3))")}
    run = jufo(snapshot(jobs))
    assert run.jobs["r2"]["jufo_ranges"] == "(1(3))"
    assert "job r2: nodelist='(1(2-3))': claims cores another running job holds" in run.stderr


def test_bad_running_nodelist_falls_back_with_warning(jufo):
    run = jufo(snapshot({"r": running(2, 50, nodelist="(9(1))")}))
    assert run.jobs["r"]["jufo_ranges"] == "(1(1-2))"
    assert "beyond the 1 nodes" in run.stderr


def test_waiting_job_waits_for_running(jufo):
    jobs = {"r": running(3, ends_in=30), "a": waiting(2, 10)}
    run = jufo(snapshot(jobs))
    assert run.start("a") == 30
    assert run.jobs["a"]["jufo_topdog"] == "1"


def test_node_sharing_no_gives_whole_nodes(jufo):
    jobs = {"a": waiting(1, 10), "b": waiting(1, 10, queued="01/10/12-11:10:00"),
            "c": waiting(1, 10, queued="01/10/12-11:20:00")}
    shared = jufo(snapshot(jobs, nodes={"n1": 4, "n2": 4}))
    assert [shared.start(j) for j in "abc"] == [0, 0, 0]
    exclusive = jufo(snapshot(jobs, nodes={"n1": 4, "n2": 4}, scheduler={"node_sharing": "no"}))
    assert [exclusive.start(j) for j in "abc"] == [0, 0, 10]
    assert exclusive.jobs["a"]["jufo_ranges"] == "(1(1-4))"
    assert exclusive.jobs["b"]["jufo_nodelist"] == "(n2,4)"


def test_avail_classes_limit_cores_per_queue(jufo):
    nodes = {"n1": {"ncores": 8, "avail_classes": "(small,4)(large,8)"}}
    jobs = {"s1": waiting(4, 10, queue="small"), "s2": waiting(2, 10, queue="small", queued="01/10/12-11:10:00"),
            "l1": waiting(4, 10, queue="large", queued="01/10/12-11:20:00"),
            "x": waiting(1, 10, queue="other", queued="01/10/12-11:30:00")}
    run = jufo(snapshot(jobs, nodes=nodes))
    assert run.start("s1") == 0
    assert run.start("s2") == 10  # small may use only 4 cores of n1 at once
    assert run.start("l1") == 0
    assert run.jobs["x"]["jufo_reason"].startswith("ExceedsSystem")


def test_queue_limits(jufo):
    queues = {"batch": {"maxjobs": "1"}}
    jobs = {"a": waiting(1, 10), "b": waiting(1, 10, queued="01/10/12-11:10:00")}
    run = jufo(snapshot(jobs, queues=queues))
    assert (run.start("a"), run.start("b")) == (0, 10)
    per_user = {"batch": {"maxjobsperuser": "1"}}
    jobs["c"] = waiting(1, 10, queued="01/10/12-11:20:00", owner="other")
    run = jufo(snapshot(jobs, queues=per_user))
    assert (run.start("a"), run.start("b"), run.start("c")) == (0, 10, 0)
    starters = {"batch": {"starters": "3"}}
    jobs2 = {"a": waiting(2, 10), "b": waiting(2, 10, queued="01/10/12-11:10:00")}
    run = jufo(snapshot(jobs2, queues=starters))
    assert (run.start("a"), run.start("b")) == (0, 10)
    too_big = jufo(snapshot({"a": waiting(4, 10)}, queues=starters))
    assert too_big.jobs["a"]["jufo_reason"] == "ExceedsSystem: asks 4 cores, queue batch may use 3"


def test_maxnumjobs(jufo):
    jobs = {f"j{i}": waiting(1, 10, queued=f"01/10/12-11:0{i}:00") for i in range(4)}
    run = jufo(snapshot(jobs, scheduler={"maxnumjobs": 2}))
    assert run.start("j0") == 0 and run.start("j1") == 0
    assert run.jobs["j2"]["jufo_reason"].startswith("MaxNumJobs")
    assert run.jobs["j3"]["jufo_reason"].startswith("MaxNumJobs")


def test_horizon(jufo):
    jobs = {"r": running(4, ends_in=100), "a": waiting(4, 10), "b": waiting(4, 10, queued="01/10/12-11:10:00")}
    run = jufo(snapshot(jobs, scheduler={"horizon": 105}))
    assert run.start("a") == 100
    assert run.jobs["b"]["jufo_reason"] == "BeyondHorizon: no start within the horizon of 105 s"


def test_topdogs_per_queue(jufo):
    """With one top dog in all, c backfills on core 4 for 100 s and delays b; with one top
    dog per queue, b holds a reservation that c may not touch."""
    jobs = {"r": running(2, ends_in=10), "a": waiting(3, 10, queue="qa"),
            "b": waiting(4, 10, queue="qb", queued="01/10/12-11:10:00"),
            "c": waiting(1, 100, queue="qc", queued="01/10/12-11:20:00")}
    one = jufo(snapshot(jobs))
    assert [one.start(j) for j in "abc"] == [10, 100, 0]
    assert one.jobs["c"]["jufo_backfilled"] == "1"
    per_queue = jufo(snapshot(jobs, scheduler={"topdogs_per_queue": "yes"}))
    assert [per_queue.start(j) for j in "abc"] == [10, 20, 30]
    assert per_queue.jobs["b"]["jufo_topdog"] == "1"


def test_advance_reservation_blocks_its_nodes(jufo):
    reservations = {"maint": {"starttime": "01/10/12-12:00:10", "endtime": "01/10/12-12:01:00", "nodelist": "(n1,4)"}}
    jobs = {"long": waiting(4, 20), "short": waiting(2, 10, queued="01/10/12-11:10:00")}
    run = jufo(snapshot(jobs, reservations=reservations))
    assert run.start("short") == 0  # fits before the reservation starts
    assert run.start("long") == 60


def test_a_reservations_jobs_count_the_gpus_of_jobs_running_on_its_nodes(jufo):
    """A job bound to a reservation (``--reservation``) is scheduled in the reservation's own
    state, where a job running on its nodes without being in it (it started before the
    reservation began, as with Slurm's ``IGNORE_JOBS``) was a shadow holding cores only: a
    job asking 2 GPUs started at once beside one holding 3 of the node's 4. Now the shadow
    holds its job's GPUs too; one GPU is free, so the job asking one starts now."""
    nodes = {"n1": {"ncores": 4, "gpus": 4}, "n2": {"ncores": 4, "gpus": 4}}
    resv = {"r": {"resid": "r", "starttime": "01/10/12-11:00:00", "endtime": "01/10/12-13:00:00", "nodelist": "(n1,4)"}}
    jobs = {"g": running(1, ends_in=600, wall=1000, nodelist="(n1,1)", totalgpus=3),
            "b": waiting(1, 100, totalgpus=2, reservation="r"),
            "c": waiting(1, 100, totalgpus=1, reservation="r", queued="01/10/12-11:30:00")}
    for plan in ("simulate", "slurm"):
        run = jufo(snapshot(jobs, nodes, {"system_state": "NodeState", "reservation_binding": "named", "plan": plan},
                            reservations=resv))
        assert (run.start("b"), run.start("c")) == (600, 0), plan
        assert run.jobs["b"]["jufo_nodelist"] == "(n1,1)"


def test_zero_wall_job(jufo):
    run = jufo(snapshot({"z": waiting(4, 0), "a": waiting(4, 5, queued="01/10/12-11:10:00")}))
    assert run.start("z") == 0 and run.start("a") == 0


def test_whole_nodes_are_written_as_node_by_node_would_write_them():
    """On a machine of one node size, whole-node resources are written per run of nodes; the
    text equals the general node-by-node writer's, on machines with and without one size."""
    import random

    from jufo.engine.prediction import resource_pairs
    from jufo.engine.node import Machine, Node
    from jufo.engine.ranges import NodeCores, format_nested

    rng = random.Random(7)
    for sizes in ([4] * 70, [4] * 35 + [8] * 35, [1] * 70):
        machine = Machine([Node(i, f"n{i:03d}", f"node{i}", cores, None) for i, cores in enumerate(sizes)])
        assert (machine.uniform_cores is not None) == (len(set(sizes)) == 1)
        for _ in range(200):
            full = rng.getrandbits(70) & rng.getrandbits(70) if rng.random() < 0.8 else (1 << 70) - 1
            pairs = NodeCores(full).pairs(machine.shape)
            expected = [("jufo_nodelist", "".join(f"(node{n},{mask.bit_count()})" for n, mask in pairs)),
                        ("jufo_ranges", format_nested(pairs))]
            assert resource_pairs(NodeCores(full), machine) == expected
