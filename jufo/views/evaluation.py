"""How good a schedule is, and how close a prediction came to what really happened.

Schedule measures (of the predicted schedule): mean wait, mean and maximum flow time
(wait + run), mean and maximum bounded slowdown ``max(1, (wait + run) / max(run, 10))``,
utilisation (core-seconds used over cores × the span from the first queue date to the last end).

Prediction error per job = actual start − predicted start (positive: predicted too early);
count, mean, median, min, max, standard deviation (as in the thesis' table 7.1), the share
within 60 s and within 15 min, and Baranov's adequacy measure P = sqrt(Σ(V_i − v_i)² / n)
over the residence times (wait + run) V (actual) and v (predicted) of the jobs both have.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from ..io.dates import parse_date

BSLD_THRESHOLD = 10


@dataclass(frozen=True, slots=True)
class Record:
    """One job of a schedule: epoch seconds and the cores it held."""

    id: str
    queued: int
    start: int
    end: int | None  # None: still running (a later live snapshot shows its start, not its end)
    cores: int

    @property
    def wait(self) -> int:
        return self.start - self.queued

    @property
    def flow(self) -> int:
        assert self.end is not None
        return self.end - self.queued

    @property
    def slowdown(self) -> float:
        return max(1.0, self.flow / max(self.end - self.start, BSLD_THRESHOLD))


def schedule_stats(records: list[Record], capacity: int) -> dict[str, float]:
    """Measures of a schedule.

    >>> r = [Record("a", 0, 0, 100, 2), Record("b", 0, 100, 105, 1)]
    >>> s = schedule_stats(r, 2)
    >>> s["mean_wait"], s["mean_flow"], s["max_flow"], s["mean_bsld"], s["max_bsld"]
    (50.0, 102.5, 105, 5.75, 10.5)
    """
    if not records:
        return {"jobs": 0}
    span = max(r.end for r in records) - min(r.queued for r in records)
    used = sum(r.cores * (r.end - r.start) for r in records)
    flows, slowdowns = [r.flow for r in records], [r.slowdown for r in records]
    return {
        "jobs": len(records),
        "mean_wait": statistics.fmean([r.wait for r in records]),
        "mean_flow": statistics.fmean(flows),
        "max_flow": max(flows),
        "mean_bsld": statistics.fmean(slowdowns),
        "max_bsld": max(slowdowns),
        "utilisation": used / (capacity * span) if capacity and span > 0 else 0.0,
    }


def prediction_errors(predicted: dict[str, Record], actual: dict[str, Record]) -> dict[str, float]:
    """Errors of the predicted starts against the actual ones, for the jobs both sides have.

    >>> p = {"a": Record("a", 0, 10, 20, 1), "b": Record("b", 0, 0, 5, 1)}
    >>> a = {"a": Record("a", 0, 70, 80, 1), "b": Record("b", 0, 0, 5, 1)}
    >>> e = prediction_errors(p, a)
    >>> e["count"], e["mean"], e["within_60s"], e["baranov_p"]
    (2, 30.0, 1.0, 42.42640687119285)
    """
    both = sorted(set(predicted) & set(actual))
    if not both:
        return {"count": 0}
    errors = [actual[i].start - predicted[i].start for i in both]
    ended = [i for i in both if actual[i].end is not None and predicted[i].end is not None]
    residence = [(actual[i].flow - predicted[i].flow) ** 2 for i in ended]
    out = {
        "count": len(both),
        "mean": statistics.fmean(errors),
        "median": statistics.median(errors),
        "min": min(errors),
        "max": max(errors),
        "stdev": statistics.pstdev(errors),
        "within_60s": sum(abs(e) <= 60 for e in errors) / len(errors),
        "within_15min": sum(abs(e) <= 900 for e in errors) / len(errors),
    }
    if ended:  # residence times need the real end: jobs still running are left out of P
        out["baranov_p"] = math.sqrt(sum(residence) / len(ended))
    return out


def submit_mismatch(predicted: dict[str, Record], actual: dict[str, Record], slack: int = 60) -> float:
    """The share of matched jobs whose submit times differ by more than ``slack`` seconds: a
    comparison with the wrong trace or another system's snapshot matches ids, not jobs.

    >>> submit_mismatch({"a": Record("a", 0, 5, 9, 1)}, {"a": Record("a", 9000, 9005, 9009, 1)})
    1.0
    """
    both = set(predicted) & set(actual)
    if not both:
        return 0.0
    return sum(abs(predicted[i].queued - actual[i].queued) > slack for i in both) / len(both)


def per_job(predicted: dict[str, Record], actual: dict[str, Record],
            estimates: dict[str, Record] | None = None) -> list[dict]:
    """Each job both sides have, by predicted start: its predicted and actual start (epoch
    seconds), the error (actual - predicted), and the batch system's estimate and its error
    where the file has one.

    >>> p = {"a": Record("a", 0, 10, 20, 1), "b": Record("b", 0, 0, 5, 1)}
    >>> a = {"a": Record("a", 0, 70, 80, 1), "b": Record("b", 0, 0, 5, 1)}
    >>> [(j["job"], j["error"]) for j in per_job(p, a)]
    [('b', 0), ('a', 60)]
    """
    rows = []
    for key in sorted(set(predicted) & set(actual), key=lambda k: (predicted[k].start, k)):
        row = {"job": key, "predicted_start": predicted[key].start, "actual_start": actual[key].start,
               "error": actual[key].start - predicted[key].start}
        if estimates and key in estimates:
            row["batch_estimate"] = estimates[key].start
            row["batch_error"] = actual[key].start - estimates[key].start
        rows.append(row)
    return rows


LABELS = {
    "jobs": ("jobs", "{:,.0f}"), "mean_wait": ("mean wait (s)", "{:,.1f}"),
    "mean_flow": ("mean flow time (s)", "{:,.1f}"), "max_flow": ("max flow time (s)", "{:,.0f}"),
    "mean_bsld": ("mean bounded slowdown (10 s)", "{:,.2f}"),
    "max_bsld": ("max bounded slowdown (10 s)", "{:,.1f}"),
    "utilisation": ("utilisation", "{:.1%}"),
    "count": ("jobs compared", "{:,.0f}"), "mean": ("mean error (s)", "{:,.1f}"),
    "median": ("median error (s)", "{:,.1f}"), "min": ("min error (s)", "{:,.0f}"),
    "max": ("max error (s)", "{:,.0f}"), "stdev": ("standard deviation (s)", "{:,.1f}"),
    "within_60s": ("within 60 s", "{:.1%}"), "within_15min": ("within 15 min", "{:.1%}"),
    "baranov_p": ("Baranov's P, residence times (s)", "{:,.1f}"),
}


def table(sections: list[tuple[str, dict[str, float]]]) -> str:
    """A plain text table, one measure per line, under a title per section."""
    lines: list[str] = []
    for title, values in sections:
        lines.append(title)
        for key, value in values.items():
            label, fmt = LABELS.get(key, (key, "{}"))
            lines.append(f"  {label:<34} {fmt.format(value)}")
    return "\n".join(lines)


def records_of_forecast(forecast) -> list[Record]:
    """The jobs a simulation started (running jobs excluded: their wait is not simulated)."""
    epoch = forecast.snapshot.epoch
    state = forecast.simulation.state
    return [Record(job.id, epoch + job.queued, epoch + job.start, epoch + job.end, state.request_cores(job))
            for job in forecast.jobs if job.start is not None and not job.running]


def _key(obj) -> str:
    """How jobs are matched across files: the batch system's job id (``step``), else the object id."""
    return obj.data.get("step") or obj.id


