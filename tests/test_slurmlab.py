"""The Slurm lab's configuration, without a Slurm: what ``slurmlab.slurm_conf`` writes."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import ROOT

sys.path.insert(0, str(ROOT / "lab"))
import slurmlab  # noqa: E402


def _conf(**shape) -> list[str]:
    return slurmlab.slurm_conf(slurmlab.Lab(Path("/var/lib/jufo-lab"), accounting=True, **shape)).splitlines()


def test_fair_share_usage_decays_with_the_half_life_asked_in_lab_minutes():
    """Slurm's default half-life, 7 days, is 101 lab minutes at --scale 100; the labs before
    --halflife decayed usage in 10."""
    assert "PriorityDecayHalfLife=0-00:10:00" in _conf(priority="fairshare")
    assert "PriorityDecayHalfLife=0-01:41:00" in _conf(priority="fairshare", halflife=101)
    assert "PriorityDecayHalfLife=1-00:01:00" in _conf(priority="fairshare", halflife=1441)
    assert not any(line.startswith("PriorityDecayHalfLife") for line in _conf(priority="multifactor"))
