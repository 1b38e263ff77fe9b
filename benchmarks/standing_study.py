"""On how many of a trace's daily snapshots the users' standing is learned, and how its pairs
started: ``python -m benchmarks.standing_study TRACE [TRACE ...]``.

For each day from the trace's first submit on, ``fairshare.WaitIndex.evidence`` at that time
(what a backtest's snapshot would see): the pairs of two users' jobs of one shape that waited
together over the last 49 days, the share of them that started in submit order and in
standing order, and whether the habit is learned (``lags`` not empty). The figures of
docs/forecasting.md's "Users' standing" come from it.
"""

from __future__ import annotations

import argparse

from jufo.learn.backtest import Settings, _load
from jufo.learn.fairshare import MIN_PAIRS, WaitIndex

DAY = 86400


def study(trace: str) -> dict:
    """The evidence of every daily snapshot of ``trace``, read as ``jufo backtest TRACE`` reads
    it (the evidence looks at cores, not nodes: ``--cores`` changes nothing of it)."""
    _, records, _, _ = _load(Settings(trace))
    index = WaitIndex(records)
    days = learned = pairs = by_submit = by_standing = 0
    for now in range(records[0].submit + DAY, records[-1].submit, DAY):
        p, a, b = index.evidence(now)
        days += 1
        learned += p >= MIN_PAIRS and b > a
        pairs, by_submit, by_standing = pairs + p, by_submit + a, by_standing + b
    return {"trace": trace, "days": days, "learned": learned, "pairs": pairs,
            "in_submit_order": by_submit / pairs if pairs else None,
            "in_standing_order": by_standing / pairs if pairs else None}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+")
    for trace in parser.parse_args(argv).traces:
        r = study(trace)
        shares = (f"{r['in_submit_order']:.1%} in submit order, {r['in_standing_order']:.1%} in standing order"
                  if r["pairs"] else "no pairs")
        print(f"{trace}: learned on {r['learned']:,} of {r['days']:,} days; {r['pairs']:,} pairs, {shares}")


if __name__ == "__main__":
    main()
