"""The results the thesis gives, to the second (issue 2, 'Results that must come out exactly')."""

import pytest

from conftest import SAMPLES

TABLE_3_1 = {
    ("FCFS", "1"): {"j5": 4, "j1": 6, "j4": 6, "j6": 9},
    ("List", "1"): {"j1": 0, "j4": 4, "j5": 5, "j6": 7},
    ("Backfilling", "1"): {"j4": 0, "j5": 4, "j1": 6, "j6": 7},
    ("Backfilling", "all"): {"j4": 0, "j5": 4, "j1": 6, "j6": 7},
}


@pytest.mark.parametrize("state", ["NodeState", "AttributeState"])
@pytest.mark.parametrize("algorithm,topdogs", list(TABLE_3_1))
def test_table_3_1(jufo, state, algorithm, topdogs):
    run = jufo((SAMPLES / "thesis-table-3.1.xml").read_bytes(), "--set", f"system_state={state}",
               "--set", f"scheduling_algorithm={algorithm}", "--set", f"maxtopdogs={topdogs}")
    assert run.exit_code == 0, run.stderr
    assert {job: run.start(job) for job in TABLE_3_1[(algorithm, topdogs)]} == TABLE_3_1[(algorithm, topdogs)]
    # running jobs get only their end
    assert run.jobs["j2"]["jufo_endtime"] == "01/10/12-12:00:04"
    assert "jufo_starttime" not in run.jobs["j3"]


def test_table_3_1_backfilling_flags(jufo):
    run = jufo((SAMPLES / "thesis-table-3.1.xml").read_bytes())
    assert run.jobs["j4"].get("jufo_backfilled") == "1"  # starts ahead of j5 and j1
    assert run.jobs["j5"].get("jufo_topdog") == "1"
    assert "jufo_backfilled" not in run.jobs["j5"]


def test_listing_7_2(jufo):
    run = jufo((SAMPLES / "thesis-listing-7.2.xml").read_bytes())
    assert run.exit_code == 0, run.stderr
    job3, job2 = run.jobs["job3"], run.jobs["job2"]
    assert job3["jufo_starttime"] == "11/24/11-15:00:00"
    assert job3["jufo_ranges"] == "(1(1-3))"
    assert job3["jufo_nodelist"] == "(node1,3)"
    assert job2["jufo_starttime"] == "11/24/11-15:00:05"
    assert job2["jufo_endtime"] == "11/24/11-15:00:25"
    assert run.jobs["job1"]["jufo_ranges"] == "(1(4-5))"
