"""Score jufo against a Slurm lab's record: every capture of ``slurmlab.py`` predicted with the
settings ``jufo slurm config`` reads from the lab's own Slurm, next to Slurm's own estimate,
"starts now" and the real start.

    python lab/score.py DIR [--history [--exact [all|running|waiting]]] [--set KEY=VALUE] [--rewind] [--scale S]
                            [--json] [--rows FILE]

For each capture and each pending job that later started: the walltime forecast
(``jufo_starttime`` without a history), Slurm's estimate (the pending job's ``StartTime``) and,
with ``--history``, the history forecast (``sacct`` of the lab imported ``--until`` the
capture's time, so it knows only the past) with its range. Errors are actual − predicted.
Fidelity is the share of job-snapshots where the walltime forecast is within 60 s of Slurm's
estimate. Real starts come from the captures themselves (a job's ``StartTime`` once it runs).
With ``--exact``, the history forecast is given every job's real run time (``actualruntime``,
from the lab's ``sacct``): not a forecast, but how close jufo's model of the lab's Slurm comes
when run times are known, so that what is left of the history forecast's error is its run times'
(``running`` or ``waiting``: only those jobs' run times).

With ``--scale S`` (the replay's time compression, ``slurmlab.py --scale``), the same job-snapshots
are scored in the trace's own time as a backtest scores a trace: every lab second counts S seconds,
errors within 15 min and 1 h, the 80 % ranges, overall and by real wait (under 15 min, 15 min–1 h,
1–6 h, over 6 h), next to the walltime-only forecast, "starts now" and Slurm's estimate.

With ``--rewind``, each capture that shows a change Slurm's last backfill pass had not seen is
also planned as Slurm saw it at that pass (``rewound``): Slurm's estimates there are that pass's
plan, older than the capture, so this tells jufo's differences from the estimate's age.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from jufo import cli
from jufo.io import accounting, lml, scontrol, slurm
from jufo.io.dates import format_date, parse_date
from jufo.learn import accuracy

FORECASTERS = ("slurm", "walltime", "history", "starts now")


def jufo(*args: str) -> None:
    """Run one jufo command in this process (four per capture: a new interpreter for each
    cost most of a scoring's time), its output discarded; a failure ends the scoring with it."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            cli.main(list(args), prog_name="jufo")
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
    if code != 0:
        raise SystemExit(f"jufo {' '.join(args)}: exit {code}: {err.getvalue().strip()[-400:]}")


def real_starts(captures: list[Path]) -> dict[str, int]:
    """Each job's real start: its StartTime in the first capture that shows it started (a job
    cancelled while pending shows StartTime = EndTime on no nodes: it never started)."""
    out: dict[str, int] = {}
    for cap in captures:
        for rec in scontrol.parse_records((cap / "job.txt").read_text(), str(cap / "job.txt"), "JobId"):
            if rec["JobId"] in out or rec.get("JobState") in ("PENDING", None):
                continue
            start, end = _date(rec.get("StartTime")), _date(rec.get("EndTime"))
            if start is not None and not slurm.never_ran(rec["JobState"], start, end, rec.get("NodeList", "")):
                out[rec["JobId"]] = start
    return out


def _date(text: str | None) -> int | None:
    if not text or not text[:1].isdigit():
        return None
    try:
        return parse_date(text)[0]
    except ValueError:
        return None


def newer_than_last_pass(doc: lml.Document) -> bool | None:
    """Does the snapshot ``doc`` show a change (a submit, a start or an end) after Slurm's last
    backfill pass (``plan_time``, from sdiag)? Then Slurm's estimates are that pass's plan, older
    than the state jufo plans from. None where the capture has no sdiag."""
    scheduler = next(iter(doc.of_type("scheduler")), None)
    last_pass = _date(scheduler.data.get("plan_time")) if scheduler is not None else None
    if last_pass is None:
        return None
    for job in doc.of_type("job"):
        state = job.data.get("state")
        key = "queuedate" if state == "Pending" else "starttime" if state == "Running" else "endtime"
        t = _date(job.data.get(key))
        if t is not None and t > last_pass:
            return True
    return False


_TOKEN = r"(?<= ){key}=\S*"


def _set(line: str, key: str, value: str) -> str:
    """``line`` (one ``scontrol --oneliner`` record) with ``key``'s value replaced."""
    return re.sub(_TOKEN.format(key=re.escape(key)), lambda _: f"{key}={value}", line, count=1)


def _clock(seconds: int) -> str:
    hours, rest = divmod(max(0, seconds), 3600)
    return f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"


def rewound(cap: Path, dest: Path) -> int | None:
    """Write to ``dest`` the capture ``cap`` as Slurm saw it at its last backfill pass (sdiag's
    "Last cycle when"): jobs submitted after it left out, jobs that started after it pending
    again, jobs that ended after it running again (to their limits, as Slurm plans them), the
    capture's time the pass's. Returns the pass's time, or None where the capture has no sdiag.
    What Slurm showed as a pending job's estimate was planned from that state: jufo's plan of
    it tells whether a difference is jufo's, or only that the estimate is older than the capture."""
    sdiag = cap / "sdiag.txt"
    text = sdiag.read_text() if sdiag.exists() else ""
    last = scontrol.backfill_pass(text)
    if last is None:
        return None
    pass_at = last + scontrol.wall_clock_offset(text, "", None)  # in the clock the dates are printed in
    dest.mkdir(parents=True, exist_ok=True)
    for f in cap.iterdir():
        if f.is_file() and f.name not in ("job.txt", "at"):
            (dest / f.name).write_bytes(f.read_bytes())
    (dest / "at").write_text(f"{last}\n")
    out = []
    for line in (cap / "job.txt").read_text().splitlines():
        rec = next(iter(scontrol.parse_records(line, str(cap / "job.txt"), "JobId")), None)
        if rec is None:
            out.append(line)
            continue
        submit, start, end = (_date(rec.get(k)) for k in ("SubmitTime", "StartTime", "EndTime"))
        state = rec.get("JobState", "")
        if submit is not None and submit > pass_at:
            continue  # not submitted yet
        if state == "PENDING":
            out.append(line)
            continue
        ran = start is not None and not slurm.never_ran(state, start, end, rec.get("NodeList", ""))
        if ran and start <= pass_at:
            if end is not None and end <= pass_at and state != "RUNNING":
                out.append(line)  # over by then
                continue
            limit = slurm.seconds_of(rec.get("TimeLimit", ""))
            line = _set(_set(line, "JobState", "RUNNING"), "RunTime", _clock(pass_at - start))
            if limit is not None:
                line = _set(line, "EndTime", format_date(start + limit, "%Y-%m-%dT%H:%M:%S"))  # in its own clock
            out.append(line)
        elif ran or (end is not None and end > pass_at):  # started later, or cancelled later while pending
            line = _set(_set(_set(line, "JobState", "PENDING"), "Reason", "Priority"), "RunTime", "00:00:00")
            for key in ("StartTime", "EndTime"):
                line = _set(line, key, "Unknown")
            line = _set(_set(line, "NodeList", "(null)"), "BatchHost", "(null)")
            line = re.sub(r" Nodes=\S* CPU_IDs=\S* Mem=\S* GRES=\S*", "", line)
            out.append(line)
        else:
            out.append(line)
    (dest / "job.txt").write_text("\n".join(out) + "\n")
    return last


def stats(errors: list[int]) -> dict:
    if not errors:
        return {"count": 0}
    absolute = [abs(e) for e in errors]
    return {"count": len(errors), "median_error": statistics.median(errors),
            "median_abs_error": statistics.median(absolute),
            "within_60s": sum(a <= 60 for a in absolute) / len(errors),
            "within_5min": sum(a <= 300 for a in absolute) / len(errors)}


ROW_FIELDS = ("capture", "job", "user", "at", "actual", "slurm", "walltime", "history", "lo", "hi", "model")


EXACT = ("all", "running", "waiting")  # whose real run times --exact gives


def real_run_times(sacct: Path) -> dict[str, int]:
    """Each finished job's run time (End − Start) in the lab's ``sacct``, by job id."""
    records, _ = accounting.read_sacct(accounting.text_lines(str(sacct)), str(sacct))
    return {r.id: r.runtime for r in records if r.runtime is not None}


def with_real_run_times(snap: str, runs: dict[str, int], out: str, which: str = "all") -> None:
    """``snap`` written to ``out`` with each job's real run time (``actualruntime``, from
    ``real_run_times``) where the lab's accounting has one; ``which``: of every job, or only
    of the running or the waiting ones."""
    doc = lml.read(snap)
    lml.add_results(doc, {o.id: [("actualruntime", str(max(1, runs[o.data["step"]])))]
                          for o in doc.of_type("job") if o.data.get("step") in runs
                          and (which == "all" or (o.data.get("state") == "Running") == (which == "running"))})
    Path(out).write_bytes(lml.serialize(doc))


def score(lab: Path, history: bool, every: int = 1, rows: list[dict] | None = None, exact: str | None = None,
          settings: list[str] = (), rewind: bool = False) -> dict:
    """The scores of the lab's captures (every ``every``-th); ``rows`` (if given) gets one row
    per pending job-snapshot scored (``ROW_FIELDS``, epoch seconds, None where there is none);
    ``exact`` (one of ``EXACT``): the history forecast knows those jobs' real run times (a
    ceiling, not a forecast); ``settings``: ``KEY=VALUE`` over ``jufo slurm config``'s, for
    both forecasts (``--set``); ``rewind``: also plan each capture newer than Slurm's last pass
    as Slurm saw it then (``rewound``) and compare that with Slurm's estimates."""
    captures = sorted(p for p in (lab / "capture").iterdir() if (p / "job.txt").exists())[::every]
    real = real_starts(sorted((lab / "capture").iterdir()))
    errors: dict[str, list[int]] = {f: [] for f in FORECASTERS}
    fidelity: list[int] = []
    newer: dict[bool | None, list[int]] = {True: [], False: [], None: []}  # by newer_than_last_pass
    seen_by_pass: list[int] = []  # the newer ones, planned as Slurm saw them at its last pass (``rewind``)
    ranges = {"held": 0, "with_range": 0, "widths": [], "remaining": []}
    differ: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        site = os.path.join(tmp, "site.xml")
        jufo("slurm", "config", "--from", str(captures[0]), "-o", site, "-q")
        db = os.path.join(tmp, "h.db")
        sacct = lab / "sacct.txt"
        runs = real_run_times(sacct) if exact and history and sacct.exists() else {}
        given_settings = [arg for pair in settings for arg in ("--set", pair)]
        for cap in captures:
            snap, out = os.path.join(tmp, "snap.xml"), os.path.join(tmp, "out.xml")
            jufo("slurm", "snapshot", "--from", str(cap), "-o", snap)
            doc = lml.read(snap)
            # the capture's second in the clock Slurm printed its dates in (the lab's zone)
            at = _date(doc.of_type("system")[0].data["system_time"])
            jufo("predict", snap, "--config", site, *given_settings, "-o", out, "-q")
            wall = {o.data.get("step"): o.data for o in lml.read(out).of_type("job")}
            stale = newer_than_last_pass(doc)
            as_seen = {}
            if rewind and stale:
                seen_dir, seen_snap = Path(tmp) / "rewound", os.path.join(tmp, "rewound.xml")
                if rewound(cap, seen_dir) is not None:
                    jufo("slurm", "snapshot", "--from", str(seen_dir), "-o", seen_snap)
                    jufo("predict", seen_snap, "--config", site, *given_settings, "-o", out, "-q")
                    as_seen = {o.data.get("step"): _date(o.data.get("jufo_starttime"))
                               for o in lml.read(out).of_type("job")}
            learned = {}
            if history and sacct.exists():
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at))
                jufo("history", "import", str(sacct), "--history", db, "--until", stamp)
                hout, given = os.path.join(tmp, "hout.xml"), snap
                if exact:
                    given = os.path.join(tmp, "exact.xml")
                    with_real_run_times(snap, runs, given, exact)
                jufo("predict", given, "--config", site, *given_settings, "--history", db, "-o", hout, "-q")
                learned = {o.data.get("step"): o.data for o in lml.read(hout).of_type("job")}
            for step, d in wall.items():
                if d.get("state") != "Pending" or step not in real or d.get("ArrayTaskId", "").count("-"):
                    continue
                actual = real[step]
                if actual < at:
                    continue  # started before the capture was taken (the capture raced it)
                est = _date(d.get("starttime"))
                mine = _date(d.get("jufo_starttime"))
                if est is not None and est >= at - 60:
                    errors["slurm"].append(actual - est)
                errors["starts now"].append(actual - at)
                if mine is not None:
                    errors["walltime"].append(actual - mine)
                    if est is not None and est >= at - 60:
                        fidelity.append(abs(mine - est))
                        newer[stale].append(abs(mine - est))
                        if as_seen.get(step) is not None:
                            seen_by_pass.append(abs(as_seen[step] - est))
                        if abs(mine - est) > 60 and len(differ) < 40:
                            differ.append({"capture": cap.name, "job": step, "jufo": mine - at, "slurm": est - at,
                                           "actual": actual - at, "reason": d.get("reason")})
                h = learned.get(step, {})
                best = _date(h.get("jufo_starttime"))
                if rows is not None:
                    rows.append({"capture": cap.name, "job": step, "user": d.get("owner"), "at": at,
                                 "actual": actual, "slurm": est, "walltime": mine, "history": best,
                                 "lo": _date(h.get("jufo_starttime_lo")), "hi": _date(h.get("jufo_starttime_hi")),
                                 "model": h.get("jufo_model")})
                if best is not None:
                    errors["history"].append(actual - best)
                    lo, hi = _date(h.get("jufo_starttime_lo")), _date(h.get("jufo_starttime_hi"))
                    if lo is not None and hi is not None:
                        ranges["with_range"] += 1
                        ranges["held"] += lo <= actual <= hi
                        ranges.setdefault("by_capture", {}).setdefault(cap.name, [0, 0, 0])
                        ranges["by_capture"][cap.name][0] += 1
                        ranges["by_capture"][cap.name][1] += actual < lo  # came earlier than the range
                        ranges["by_capture"][cap.name][2] += actual > hi  # came later
                        ranges["widths"].append(hi - lo)
                        ranges["remaining"].append(actual - at)
    out = {"lab": str(lab), "captures": len(captures), "job_snapshots": len(errors["starts now"]),
           **{f: stats(e) for f, e in errors.items()},
           "fidelity_within_60s": sum(x <= 60 for x in fidelity) / len(fidelity) if fidelity else None,
           "fidelity_compared": len(fidelity), "differ_examples": differ,
           # split by whether the capture shows a change Slurm's last pass had not seen (sdiag)
           **{f"fidelity_{name}": {"compared": len(newer[key]),
                                   "within_60s": sum(x <= 60 for x in newer[key]) / len(newer[key])}
              for key, name in ((False, "seen_by_last_pass"), (True, "newer_than_last_pass")) if newer[key]}}
    if seen_by_pass:
        out["fidelity_newer_planned_as_last_pass_saw"] = {
            "compared": len(seen_by_pass), "within_60s": sum(x <= 60 for x in seen_by_pass) / len(seen_by_pass)}
    if ranges["with_range"]:
        out["range_by_capture"] = ranges.get("by_capture", {})
        out["range"] = {"with_range": ranges["with_range"], "coverage": ranges["held"] / ranges["with_range"],
                        "median_width": statistics.median(ranges["widths"]),
                        "median_remaining_wait": statistics.median(ranges["remaining"])}
    return out


