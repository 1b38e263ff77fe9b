"""How far forecasts fell from the real starts: the figures a forecast is judged by, overall and
by the job's real wait, for the backtest and for ``history show`` (forecasts scored on the
site's own record). An error is actual − predicted: positive means predicted too early."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

WAIT_CLASSES = ((0, 900, "under 15 min"), (900, 3600, "15 min-1 h"), (3600, 6 * 3600, "1-6 h"),
                (6 * 3600, None, "over 6 h"))


def wait_class(wait: int) -> str | None:
    """The label of the class of a real wait in seconds (None for a start before the forecast).

    >>> wait_class(0), wait_class(900), wait_class(86400), wait_class(-1)
    ('under 15 min', '15 min-1 h', 'over 6 h', None)
    """
    for lo, hi, label in WAIT_CLASSES:
        if wait >= lo and (hi is None or wait < hi):
            return label
    return None


def by_wait_class(items: Iterable, wait) -> dict[str, list]:
    """``items`` grouped by the class of their real wait (``wait(item)``), every class
    present, in ``WAIT_CLASSES`` order; a start before the forecast is in none.  O(n).

    >>> by_wait_class([0, 1000, -5, 99999], lambda w: w)
    {'under 15 min': [0], '15 min-1 h': [1000], '1-6 h': [], 'over 6 h': [99999]}
    """
    groups: dict[str, list] = {label: [] for _, _, label in WAIT_CLASSES}
    for item in items:
        label = wait_class(wait(item))
        if label is not None:
            groups[label].append(item)
    return groups


def error_stats(rows: list[tuple[int, int, int]]) -> dict[str, float]:
    """Errors of ``(made, predicted, actual)`` rows (actual − predicted: positive means too
    early): count, median error, median absolute error, within 15 min, 1 h and 20 % of the
    real wait.  O(n log n).

    >>> s = error_stats([(0, 100, 100), (0, 0, 3000), (0, 10_000, 5_000)])
    >>> s["count"], s["median_error"], s["median_abs_error"], s["within_1h"], s["within_20pct"]
    (3, 0, 3000, 0.6666666666666666, 0.3333333333333333)
    """
    if not rows:
        return {"count": 0}
    errors = [actual - predicted for _, predicted, actual in rows]
    absolute = [abs(e) for e in errors]
    return {
        "count": len(rows),
        "median_error": statistics.median(errors),
        "median_abs_error": statistics.median(absolute),
        "within_15min": sum(e <= 900 for e in absolute) / len(rows),
        "within_1h": sum(e <= 3600 for e in absolute) / len(rows),
        "within_20pct": sum(abs(actual - predicted) <= 0.2 * max(actual - made, 0)
                            for made, predicted, actual in rows) / len(rows),
    }


def range_stats(rows: Sequence[tuple[int | None, int | None, int]]) -> dict[str, float]:
    """Of ``(lo, hi, actual)`` rows: the share with a range, and of those the share whose real
    start fell inside and the median width.  O(n log n).

    >>> range_stats([(0, 100, 50), (0, 100, 150), (None, None, 7)])
    {'with_range': 0.6666666666666666, 'coverage': 0.5, 'median_width': 100.0}
    """
    ranged = [(lo, hi, actual) for lo, hi, actual in rows if lo is not None and hi is not None]
    if not ranged:
        return {"with_range": 0.0}
    return {"with_range": len(ranged) / len(rows),
            "coverage": sum(lo <= actual <= hi for lo, hi, actual in ranged) / len(ranged),
            "median_width": statistics.median(hi - lo for lo, hi, _ in ranged)}


def blocks_text(blocks: Iterable[tuple[str, dict[str, dict[str, float]]]], forecasters: Sequence[str],
                counts: bool = False) -> list[str]:
    """Text lines of figure blocks: a title with its forecasts, then a row per forecaster
    (``error_stats``, with ``range_stats`` where given); ``counts`` adds each row's count,
    for forecasters that cover only some of the forecasts."""
    lines = []
    for label, figures in blocks:
        count = figures[forecasters[0]].get("count", 0)
        lines.append(f"  {label} ({count:,})")
        if not count:
            continue
        width = max(12, *(len(name) for name in forecasters))
        lines.append(f"    {'':{width}} " + (f"{'forecasts':>9} " if counts else "")
                     + f"{'median err':>11} {'median |err|':>13} {'≤15 min':>8} {'≤1 h':>7} "
                     f"{'≤20% wait':>10} {'in range':>9} {'range width':>12}")
        for name in forecasters:
            f = figures.get(name, {"count": 0})
            shown = f"{f['count']:>9,} " if counts else ""
            if not f.get("count"):
                lines.append(f"    {name:{width}} {shown}{'-':>11}")
                continue
            cov = f"{f['coverage']:.1%}" if "coverage" in f else ""
            spread = f"{f['median_width']:,.0f} s" if "median_width" in f else ""
            lines.append(f"    {name:{width}} {shown}{f['median_error']:>11,.0f} {f['median_abs_error']:>13,.0f} "
                         f"{f['within_15min']:>8.1%} {f['within_1h']:>7.1%} {f['within_20pct']:>10.1%} "
                         f"{cov:>9} {spread:>12}")
    return lines


SO_FAR = ("history", "walltime", "starts now", "batch system", "history, same forecasts")


def so_far(rows: Iterable[tuple], top: int = 10) -> dict:
    """The figures of forecasts scored on a site's own record: ``(made, best, wall, system, lo,
    hi, start, queue)`` rows (``History.outcomes``), overall, by real wait and for the ``top``
    queues with the most forecasts, for the history forecast (with its ranges), the
    walltime-only forecast, "starts now", the batch system's own estimate where it gave one,
    and the history forecast on those same forecasts (the fair comparison with it).
    O(n log n).

    >>> f = so_far([(0, 100, 0, 50, 0, 200, 130, "a"), (0, 5000, 4000, None, None, None, 4100, "b")])
    >>> f["forecasts"], f["overall"]["history"]["median_abs_error"], f["overall"]["batch system"]["count"]
    (2, 465.0, 1)
    >>> f["by_wait"]["under 15 min"]["history"]["coverage"], f["by_wait"]["1-6 h"]["walltime"]["median_error"]
    (1.0, 100)
    >>> sorted(f["by_queue"]), f["by_queue"]["b"]["history"]["median_error"]
    (['a', 'b'], -900)
    """
    rows = list(rows)

    def figures(group: list[tuple]) -> dict[str, dict[str, float]]:
        estimated = [r for r in group if r[3] is not None]
        out = {
            "history": error_stats([(r[0], r[1], r[6]) for r in group if r[1] is not None]),
            "walltime": error_stats([(r[0], r[2], r[6]) for r in group if r[2] is not None]),
            "starts now": error_stats([(r[0], r[0], r[6]) for r in group]),
            "batch system": error_stats([(r[0], r[3], r[6]) for r in estimated]),
            "history, same forecasts": error_stats([(r[0], r[1], r[6]) for r in estimated if r[1] is not None]),
        }
        if group:
            out["history"].update(range_stats([(r[4], r[5], r[6]) for r in group]))
        return out

    by_queue: dict[str, list[tuple]] = {}
    for row in rows:
        by_queue.setdefault(row[7], []).append(row)
    busiest = sorted(by_queue.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:top]
    return {"forecasts": len(rows), "overall": figures(rows),
            "by_wait": {label: figures(group) for label, group in by_wait_class(rows, lambda r: r[6] - r[0]).items()},
            "by_queue": {queue: figures(group) for queue, group in busiest}}


def queues_text(by_queue: dict[str, dict[str, dict[str, float]]], forecasters: Sequence[str]) -> list[str]:
    """Text lines of ``so_far``'s queues: a line per queue, each forecaster's median absolute
    error and its forecasts, and the history forecast's ranges held.

    >>> print("\\n".join(queues_text(so_far([(0, 100, 0, None, None, None, 130, "batch")])["by_queue"],
    ...                              ("history", "walltime"))))
        queue                                 history             walltime  in range
        batch                                30 s (1)            130 s (1)
    """
    width = max(20, *(len(name) for name in forecasters))
    lines = [f"    {'queue':24} " + " ".join(f"{name:>{width}}" for name in forecasters) + f" {'in range':>9}"]
    for queue, figures in by_queue.items():
        cells = []
        for name in forecasters:
            f = figures.get(name, {"count": 0})
            cells.append(f"{f['median_abs_error']:,.0f} s ({f['count']:,})" if f.get("count") else "-")
        held = figures["history"].get("coverage")
        lines.append((f"    {(queue or '-')[:24]:24} " + " ".join(f"{c:>{width}}" for c in cells)
                      + f" {'' if held is None else f'{held:.1%}':>9}").rstrip())
    return lines
