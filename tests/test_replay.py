"""Replays of real traces: the published EASY figures, and job-by-job agreement with an
independent EASY simulator (tests/easy_reference.py)."""

import json

import pytest
from click.testing import CliRunner

from conftest import ROOT
from easy_reference import load, simulate
from jufo.io import lml
from jufo.io import swf
from jufo.engine.snapshot import trace_snapshot
from jufo.cli import main
from jufo.io.errors import Report
from jufo.forecast import predict

TRACES = ROOT.parent / "shared" / "traces"
KTH = TRACES / "KTH-SP2-1996-2-filtered-sc15.swf.gz"
LUBLIN = TRACES / "lublin_256.swf.gz"

needs_traces = pytest.mark.skipif(not KTH.exists(), reason="../shared/traces is not beside the project")


@needs_traces
def test_kth_easy_reproduces_the_published_figures():
    """Gaussier et al., SC'15: EASY, FCFS, requested times as estimates, real run times, 100
    processors: mean flow 15,696.8 s, max 309,231 s, mean bounded slowdown 92.58, max
    14,805.2; two independent simulators batching each second's events give 15,694.5 s and 92.69."""
    result = CliRunner().invoke(main, ["replay", str(KTH), "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    stats = json.loads(result.stdout)
    assert stats["jobs"] == 28481 and stats["not_started"] == 0
    assert 15694 <= stats["mean_flow"] <= 15697
    assert stats["max_flow"] == 309231
    assert stats["mean_bsld"] == pytest.approx(92.6, abs=0.15)
    assert stats["max_bsld"] == pytest.approx(14805.2, abs=0.05)


@needs_traces
@pytest.mark.parametrize("trace,exact", [(KTH, False), (LUBLIN, True)], ids=["kth", "lublin-exact"])
def test_same_starts_as_independent_easy(trace, exact):
    reference = simulate(load(str(trace)), swf.read(str(trace)).max_procs)
    data, _ = swf.snapshot(swf.read(str(trace)), swf.Conversion(future=True, exact=exact, actual=True,
                                                                settings={"system_state": "AttributeState"}))
    forecast = predict(lml.parse(data), Report(quiet=True))
    offset = min(job.submit for job in swf.read(str(trace)).jobs)
    starts = {int(job.data["step"]): job.start + offset for job in forecast.jobs}
    assert starts == reference


@needs_traces
@pytest.mark.parametrize("trace", [KTH, TRACES / "HPC2N-2002-2.1-cln.swf.gz"], ids=["kth", "hpc2n"])
def test_replay_jobs_equal_the_read_ones(trace):
    """What ``replay`` simulates without -o (Jobs built from the trace directly) is what it
    reads from the snapshot with -o: every field of every job, at the first submit and at a
    busy moment with running jobs placed on nodes."""
    from test_swf import _read_back, same_jobs

    records = swf.read(str(trace))
    middle = records.jobs[len(records.jobs) // 2].submit
    for conv in (swf.Conversion(future=True, actual=True, settings={"system_state": "AttributeState"}),
                 swf.Conversion(at=middle, future=True, exact=True, actual=True)):
        _, jobs, _ = trace_snapshot(records, conv)
        assert same_jobs(jobs, _read_back(records, conv)) > 10_000
        assert any(job.running and job.nodelist for job in jobs) == (conv.at is not None)