def in_trace_time(rows: list[dict], scale: float) -> dict:
    """The scored job-snapshots ``rows`` (``score``'s) as a backtest of the trace would score them:
    every lab second ``scale`` trace seconds, overall and by real wait (``accuracy.so_far``), for the
    history forecast with its ranges (where scored), the walltime-only one, "starts now" and Slurm's
    estimate (``batch system``).

    >>> r = in_trace_time([{"at": 0, "history": 10, "walltime": 5, "slurm": None, "lo": 0, "hi": 20,
    ...                     "actual": 12}], 100)
    >>> r["overall"]["history"]["median_abs_error"], r["by_wait"]["15 min-1 h"]["history"]["coverage"]
    (200, 1.0)
    """
    def t(value: int | None, base: int) -> int | None:
        return None if value is None else round((value - base) * scale)

    def slurm(r: dict) -> int | None:  # as ``score`` counts it: an estimate from before the capture is stale
        return r["slurm"] if r["slurm"] is not None and r["slurm"] >= r["at"] - 60 else None

    table_rows = [(0, t(r["history"], r["at"]), t(r["walltime"], r["at"]), t(slurm(r), r["at"]),
                   t(r["lo"], r["at"]), t(r["hi"], r["at"]), t(r["actual"], r["at"]), "") for r in rows]
    out = accuracy.so_far(table_rows)
    del out["by_queue"]
    return out


