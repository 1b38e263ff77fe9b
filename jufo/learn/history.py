"""The history: one SQLite file of what the machine did and what jufo forecast.

It holds job records (from accounting imports and from every snapshot ``predict --history``
sees: jobs queued, started with their dispatch date, gone = ended) and the forecasts made, so
later runs can learn run times and habits (``runtime``, ``behaviour``) and calibrate start
ranges on how earlier forecasts fared (``calibration``).

Rules that keep it safe to run from cron:

* A file that is not jufo's history (not SQLite, another application's database) or that
  has a newer schema is refused (InputError, exit 2) and never modified: it is opened
  read-only until it has passed those checks.
* WAL mode and a busy timeout: concurrent runs wait for each other instead of failing; every
  change happens in one transaction, so an interrupted run leaves the file as it was.
* Recording the same snapshot twice changes nothing; an older snapshot never overrides what
  a newer one showed.
* What is read back for a forecast at time ``T`` is what was known at ``T`` (starts before
  ``T``, ends by ``T``, forecasts made before ``T``), so an older snapshot cannot peek.
* Records and forecasts older than ``keep_days`` are removed.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from operator import itemgetter
from pathlib import Path

from ..io.accounting import JobRecord, of_rows
from .behaviour import CAP_KEPT, KeptDay
from .calibration import Scored, keep_every, samples_of
from .runtime import REACH_JOBS, RuntimeRules, overrun, shortfall
from ..io.errors import InputError
from ..io.values import LATEST_EPOCH, MAX_COUNT

APPLICATION_ID = 0x6A75666F  # "jufo"
SCHEMA_VERSION = 3
KEEP_DAYS = 90
START_GAP = 3600  # a job that left the queue unseen within this long started halfway (estimate)
NEVER_RAN = "(start IS NULL AND end IS NOT NULL)"  # a row's JobRecord.never_ran: cancelled while pending
SCORED_LIMIT = 50_000  # calibration reads at most the newest this many forecasts
_SQLITE_MAGIC = b"SQLite format 3\x00"
SOURCE_PRIORITY = {"snapshot": 0, "swf": 1, "sacct": 1}


# A finished job as ``History.records`` knows it at ``:now`` with a run time a predictor learns
# (``RuntimePredictor.add``): started before then, ended by then, not shorter than nothing
_FINISHED = (f"start < :now AND end <= :now AND end >= start AND submit <= :now "
             f"AND (state != 'gone' OR {NEVER_RAN})")


class RuntimeQueries(RuntimeRules):
    """The run-time rules over the history's finished jobs known at ``now`` (those that ended
    before ``before``, an ``(end, id)``, if given), each key's latest runs read by an indexed
    query when first asked: the same answers as a ``RuntimePredictor`` fed all of them in the
    order they ended (``in_end_order``), without reading the rest.  O(log n) a key, then O(1).

    >>> db = sqlite3.connect(":memory:"); _v1(db); _v3(db)
    >>> for i, run in enumerate((100, 300, 50)):  # ended at 100, 1300 and 2050
    ...     _ = db.execute("INSERT INTO jobs (id, user, queue, cores, wall, submit, start, end, state, source) "
    ...                    "VALUES (?, 'alice', 'batch', 4, 3600, 0, ?, ?, 'ended', 'sacct')", (str(i), i * 1000,
    ...                                                                                       i * 1000 + run))
    >>> RuntimeQueries(db, 5000).predict("alice", "batch", 3600, 4)  # the last two: 300 and 50
    (175, 'same request')
    >>> RuntimeQueries(db, 5000, (2050, "2")).predict("alice", "batch", 3600, 4)  # before the third ended
    (200, 'same request')
    >>> RuntimeQueries(db, 2000).predict("alice", "batch", 3600, 4)  # the third had not ended at 2000
    (200, 'same request')
    """

    def __init__(self, db: sqlite3.Connection, now: int, before: tuple[int, str] | None = None) -> None:
        self.db = db
        self.bound = "" if before is None else " AND (end, id) < (:end, :id)"
        self.values = {"now": now} if before is None else {"now": now, "end": before[0], "id": before[1]}
        self.known: dict[tuple, list] = {}

    def _latest(self, where: str, values: dict, count: int, columns: str) -> list[tuple]:
        """``columns`` of the latest ``count`` known finished jobs that match ``where``, newest first."""
        return self.db.execute(
            f"SELECT {columns} FROM jobs WHERE {where} AND {_FINISHED}{self.bound} "  # noqa: S608 - constants
            f"ORDER BY end DESC, id DESC LIMIT {count}", {**values, **self.values}).fetchall()

    def _runs(self, key: tuple) -> list[int]:
        runs = self.known.get(key)
        if runs is None:
            kind = key[0]
            if kind == "same request":
                where, values = "user = :u AND queue = :q AND wall IS :w AND cores = :c", dict(
                    zip("uqwc", key[1:]))
            elif kind == "user+queue":
                where, values = "user = :u AND queue = :q", dict(zip("uq", key[1:]))
            else:
                where, values = "user = :u", {"u": key[1]}
            runs = self.known[key] = [run for (run,) in self._latest(where, values, self.RUNS, "end - start")]
        return runs

    def _shares(self, key: tuple) -> list[float]:
        shares = self.known.get(key)
        if shares is None:
            if key[0] == "queue":
                where, values = "wall AND queue = :q", {"q": key[1]}
            else:  # the size class's cores: 2^c up to 2^(c+1) - 1, all up to 1 in class 0
                c = key[1]
                where, values = "wall AND cores BETWEEN :lo AND :hi", {"lo": 1 << c if c else -1, "hi": (2 << c) - 1}
            shares = self.known[key] = [min(run / wall, 1.0) for run, wall in
                                        self._latest(where, values, self.SHARES, "end - start, wall")]
        return shares


def _kept_day(item: tuple[str, object]) -> tuple[int, KeptDay] | None:
    """One kept day from its JSON form, ``"day": [digest, {user: seconds}, {user: most}]``;
    None for anything else.

    >>> _kept_day(("86400", ["ab", {"u": 7}, {"u": 1}])), _kept_day(("86400", ["ab", {"u": 7.5}, {}]))
    ((86400, ('ab', {'u': 7}, {'u': 1})), None)
    """
    day, value = item
    if not (isinstance(value, list) and len(value) == 3 and isinstance(value[0], str) and day.isdigit()):
        return None
    counts = value[1:]
    if not all(isinstance(c, dict) and all(type(n) is int and n >= 0 for n in c.values()) for c in counts):
        return None
    return int(day), (value[0], *counts)


def _run_script(db: sqlite3.Connection, script: str) -> None:
    """Statements one by one: ``executescript`` would commit the migration's transaction."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def _v1(db: sqlite3.Connection) -> None:
    _run_script(db, """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            user TEXT NOT NULL DEFAULT '', grp TEXT NOT NULL DEFAULT '', account TEXT NOT NULL DEFAULT '',
            queue TEXT NOT NULL DEFAULT '', qos TEXT NOT NULL DEFAULT '',
            nodes INTEGER NOT NULL DEFAULT 1, cores INTEGER NOT NULL DEFAULT 1, wall INTEGER,
            submit INTEGER, start INTEGER, end INTEGER,
            state TEXT NOT NULL,          -- queued, running, ended, gone (left the queue unseen)
            seen INTEGER,                 -- the last snapshot that showed it queued or running
            source TEXT NOT NULL          -- snapshot, swf, sacct
        );
        CREATE INDEX jobs_submit ON jobs (submit);
        CREATE INDEX jobs_state ON jobs (state);
        CREATE TABLE snapshots (time INTEGER PRIMARY KEY, jobs INTEGER NOT NULL);
        CREATE TABLE forecasts (
            job TEXT NOT NULL, made INTEGER NOT NULL,
            predicted INTEGER NOT NULL,   -- the simulated start, from learned habits
            wall INTEGER,                 -- the walltime-only forecast
            best INTEGER, lo INTEGER, hi INTEGER, coverage REAL,
            runtime INTEGER, model TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (job, made)
        );
        CREATE INDEX forecasts_made ON forecasts (made);
    """)