_NOT_STARTED = {"Idle", "Pending", "Queued", "Held", "User Hold", "System Hold", "Hold", "Deferred", "PENDING"}


def records_of_document(doc, predicted: bool) -> dict[str, Record]:
    """Jobs of an LML file with start and end: predicted (``jufo_*`` data) or actual
    (``dispatchdate``/``starttime`` and ``endtime``, or start + ``actualruntime``)."""
    out: dict[str, Record] = {}
    for obj in doc.of_type("job"):
        d = obj.data
        state = d.get("state", "")
        if not predicted and state in _NOT_STARTED:
            continue  # a waiting job's starttime is the batch system's estimate, not a start
        try:
            queued = parse_date(d["queuedate"])[0]
            if predicted:
                start, end = parse_date(d["jufo_starttime"])[0], parse_date(d["jufo_endtime"])[0]
            else:
                start = parse_date(d.get("dispatchdate") or d["starttime"])[0]
                if "actualruntime" in d:
                    end = start + int(float(d["actualruntime"]))
                elif state == "Running":  # a later live snapshot: started, not ended (its endtime is the limit)
                    end = None
                else:
                    end = parse_date(d["endtime"])[0]
            cores = int(float(d.get("totalcores", "1")))
        except (KeyError, ValueError, OverflowError):
            continue
        out[_key(obj)] = Record(obj.id, queued, start, end, cores)
    return out


def records_of_estimates(doc) -> dict[str, Record]:
    """The batch system's own forecast: a waiting job's ``starttime`` (Slurm's estimate, which
    jufo never uses for its simulation), for the jobs jufo predicted too."""
    out: dict[str, Record] = {}
    for obj in doc.of_type("job"):
        d = obj.data
        if d.get("state") == "Running" or "jufo_starttime" not in d:
            continue
        try:
            queued, start = parse_date(d["queuedate"])[0], parse_date(d["starttime"])[0]
        except (KeyError, ValueError):
            continue
        out[_key(obj)] = Record(obj.id, queued, start, start, 0)
    return out


def records_of_trace(trace) -> dict[str, Record]:
    """What really happened in an SWF trace, by job number."""
    epoch = trace.epoch
    return {str(j.number): Record(str(j.number), epoch + j.submit, epoch + j.start, epoch + j.start + j.run, j.procs)
            for j in trace.jobs}