def table(result: dict) -> str:
    rows = [f"{result['lab']}: {result['captures']} captures, {result['job_snapshots']} pending job-snapshots",
            f"{'forecast':12s} {'n':>5s} {'median err':>11s} {'median |err|':>12s} {'<=60 s':>7s} {'<=5 min':>8s}"]
    for f in FORECASTERS:
        s = result[f]
        if s["count"]:
            rows.append(f"{f:12s} {s['count']:5d} {s['median_error']:11.0f} {s['median_abs_error']:12.0f} "
                        f"{s['within_60s']:7.1%} {s['within_5min']:8.1%}")
    if result["fidelity_within_60s"] is not None:
        rows.append(f"walltime forecast within 60 s of Slurm's estimate: {result['fidelity_within_60s']:.1%} "
                    f"of {result['fidelity_compared']}")
        for key, what in (("seen_by_last_pass", "in captures whose latest change Slurm's last pass saw"),
                          ("newer_than_last_pass", "in captures newer than Slurm's last pass")):
            part = result.get(f"fidelity_{key}")
            if part:
                rows.append(f"  {what}: {part['within_60s']:.1%} of {part['compared']}")
        part = result.get("fidelity_newer_planned_as_last_pass_saw")
        if part:
            rows.append(f"  the newer ones planned as Slurm saw them at its last pass: {part['within_60s']:.1%} "
                        f"of {part['compared']}")
    if "range" in result:
        r = result["range"]
        rows.append(f"history range: {r['with_range']} with a range, coverage {r['coverage']:.1%}, median width "
                    f"{r['median_width']:.0f} s, median remaining wait {r['median_remaining_wait']:.0f} s")
    trace = result.get("in_trace_time")
    if trace:
        names = [n for n in accuracy.SO_FAR if trace["overall"][n].get("count")]
        rows.append(f"in the trace's time (x {result['scale']:g}; 'batch system' is Slurm's estimate):")
        rows += accuracy.blocks_text([("overall", trace["overall"]), *trace["by_wait"].items()], names, counts=True)
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python lab/score.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("lab", type=Path)
    p.add_argument("--history", action="store_true", help="also the history forecast (needs DIR/sacct.txt)")
    p.add_argument("--exact", nargs="?", const="all", choices=EXACT,
                   help="give the history forecast the real run times (of all jobs, or only the running or "
                        "the waiting ones): how close the model comes (not a forecast)")
    p.add_argument("--every", type=int, default=1, help="score every N-th capture")
    p.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                   help="a scheduler key over jufo slurm config's, for both forecasts (repeatable)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--rows", type=Path, help="also write each scored job-snapshot to this tab-separated file")
    p.add_argument("--rewind", action="store_true", help="also plan each capture newer than Slurm's last pass as "
                   "Slurm saw it then, and compare that with Slurm's estimates")
    p.add_argument("--scale", type=float, help="the replay's time compression (slurmlab.py --scale): also score "
                   "in the trace's time, by real wait, as a backtest does")
    args = p.parse_args(argv)
    rows: list[dict] | None = [] if args.rows or args.scale else None
    if args.exact and not args.history:
        p.error("--exact is for the history forecast: give --history too")
    if args.scale is not None and not args.scale > 0:
        p.error(f"--scale {args.scale:g}: a compression above 0")
    result = score(args.lab, args.history, args.every, rows, args.exact, args.settings, args.rewind)
    if args.scale:
        result["scale"] = args.scale
        result["in_trace_time"] = in_trace_time(rows, args.scale)
    if args.rows:
        lines = ["\t".join(ROW_FIELDS)] + ["\t".join("" if r[k] is None else str(r[k]) for k in ROW_FIELDS)
                                           for r in rows]
        args.rows.write_text("\n".join(lines) + "\n")
    print(json.dumps(result, indent=1) if args.json else table(result))


if __name__ == "__main__":
    main()
