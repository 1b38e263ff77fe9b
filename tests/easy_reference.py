"""A minimal EASY backfilling simulator over an SWF trace, written independently of jufo.

Counts processors only; the head of the queue (FCFS) gets a reservation, recomputed at every
event from the running jobs' requested end times; a later job starts now if it fits now and
either ends before the head's start or leaves the head enough processors then. Jobs run their
real run time (at least 1 s, at most the request), sized by requested processors. All events
of one second are applied before one scheduling pass, as jufo does.
"""

from __future__ import annotations

import gzip
import heapq


def load(path: str) -> list[dict]:
    jobs = []
    with gzip.open(path, "rt") as fh:
        for line in fh:
            if line.startswith(";") or not line.strip():
                continue
            f = line.split()
            number, submit, _, run, alloc = (int(float(x)) for x in f[:5])
            requested_procs, requested_time = int(f[7]), int(float(f[8]))
            procs = requested_procs if requested_procs > 0 else alloc
            if requested_time < 0:  # no request in the trace: plan with the real run time
                requested_time = run
            jobs.append({"id": number, "submit": submit, "run": max(min(requested_time, run), 1),
                         "pred": max(requested_time, run, 1), "procs": procs})
    return jobs


def simulate(jobs: list[dict], total: int) -> dict[int, int]:
    """Start time of every job."""
    events: list[tuple[int, int, int, object]] = []
    for i, job in enumerate(jobs):
        heapq.heappush(events, (job["submit"], 1, i, job))
    free = total
    running: list[tuple[int, int]] = []  # (requested end, processors)
    queue: list[dict] = []
    start: dict[int, int] = {}
    counter = len(jobs)

    def launch(job: dict, now: int) -> None:
        nonlocal free, counter
        free -= job["procs"]
        running.append((now + job["pred"], job["procs"]))
        start[job["id"]] = now
        heapq.heappush(events, (now + job["run"], 0, counter, (now + job["pred"], job["procs"])))
        counter += 1

    def head_start(now: int) -> int:
        need, have = queue[0]["procs"], free
        for end, procs in sorted(running):
            have += procs
            if have >= need:
                return end
        raise AssertionError("the head never fits")

    def schedule(now: int) -> None:
        while queue and free >= queue[0]["procs"]:
            launch(queue.pop(0), now)
        for job in list(queue[1:]):
            if free < job["procs"]:
                continue
            shadow = head_start(now)
            extra = free + sum(p for end, p in running if end <= shadow) - queue[0]["procs"]
            if now + job["pred"] <= shadow or extra >= job["procs"]:
                queue.remove(job)
                launch(job, now)

    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, _, item = heapq.heappop(events)
            if kind == 0:  # a job ends: its requested end leaves the profile
                running.remove(item)
                free += item[1]
            else:
                queue.append(item)
        schedule(now)
    return start