def _v2(db: sqlite3.Connection) -> None:
    """The batch system's own estimate of each forecast's job when it was made (a pending
    job's ``starttime``): kept only to compare with, never read by a forecast."""
    db.execute("ALTER TABLE forecasts ADD COLUMN system INTEGER")


# Indexes that answer the run-time rules' questions (``RuntimeQueries``): each key's latest
# finished jobs, newest first, without reading the others
RUNTIME_INDEXES = {
    "jobs_request": "user, queue, wall, cores, end, id",
    "jobs_user_queue": "user, queue, end, id",
    "jobs_user": "user, end, id",
    "jobs_queue": "queue, end, id",
    "jobs_end": "end, id",
}


SCORED_INDEX = "made DESC, job, predicted, lo, hi"  # ``scored`` reads the newest forecasts off it, in order


def _v3(db: sqlite3.Connection) -> None:
    """What a forecast need not learn anew at each run: the run-time indexes (it asks the
    history for the few jobs each rule looks at instead of reading and relearning every
    finished job), the forecasts the calibration reads in the order it reads them, and what was
    learned, kept by name (``learned``: the user caps' whole days)."""
    for name, columns in RUNTIME_INDEXES.items():
        db.execute(f"CREATE INDEX {name} ON jobs ({columns})")
    db.execute("CREATE TABLE learned (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute(f"CREATE INDEX forecasts_scored ON forecasts ({SCORED_INDEX})")


MIGRATIONS = {1: _v1, 2: _v2, 3: _v3}  # version → the step from the version before
COLUMNS = {  # each table's columns at SCHEMA_VERSION, in order
    "meta": ("key", "value"),
    "jobs": ("id", "user", "grp", "account", "queue", "qos", "nodes", "cores", "wall", "submit", "start", "end",
             "state", "seen", "source"),
    "snapshots": ("time", "jobs"),
    "forecasts": ("job", "made", "predicted", "wall", "best", "lo", "hi", "coverage", "runtime", "model", "system"),
    "learned": ("name", "value"),
}


@dataclass(frozen=True)
class Observation:
    """One job as a snapshot at ``time`` shows it (epoch seconds)."""

    record: JobRecord
    state: str  # queued, running, ended


class History:
    """A jufo history file. Use ``History.open(path)`` and close it (or use ``with``)."""

    def __init__(self, db: sqlite3.Connection, path: str) -> None:
        self.db = db
        self.path = path
        self._depth = 0  # open transactions: inner ones are savepoints of the outermost
        self.version = SCHEMA_VERSION  # a reading command leaves an older schema as it is (``read_only``)
        self.writable = True  # (``read_only``: what was learned is not kept)

    # -- opening -------------------------------------------------------------------------------
    @classmethod
    def read_only(cls, path: str) -> History:
        """Open an existing history only to read it (``history show``, ``whatif``): no write
        lock, no migration, so a read-only file or folder serves and nothing is changed. A
        history of an older schema is read as it is (what it lacks reads as unknown) and
        migrated by the next writing run; an empty file is made a history, as a writing run would."""
        p = Path(path)
        if not p.exists():
            raise InputError(path, "--history", path, "no such history file")
        if not p.is_file():
            raise InputError(path, "--history", path, "not a regular file: a history is an SQLite file")
        _check(p)
        for query in ("mode=ro", "mode=ro&immutable=1"):  # immutable: a read-only folder holds no -shm
            try:
                db = sqlite3.connect(f"file:{p}?{query}", uri=True, timeout=60, isolation_level=None)
                version = db.execute("PRAGMA user_version").fetchone()[0]
            except sqlite3.OperationalError:
                continue
            if version == 0:  # no schema yet (an empty file): made a history as by a writing run
                db.close()
                return cls.open(path, create=False)
            history = cls(db, path)
            history.version = version  # an older schema is read as it is; the next writing run migrates it
            history.writable = False
            return history
        raise InputError(path, "--history", path, "cannot open it for reading")

    @classmethod
    def open(cls, path: str, create: bool = True, wait: float = 60.0) -> History:
        """Open (and with ``create``, make or migrate) the history at ``path``; ``wait``: how
        long to wait for another process's lock (a caller's time limit bounds it)."""
        p = Path(path)
        if p.exists() and not p.is_file():  # a FIFO blocks, a device gets a journal beside it
            raise InputError(path, "--history", path, "not a regular file: a history is an SQLite file")
        if p.exists():
            _check(p)
        elif not create:
            raise InputError(path, "--history", path, "no such history file")
        try:
            db = sqlite3.connect(str(p), timeout=wait, isolation_level=None)
        except sqlite3.Error as err:
            raise InputError(path, "--history", path, f"cannot open: {err}") from None
        history = cls(db, path)
        try:
            db.execute(f"PRAGMA busy_timeout = {max(1, int(wait * 1000))}")
            # While another process holds the lock, SQLite answers the old mode, or "database
            # is locked" at once without waiting for the busy timeout: ask again
            mode = "unknown"
            for _ in range(max(1, int(wait * 10))):
                try:
                    mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                except sqlite3.OperationalError as err:
                    if "locked" not in str(err):
                        raise
                if mode.lower() == "wal":
                    break
                time.sleep(0.1)
            if mode.lower() != "wal":
                raise InputError(path, "--history", path, f"cannot switch to WAL mode (got {mode})")
            db.execute("PRAGMA synchronous = NORMAL")
            history._migrate()
        except sqlite3.Error as err:
            db.close()
            raise InputError(path, "--history", path, f"cannot use it: {err}") from None
        except BaseException:
            db.close()
            raise
        return history

    def _migrate(self) -> None:
        with self.transaction():
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                self.db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            for step in range(version + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[step](self.db)
                self.db.execute(f"PRAGMA user_version = {step}")
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('created_by', 'jufo')")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (taken at once, so concurrent writers queue up). Inside
        another, a savepoint: nothing is committed until the outermost one ends, so a run can
        make all its changes or none."""
        if self._depth:
            self.db.execute("SAVEPOINT inner")
            self._depth += 1
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK TO inner")
                self.db.execute("RELEASE inner")
                raise
            finally:
                self._depth -= 1
            self.db.execute("RELEASE inner")
            return
        self.db.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        finally:
            self._depth = 0
        self.db.execute("COMMIT")

    # -- writing -------------------------------------------------------------------------------
    def import_records(self, records: Iterable[JobRecord], source: str) -> int:
        """Add accounting records; a record replaces what snapshots or an earlier import said
        of the same job, except that a known start or end is never forgotten. A record with an
        end and no start left the queue without running (``slurm.never_ran``): it is *gone*."""
        rows = 0
        with self.transaction() as db:
            for rec in records:
                known = db.execute("SELECT submit FROM jobs WHERE id = ?", (rec.id,)).fetchone()
                if known and known[0] is not None and rec.submit is not None and abs(known[0] - rec.submit) > 60:
                    # the same id for another job: another trace, or a reset job counter
                    raise InputError(self.path, "JobID", rec.id, f"this history holds job {rec.id} submitted at "
                                     f"{known[0]}, the import one submitted at {rec.submit}: another system's or "
                                     "trace's jobs? Give it a history of its own; nothing was imported")
                state = ("gone" if rec.start is None else "ended") if rec.end is not None else \
                    "running" if rec.start is not None else "queued"
                self._upsert(db, rec, state, None, source)
                rows += 1
        return rows

    def record_snapshot(self, time: int, observations: list[Observation]) -> None:
        """What a snapshot taken at ``time`` shows. Jobs it no longer shows, that the newest
        earlier snapshot showed queued or running, have ended: running ones halfway between
        the two snapshots; queued ones never seen running are *gone* — started and ended in
        between, or cancelled. A gone job's start is taken as halfway too when the snapshots
        are at most ``START_GAP`` apart (it scores forecasts, but teaches no run time)."""
        with self.transaction() as db:
            newest = db.execute("SELECT max(time) FROM snapshots").fetchone()[0]
            db.execute("INSERT OR IGNORE INTO snapshots VALUES (?, ?)", (time, len(observations)))
            present = set()
            for obs in observations:
                present.add(obs.record.id)
                seen = time if obs.state in ("queued", "running") else None
                self._upsert(db, obs.record, obs.state, seen, "snapshot")
            if newest is None or time < newest:
                return  # an older snapshot does not say what ended
            gone = db.execute("SELECT id, state, seen FROM jobs WHERE state IN ('queued', 'running') "
                              "AND seen IS NOT NULL AND seen < ?", (time,)).fetchall()
            for job_id, state, seen in gone:
                if job_id in present:
                    continue
                if state == "running":
                    db.execute("UPDATE jobs SET state = 'ended', end = ? WHERE id = ?", ((seen + time) // 2, job_id))
                else:
                    start = (seen + time) // 2 if time - seen <= START_GAP else None
                    db.execute("UPDATE jobs SET state = 'gone', start = ? WHERE id = ?", (start, job_id))

    def _upsert(self, db: sqlite3.Connection, rec: JobRecord, state: str, seen: int | None, source: str) -> None:
        _fits(f"job {rec.id}", id=rec.id, user=rec.user, group=rec.group, account=rec.account, queue=rec.queue,
              qos=rec.qos)
        _within(f"job {rec.id}", wall=rec.wall, submit=rec.submit, start=rec.start, end=rec.end, seen=seen)
        _within(f"job {rec.id}", 0, MAX_COUNT, nodes=rec.nodes, cores=rec.cores)
        old = db.execute("SELECT start, end, state, seen, source, submit, user, grp, account, queue, qos, nodes, "
                         "cores, wall FROM jobs WHERE id = ?", (rec.id,)).fetchone()
        if old is None:
            db.execute("INSERT INTO jobs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                       (rec.id, rec.user, rec.group, rec.account, rec.queue, rec.qos, rec.nodes, rec.cores,
                        rec.wall, rec.submit, rec.start, rec.end, state, seen, source))
            return
        old_start, old_end, old_state, old_seen, old_source, old_submit = old[:6]
        order = {"queued": 0, "gone": 1, "running": 2, "ended": 3}
        accounting = SOURCE_PRIORITY.get(source, 0) >= SOURCE_PRIORITY.get(old_source, 0)
        if not accounting:  # a snapshot never rewrites what accounting recorded of the request
            rec = replace(rec, user=old[6], group=old[7], account=old[8], queue=old[9], qos=old[10],
                          nodes=old[11], cores=old[12], wall=old[13], submit=old_submit)
        start = rec.start if rec.start is not None and (accounting or old_start is None) else old_start
        end = rec.end if rec.end is not None and (accounting or old_end is None) else old_end
        new_state = state if order[state] >= order.get(old_state, 0) else old_state
        if state == "gone" and rec.never_ran and accounting:
            # it left the queue without running: what an earlier snapshot guessed (a start halfway
            # between two snapshots, or Slurm's start = end of a cancelled job) was no start
            start, end, new_state = None, rec.end, "gone"
        elif new_state == "gone" and start is not None:
            new_state = "running" if end is None else "ended"
        seen = max((x for x in (seen, old_seen) if x is not None), default=None)
        source = source if accounting else old_source
        submit = rec.submit if rec.submit is not None else old_submit
        if (start, end, new_state, source, submit, rec.user, rec.group, rec.account, rec.queue, rec.qos, rec.nodes,
                rec.cores, rec.wall) == (old_start, old_end, old_state, old_source, *old[5:]):
            if seen != old_seen:  # seen again as it was (most jobs, most runs): no index to touch
                db.execute("UPDATE jobs SET seen = ? WHERE id = ?", (seen, rec.id))
            return
        db.execute("UPDATE jobs SET user=?, grp=?, account=?, queue=?, qos=?, nodes=?, cores=?, wall=?, submit=?, "
                   "start=?, end=?, state=?, seen=?, source=? WHERE id = ?",
                   (rec.user, rec.group, rec.account, rec.queue, rec.qos, rec.nodes, rec.cores, rec.wall,
                    submit, start, end, new_state, seen, source, rec.id))

    def record_forecasts(self, made: int, rows: list[tuple], every: int | None = None) -> int:
        """Keep forecasts made at ``made``: ``(job, predicted, wall, best, lo, hi, coverage,
        runtime, model, system)``, ``system`` the batch system's own estimate then (or None).
        A job's forecast is kept when its last one is at least ``every`` seconds older, by
        default ``calibration.keep_every`` of how long the job has waited (forecasts made at
        ``made`` itself are replaced: the same snapshot again)."""
        kept = 0
        with self.transaction() as db:
            for row in rows:
                _fits(f"job {row[0]}", model=row[8])
                if any(v is not None and abs(v) > LATEST_EPOCH for v in (made, *row[1:6], row[7], row[9])):
                    continue  # a start past the year 9000: the history's own check would take it for damage
                last, submit = db.execute(
                    "SELECT (SELECT max(made) FROM forecasts WHERE job = ?1 AND made < ?2), "
                    "(SELECT submit FROM jobs WHERE id = ?1)", (row[0], made)).fetchone()
                gap = every if every is not None else keep_every(None if submit is None else made - submit)
                if last is not None and made - last < gap:
                    continue
                db.execute("INSERT OR REPLACE INTO forecasts VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                           (row[0], made, *row[1:]))
                kept += 1
        return kept

    def trim(self, now: int, keep_days: int = KEEP_DAYS) -> None:
        """Forget forecasts, snapshots and finished jobs older than ``keep_days`` before ``now``."""
        limit = now - keep_days * 86400
        with self.transaction() as db:
            db.execute("DELETE FROM forecasts WHERE made < ?", (limit,))
            db.execute("DELETE FROM snapshots WHERE time < ?", (limit,))
            db.execute("DELETE FROM jobs WHERE state IN ('ended', 'gone') AND coalesce(end, seen, submit, 0) < ? "
                       "AND id NOT IN (SELECT job FROM forecasts)", (limit,))

    # -- reading -------------------------------------------------------------------------------
    def records(self, now: int, since: int | None = None) -> list[JobRecord]:
        """Every job as it was known at ``now``: submitted by then; a start only if before
        ``now``, an end only if by ``now``. Jobs that left the queue unseen are left out, but
        those known to have left without running (cancelled while pending: an end, no start):
        they waited until then, which start windows and user caps count. ``since``: only jobs
        that had not ended before then (what learning over a window from then on reads)."""
        rows = self.db.execute("SELECT id, user, grp, account, queue, qos, nodes, cores, wall, submit, "
                               "CASE WHEN start < ?1 THEN start END, "  # a start from now on: not yet
                               "CASE WHEN (start IS NULL OR start < ?1) AND end <= ?1 THEN end END, NULL "
                               f"FROM jobs WHERE (state != 'gone' OR {NEVER_RAN}) "
                               "AND submit IS NOT NULL AND submit <= ?1 AND (end IS NULL OR end >= ?2)",
                               (now, -LATEST_EPOCH if since is None else since)).fetchall()
        rows.sort(key=itemgetter(0))  # by id: Python orders str as SQLite's BINARY does, sooner than ORDER BY
        return of_rows(JobRecord, rows)

    def scored(self, now: int, days: int = KEEP_DAYS, limit: int = SCORED_LIMIT) -> list[Scored]:
        """Forecasts made in the ``days`` before ``now``, newest first (at most ``limit``),
        with the real start where it was known at ``now`` (jobs that left unseen with no
        estimated start are left out)."""
        return of_rows(Scored, self._scored(now, days, limit))

    def scored_samples(self, now: int, days: int = KEEP_DAYS, limit: int = SCORED_LIMIT
                       ) -> tuple[list[tuple[int, tuple[float, bool], str]], list[tuple[str, bool]]]:
        """``calibration.samples_of`` the forecasts ``scored`` gives, without a ``Scored`` for
        each: what a forecast's calibration is cut from (``Calibration.of_samples``)."""
        return samples_of(self._scored(now, days, limit))

    def _scored(self, now: int, days: int, limit: int) -> list[tuple]:
        """``scored``'s forecasts as tuples of ``Scored``'s fields, as SQLite gives them: a start
        from ``now`` on is not known yet; the job waited at least until it was last seen (or
        the forecast was made), and no later than ``now``."""
        return self.db.execute(
            "SELECT f.made, f.predicted, CASE WHEN j.start < ?1 THEN j.start END, "
            "max(min(coalesce(j.seen, f.made), ?1), f.made), f.lo, f.hi, f.job "
            "FROM forecasts f JOIN jobs j ON j.id = f.job "
            "WHERE f.made < ?1 AND f.made >= ?2 AND (j.state != 'gone' OR j.start IS NOT NULL) "
            "ORDER BY f.made DESC, f.job LIMIT ?3",
            (now, now - days * 86400, limit)).fetchall()

    def runtimes(self, now: int, recent: int = REACH_JOBS) -> tuple[RuntimeRules, list[float | None]] | None:
        """``RuntimePredictor.learning`` of the jobs known at ``now`` (``records``), answered
        by indexed queries instead of reading and relearning every finished job: the rules, and
        the overruns of the latest ``recent`` finished jobs with a wall, each predicted as of
        before it ended. None for a history without the run-time indexes (an older schema read
        as it is): learn from the records then.  O(recent × keys × log n)."""
        names = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        if not names >= RUNTIME_INDEXES.keys():
            return None
        latest = self.db.execute(f"SELECT id, user, queue, wall, cores, start, end FROM jobs WHERE wall AND "
                                 f"{_FINISHED} ORDER BY end DESC, id DESC LIMIT :n", {"now": now, "n": recent})
        overruns, shortfalls = [], []
        for job, user, queue, wall, cores, start, end in reversed(latest.fetchall()):
            predicted, _ = RuntimeQueries(self.db, now, (end, job)).predict(user, queue, wall, cores)
            overruns.append(overrun(predicted, end - start, wall))
            shortfalls.append(shortfall(predicted, end - start))
        rules = RuntimeQueries(self.db, now)
        rules.learned_overruns(overruns, shortfalls)
        return rules, overruns

    def kept_caps(self) -> dict[int, KeptDay]:
        """The whole days of the user-cap sweep an earlier run kept (``kept_cap_window``); none
        where there are none (an older schema), and none of what does not read as such days
        (those are swept again).  O(days × users)."""
        if self.version < 3:
            return {}
        row = self.db.execute("SELECT value FROM learned WHERE name = ?", (CAP_KEPT,)).fetchone()
        try:
            data = json.loads(row[0]) if row is not None else {}
        except ValueError:
            return {}
        return dict(day for day in map(_kept_day, data.items() if isinstance(data, dict) else ()) if day)

    def keep_caps(self, days: dict[int, KeptDay]) -> None:
        """Keep ``days`` for the next run in place of what was kept (the caller asks only where
        they differ from ``kept_caps``; nothing is kept by a reading command)."""
        if not self.writable:
            return
        value = json.dumps({str(day): [digest, seconds, best] for day, (digest, seconds, best) in sorted(days.items())},
                           sort_keys=True, separators=(",", ":"))
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO learned VALUES (?, ?)", (CAP_KEPT, value))
            db.execute("DELETE FROM learned WHERE name LIKE 'caps/%' AND name != ?", (CAP_KEPT,))  # another jufo's

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def range_outcomes(self) -> list[tuple[str, str, int, int, int, int, int]]:
        """``(user, queue, made, predicted, lo, hi, start)`` of every kept forecast with a
        range whose job has started: how the ranges fared so far."""
        return self.db.execute(
            "SELECT j.user, j.queue, f.made, f.predicted, f.lo, f.hi, j.start FROM forecasts f "
            "JOIN jobs j ON j.id = f.job WHERE f.lo IS NOT NULL AND j.start IS NOT NULL AND j.start >= f.made "
            "ORDER BY f.made, f.job").fetchall()

    def outcomes(self, since: int | None = None) -> list[tuple[int, int | None, int | None, int | None, int | None,
                                                               int | None, int, str]]:
        """``(made, best, wall, system, lo, hi, start, queue)`` of every kept forecast (made at
        ``since`` or later, if given) whose job has started since it was made, in the order
        they were made: how the forecasts fared (``system``, the batch system's own estimate
        then, is None where a history of schema 1 kept none)."""
        system = "f.system" if self.version >= 2 else "NULL"
        return self.db.execute(
            f"SELECT f.made, f.best, f.wall, {system}, f.lo, f.hi, j.start, j.queue FROM forecasts f "  # noqa: S608
            "JOIN jobs j ON j.id = f.job WHERE j.start IS NOT NULL AND j.start >= f.made AND f.made >= ? "
            "ORDER BY f.made, f.job", (-LATEST_EPOCH if since is None else since,)).fetchall()

    def stats(self) -> dict[str, int]:
        """Counts for ``history show``: jobs by state, those gone without a start but with an end
        (cancelled while pending) apart from those that left unseen."""
        db = self.db
        jobs = dict(db.execute(f"SELECT CASE WHEN state = 'gone' AND {NEVER_RAN} THEN 'cancelled' ELSE state END "
                               "AS s, count(*) FROM jobs GROUP BY s").fetchall())
        return {"jobs": sum(jobs.values()), **{f"jobs_{k}": v for k, v in sorted(jobs.items())},
                "snapshots": db.execute("SELECT count(*) FROM snapshots").fetchone()[0],
                "forecasts": db.execute("SELECT count(*) FROM forecasts").fetchone()[0]}

    def check_system(self, name: str, nodes: list[str]) -> None:
        """A history belongs to one system: the first snapshot's name and nodes are recorded,
        and a snapshot of another system (another name, or fewer than half of its nodes in
        common) is InputError naming both, before anything is changed."""
        from ..io.hostlist import compress_hostlist, expand_hostlist

        known_name, known_nodes = self.meta("system"), self.meta("nodes")
        if known_name is None:
            self.set_meta("system", name)
            self.set_meta("nodes", compress_hostlist(nodes))
            return
        if known_name != name:
            raise InputError(self.path, "system", name, f"this history belongs to system {known_name!r}; "
                             "give each system a history of its own")
        if known_nodes:
            before, now = set(expand_hostlist(known_nodes, 10_000_000)), set(nodes)
            common = len(before & now)
            if common * 2 < max(len(before), len(now)):
                raise InputError(self.path, "nodes", f"{len(now):,} nodes",
                                 f"this history's system has {len(before):,} nodes and only {common:,} in common; "
                                 "give each system a history of its own")
            if before != now:
                self.set_meta("nodes", compress_hostlist(nodes))

    def check_time(self, now: int, keep_days: int, format_date) -> None:
        """Time moves forward a plausible step: a snapshot more than ``keep_days`` after the
        newest time the history knows, or before its oldest kept one, would trim (or be trimmed
        with) what it holds. InputError naming both times."""
        latest = self.latest()
        if latest is None:
            return
        span = keep_days * 86400
        if now > latest + span:
            raise InputError(self.path, "system_time", format_date(now),
                             f"{(now - latest) / 86400:,.0f} days after the newest time this history knows "
                             f"({format_date(latest)}); it keeps {keep_days} days, so recording it would forget "
                             "everything: check the snapshot's clock, or pass --history-jump")
        if now < latest - span:
            raise InputError(self.path, "system_time", format_date(now),
                             f"more than {keep_days} days before the newest time this history knows "
                             f"({format_date(latest)}): pass --history-jump if that is meant")

    def latest(self) -> int | None:
        """The newest time the history knows of (a snapshot, a start or an end)."""
        row = self.db.execute("SELECT max(x) FROM (SELECT max(time) AS x FROM snapshots UNION ALL "
                              "SELECT max(coalesce(end, start, submit)) FROM jobs)").fetchone()
        return row[0]


def _int(column: str, nullable: bool = True, lo: int = -LATEST_EPOCH, hi: int = LATEST_EPOCH) -> str:
    test = f"(typeof({column}) != 'integer' OR {column} < {lo} OR {column} > {hi})"
    return f"({column} IS NOT NULL AND {test})" if nullable else f"({column} IS NULL OR {test})"


MAX_TEXT = 65536  # characters of a name the history keeps (longer is damage to its own check)


def _text(column: str) -> str:
    return f"(typeof({column}) != 'text' OR length({column}) > {MAX_TEXT})"


def _within(label: str, lo: int = -LATEST_EPOCH, hi: int = LATEST_EPOCH, **numbers: int | None) -> None:
    """InputError (the run's changes undone) for a number the history's own check would refuse
    as damage at the next run (``_INSANE``): readers keep them in range, so this only guards.

    >>> _within("job 1", wall=3600, submit=None)
    >>> _within("job 2", 0, 10, cores=11)
    Traceback (most recent call last):
    jufo.io.errors.InputError: job 2: cores='11': beyond what the history keeps (0 to 10), and nothing of this run was recorded
    """
    for key, value in numbers.items():
        if value is not None and not lo <= value <= hi:
            raise InputError(label[:80], key, str(value), f"beyond what the history keeps ({lo:,} to {hi:,}), and "
                             "nothing of this run was recorded")


def _fits(label: str, **texts: str) -> None:
    """InputError (the run's changes undone) for a name longer than the history keeps: written,
    its own check would refuse the file as damaged at the next run.

    >>> _fits("job 1", user="u" * MAX_TEXT)
    >>> _fits("job 2", user="u" * (MAX_TEXT + 1))
    Traceback (most recent call last):
    jufo.io.errors.InputError: job 2: user='uuuuuuuuuuuuuuuuuuuuuuuuuuuuuu…': 65,537 characters; the history keeps at most 65,536, and nothing of this run was recorded
    """
    for key, value in texts.items():
        if len(value) > MAX_TEXT:
            raise InputError(label[:80], key, f"{value[:30]}…", f"{len(value):,} characters; the history keeps at most "
                             f"{MAX_TEXT:,}, and nothing of this run was recorded")


# What each table's rows must be: a flipped byte that leaves SQLite's own structure intact can
# still make a NULL, a text where a number belongs or a number beyond any date. One scan each
# (200,000 jobs: ~60 ms), in SQL, before anything reads a row.
_INSANE = {
    "jobs": " OR ".join([_text("id"), *map(_text, ("user", "grp", "account", "queue", "qos", "source")),
                         "state IS NULL OR state NOT IN ('queued', 'running', 'ended', 'gone')",
                         _int("nodes", False, 0, MAX_COUNT), _int("cores", False, 0, MAX_COUNT),
                         *map(_int, ("wall", "submit", "start", "end", "seen"))]),
    "snapshots": " OR ".join([_int("time", False), _int("jobs", False, 0, MAX_COUNT)]),
    "forecasts": " OR ".join([_text("job"), _int("made", False), _int("predicted", False),
                              *map(_int, ("wall", "best", "lo", "hi", "runtime", "system")), _text("model"),
                              "(coverage IS NOT NULL AND (typeof(coverage) NOT IN ('real', 'integer') "
                              "OR NOT coverage BETWEEN 0 AND 1))"]),
    "learned": f"{_text('name')} OR typeof(value) != 'text'",  # a value is what ``kept_caps`` reads, or swept anew
}
_INSANE_V1 = {**_INSANE, "forecasts": _INSANE["forecasts"].replace(f" OR {_int('system')}", "")}  # no system yet


def columns_at(version: int) -> dict[str, tuple[str, ...]]:
    """Each table's columns at schema ``version`` (1 or later): schema 1 had no ``system``,
    schemas 1 and 2 no table ``learned``."""
    columns = {table: names for table, names in COLUMNS.items() if version >= 3 or table != "learned"}
    return columns if version >= 2 else {**columns, "forecasts": COLUMNS["forecasts"][:-1]}


# The indexes' own copies of those values (a query that reads an index reads them there):
_INSANE_INDEXED = {
    ("jobs", "jobs_state"): "state IS NULL OR state NOT IN ('queued', 'running', 'ended', 'gone')",
    ("jobs", "jobs_submit"): _int("submit"),
    ("forecasts", "forecasts_made"): _int("made", False),
    ("forecasts", "forecasts_scored"): " OR ".join([_int("made", False), _text("job"), _int("predicted", False),
                                                    _int("lo"), _int("hi")]),
}
# (The run-time indexes are not scanned, 0.1 s a run on 54,000 jobs: ``RuntimeQueries`` only
# compares their copies and keeps a row only where its end lies between its start and now
# (SQLite orders any text or blob after every number), so a damaged copy can hide a row
# from a rule or show it to another one, never stop a run or give a run time beyond the wall.)


def _sane(db: sqlite3.Connection, path: str, version: int = SCHEMA_VERSION) -> None:
    """Refuse (exit 2, nothing changed) a history whose rows are not what jufo writes."""
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")}
    insane_rows = _INSANE if version >= 2 else _INSANE_V1
    checks = [(table, "", insane) for table, insane in insane_rows.items() if table in names]
    checks += [(table, f" INDEXED BY {index}", insane) for (table, index), insane in _INSANE_INDEXED.items()
               if index in names]
    for table, indexed, insane in checks:
        row = db.execute(f"SELECT rowid FROM {table}{indexed} WHERE {insane} LIMIT 1").fetchone()  # noqa: S608
        if row is not None:
            raise InputError(path, "--history", path, f"damaged: row {row[0]} of table {table} holds values jufo "
                             "never writes; it was not changed. Check it with: sqlite3 FILE 'PRAGMA integrity_check'")


def _check(path: Path) -> None:
    """Refuse, without changing it, a file that is not jufo's history or is newer."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(100)
    except OSError as err:
        raise InputError(str(path), "--history", str(path), f"cannot read: {err.strerror}") from None
    if not head:
        return  # an empty file (e.g. made by mktemp) becomes a history
    if not head.startswith(_SQLITE_MAGIC):
        raise InputError(str(path), "--history", str(path), "not jufo's history: not an SQLite database")
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60, isolation_level=None)
    except sqlite3.Error as err:
        raise InputError(str(path), "--history", str(path), f"cannot open: {err}") from None
    try:
        # one read transaction: each statement alone would see its own moment, and a history
        # another run is creating meanwhile looked like tables without jufo's id (a cron race)
        db.execute("BEGIN")
        app = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if app != APPLICATION_ID and (tables or version):
            raise InputError(str(path), "--history", str(path),
                             "not jufo's history: another application's SQLite database")
        if version > SCHEMA_VERSION:
            raise InputError(str(path), "--history", str(path),
                             f"written by a newer jufo (schema {version}, this one reads up to {SCHEMA_VERSION})")
        if version >= 1:  # all read-only, before anything may write (WAL mode, a migration)
            for table, columns in columns_at(version).items():
                found = tuple(r[1] for r in db.execute(f"PRAGMA table_info({table})"))  # noqa: S608 - constants
                if found != columns:
                    raise InputError(str(path), "--history", str(path), f"damaged: table {table} has columns "
                                     f"{', '.join(found) or 'none'}, not jufo's; it was not changed")
            _sane(db, str(path), version)
    except sqlite3.DatabaseError as err:
        raise InputError(str(path), "--history", str(path), f"damaged or not jufo's history ({err}); it was not "
                         "changed. Check it with: sqlite3 FILE 'PRAGMA integrity_check'") from None
    finally:
        db.close()


def default_path() -> str | None:
    """``JUFO_HISTORY`` from the environment, if set."""
    return os.environ.get("JUFO_HISTORY") or None
