"""The ``jufo`` command: small click commands over the forecast, lml and schema modules.

Exit status: 0 done; 2 bad input or usage (one message naming object, key and value);
1 internal error. No output file is written unless the whole run succeeds.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import re
import stat
import sys
import time
from pathlib import Path
from typing import NoReturn

import click

from .io import lml
from .io import output as out
from . import own_module, signals
from .io.values import MAX_CORES_PER_NODE, count_of
from .io.errors import InputError, Report
from .learn.history import KEEP_DAYS
from .learn.calibration import DEFAULT_COVERAGE

class Share(click.FloatRange):
    """A share strictly between 0 and 1; NaN is refused (FloatRange lets it through)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if number != number:
            self.fail(f"{value!r} is not a number between 0 and 1", param, ctx)
        return number


COVERAGE = Share(0, 1, min_open=True, max_open=True)

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 1
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TIMEOUT = 124  # as coreutils' timeout
EXIT_TERMINATED = 143  # 128 + SIGTERM, as the shell reports a job killed by it
# The cyclic collector runs after a million new container objects, not 700: a command builds
# millions that live to its end and makes few cycles, and each full collection walks them all.
# The 160,000-node predict 22.2 -> 20.7 s, KTH replays 2-5 % faster; peak memory unchanged.
GC_THRESHOLDS = (1_000_000, 100, 100)


def _fail(message: str, code: int) -> None:
    click.echo(f"jufo: {message}", err=True)
    sys.exit(code)


def _quiet_exit(code: int) -> None:
    """Exit without a word, and without Python complaining about a closed stdout at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(code)


def _out_of_memory() -> NoReturn:
    """Say it and leave at once: unwinding a half-built heap under a memory limit can spin
    for minutes (no temporary file exists here: a failed write removed its own)."""
    os.write(2, b"jufo: error: out of memory (the input is too large for the memory this process may use)\n")
    os._exit(EXIT_INTERNAL)


def _memory_exhausted() -> bool:
    """Can this process not get 8 MiB more right now?"""
    try:
        bytearray(8 << 20)
    except MemoryError:
        return True
    return False


def _stopped(stop: BaseException) -> NoReturn:
    """Leave as SIGTERM (exit 143) or ``--timeout`` (exit 124) asks, with no output written."""
    if isinstance(stop, signals.TimedOut):
        _fail("error: the run passed its --timeout; no output written", EXIT_TIMEOUT)
    _fail("terminated; no output written", EXIT_TERMINATED)


def _signal_behind(err: BaseException) -> BaseException | None:
    """The SIGTERM or ``--timeout`` whose unwinding raised ``err``, if any: a lock the signal
    interrupted half-taken fails as a ``with`` releases it ("cannot release un-acquired lock",
    seen once when a backtest's timeout came), and the signal is what ended the run."""
    seen, depth = err.__context__, 0
    while seen is not None and depth < 50:
        if isinstance(seen, (signals.Terminated, signals.TimedOut)):
            return seen
        seen, depth = seen.__context__, depth + 1
    return None


def guarded(command):
    """Map InputError to exit 2 and anything unexpected to exit 1, never a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        thresholds = gc.get_threshold()
        gc.set_threshold(*GC_THRESHOLDS)
        try:
            return command(*args, **kwargs)
        except InputError as err:
            _fail(f"error: {err}", EXIT_BAD_INPUT)
        except out.WriteFailed as err:
            _fail(f"error: cannot write {err}", EXIT_INTERNAL)
        except BrokenPipeError:  # the reader went away: nothing to tell it
            _quiet_exit(EXIT_INTERNAL)
        except MemoryError:
            _out_of_memory()
        except (signals.Terminated, signals.TimedOut) as stop:
            _stopped(stop)
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except Exception as err:  # noqa: BLE001 - the last line of defence
            sqlite = sys.modules.get("sqlite3")  # imported only where a history is used
            # (SQLite does not check UTF-8: a flipped byte in a text surfaces as a decode error)
            if sqlite is not None and isinstance(err, (sqlite.DatabaseError, UnicodeDecodeError)):
                _fail(f"error: the history file is damaged or not jufo's ({err}); it was not changed. "
                      "Check it with: sqlite3 FILE 'PRAGMA integrity_check'", EXIT_BAD_INPUT)
            behind = _signal_behind(err)
            if behind is not None:
                _stopped(behind)
            # CPython 3.11 reports a failed allocation of a new frame's stack as SystemError
            # ("error return without exception set"): where memory is indeed exhausted, say so;
            # and its parser, compiling one of jufo's own modules imported late (seen at 30 MiB
            # of address space), a SyntaxError
            if ((isinstance(err, SystemError) and _memory_exhausted())
                    or (isinstance(err, SyntaxError) and own_module(err.filename))):
                _out_of_memory()
            if os.environ.get("JUFO_DEBUG"):
                raise
            _fail(f"internal error: {type(err).__name__}: {err} (set JUFO_DEBUG=1 for a traceback)", EXIT_INTERNAL)
        finally:
            gc.set_threshold(*thresholds)

    return wrapper


class Progress:
    """A one-line progress report on stderr, only when stderr is a terminal."""

    def __init__(self, text: str = "simulating, {done:,} of {total:,} jobs started") -> None:
        self.text = text
        self.shown = False
        self.last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.2:
            return
        self.last = now
        self.shown = True
        sys.stderr.write("\rjufo: " + self.text.format(done=done, total=total) + " ")
        sys.stderr.flush()

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def progress_bar(text: str | None = None) -> Progress | None:
    if not sys.stderr.isatty():
        return None
    return Progress(text) if text else Progress()


def _settings_option(f):
    return click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
                        help="A scheduler key, e.g. --set maxtopdogs=all (repeatable).")(f)


def _forecast(doc: lml.Document, report: Report, settings: dict[str, str] | None, jobs=None):
    """The prediction, with a progress line on stderr when it is a terminal (``jobs``: see
    ``forecast.read_snapshot``)."""
    from .forecast import predict as run_prediction

    bar = progress_bar()
    forecast = run_prediction(doc, report, settings, bar, jobs)
    if bar:
        bar.done()
    assert forecast is not None  # predict mode raises instead of returning None
    return forecast


def _write(doc: lml.Document, forecast, output: str, first: str | None = None) -> None:
    """The input document with the prediction's data added, written atomically."""
    from .engine.prediction import results
    from .forecast import provenance

    out.write(output, _serialized(doc, {**results(forecast), **provenance(doc, forecast.config)}, first))


def _serialized(doc: lml.Document, data: dict[str, list[tuple[str, str]]], first: str | None) -> bytes:
    """The output: the (merged) input with ``data`` added; with ``first``, the path of the first
    input, only that file, with the data of its own objects: LLview 2's jobs_LML.xml with jufo's
    keys, to take that file's place in its workflow."""
    lml.add_results(doc, data)  # the merged document keeps them too (--json reads it)
    if first is None:
        return lml.serialize(doc)
    alone = lml.read(first)
    own = {o.id for o in alone.objects}
    lml.add_results(alone, {oid: pairs for oid, pairs in data.items() if oid in own})
    return lml.serialize(alone)


JSON_SCHEMA = "jufo.v1"  # the version of schemas/jufo-json.schema.json every --json output follows


def json_text(command: str, payload: dict) -> str:
    """One command's JSON: the schema version and the command first, then the keys sorted.

    >>> json_text("validate", {"valid": True, "input": ["a"]})
    '{"schema": "jufo.v1", "command": "validate", "input": ["a"], "valid": true}'
    """
    head = json.dumps({"schema": JSON_SCHEMA, "command": command})
    rest = json.dumps({k: v for k, v in payload.items() if k not in ("schema", "command")}, sort_keys=True,
                      default=list)
    return head if rest == "{}" else f"{head[:-1]}, {rest[1:]}"


def preset_settings(name: str | None) -> dict[str, str]:
    """The scheduler keys of a preset in configs/ (none without a name)."""
    if not name:
        return {}
    from .forecast import load_preset

    return load_preset(name)


def parse_overrides(pairs: tuple[str, ...]) -> dict[str, str]:
    from .engine.configuration import check_keys

    settings: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--set")
        settings[key.strip()] = value.strip()
    check_keys(settings, "--set")
    return settings


class OneLineErrors(click.Group):
    """Usage errors as one line on stderr (``jufo: error: …``), exit 2, like every other error."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.Abort:
            _fail("interrupted; no output written", EXIT_INTERRUPTED)
        except click.ClickException as err:
            ctx = getattr(err, "ctx", None)
            hint = f" (see '{ctx.command_path} --help')" if isinstance(err, click.UsageError) and ctx else ""
            _fail(f"error: {err.format_message()}{hint}", err.exit_code)
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="jufo")
def main() -> None:
    """jufo: forecast what the batch scheduler will do, from an LLview raw LML snapshot."""
    signals.on_sigterm()


def _inputs(f):
    return click.argument("input_paths", metavar="INPUT...", nargs=-1, required=True)(f)


def _check_inputs(paths: tuple[str, ...]) -> list[str]:
    """Several files are merged (LLview 2's jobs, nodes, sysinfo, ... files); stdin at most once
    and open, and no file twice (its objects would be doubled)."""
    if list(paths).count("-") > 1:
        raise click.BadParameter("standard input ('-') can be read only once", param_hint="INPUT")
    if "-" in paths and sys.stdin is None:
        raise click.BadParameter("standard input ('-') is closed", param_hint="INPUT")
    seen: dict[tuple[int, int], str] = {}
    for path in paths:
        if path.endswith((".swf", ".swf.gz")):
            raise click.BadParameter(f"{path} is an SWF trace, not an LML snapshot: make one with 'jufo swf2lml "
                                     f"{path} --at SECONDS -o snap.xml', or simulate the trace with 'jufo replay'",
                                     param_hint="INPUT")
        try:
            st = os.stat(path) if path != "-" else None
        except OSError:
            continue  # reading it says why
        if st is not None and stat.S_ISREG(st.st_mode):
            key = (st.st_dev, st.st_ino)
            if key in seen:
                raise click.BadParameter(f"{path} is {seen[key]} again; each file is read once", param_hint="INPUT")
            seen[key] = path
    return list(paths)


def _needs_stdout(command):
    """A command whose result is its standard output: with that closed, exit 1 saying so
    instead of exit 0 having written nothing."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        if sys.stdout is None:
            _fail("error: standard output is closed; nothing could be written", EXIT_INTERNAL)
        return command(*args, **kwargs)

    return wrapper


@main.command()
@_inputs
@click.option("-o", "--output", default="-", show_default=True, help="Output LML file ('-': standard output).")
@click.option("--config", "preset", default=None, metavar="FILE",
              help="A preset: an LML file with one scheduler object, or a name from configs/ (juropa-moab).")
@_settings_option
@click.option("--history", "history_path", default=None, envvar="JUFO_HISTORY", metavar="FILE",
              help="Learn from and add to this history (an SQLite file; also $JUFO_HISTORY): best estimate, "
                   "calibrated range, walltime-only forecast, predicted run time.")
@click.option("--coverage", type=COVERAGE, default=DEFAULT_COVERAGE,
              show_default=True, help="With --history: the share of real starts the range is to hold.")
@click.option("--history-keep", "keep_days", type=click.IntRange(min=1), default=KEEP_DAYS, show_default=True,
              metavar="DAYS", help="With --history: forget what is older than this.")
@click.option("--only-first", is_flag=True, help="With several INPUT files: write only the first (LLview 2's "
              "jobs_LML.xml) with jufo's data, so it can take that file's place in LLview 2's workflow.")
@click.option("--history-jump", is_flag=True, help="With --history: accept a snapshot more than --history-keep "
              "days after (or before) what the history knows; without it such a snapshot is refused.")
@click.option("-P", "--processes", "workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="With --history and 2 or more: the walltime-only simulation runs in a second process "
                   "while this one learns (the same output; at most the machine's cores are used).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help=f"Give up after SECONDS: no output, exit {EXIT_TIMEOUT}.")
@click.option("--metrics", "metrics_path", default=None, metavar="FILE",
              help="After a successful run, write a Prometheus node_exporter textfile here.")
@click.option("--json", "as_json", is_flag=True, help="Also print a summary and every job's prediction as JSON "
              "on standard output (needs -o FILE).")
@click.option("--json-out", "json_path", default=None, metavar="FILE", help="Write that JSON to FILE instead.")
@click.option("-v", "--verbose", is_flag=True, help="Print a short summary on stderr.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print warnings.")
@guarded
def predict(input_paths: tuple[str, ...], output: str, preset: str | None, overrides: tuple[str, ...], history_path: str | None,
            coverage: float, keep_days: int, only_first: bool, history_jump: bool, workers: int, timeout: float | None,
            metrics_path: str | None, as_json: bool, json_path: str | None, verbose: bool, quiet: bool) -> None:
    """Predict start and end times of the jobs in INPUT and write them into a copy of it.
    Several INPUT files (LLview 2 writes jobs, nodes, sysinfo, reservations, classes apart)
    are merged into one output as LML_da's combine step would.

    Scheduler keys: --set wins over --config, which wins over INPUT's scheduler object,
    which wins over the defaults.
    """
    began = time.perf_counter()
    signals.time_limit(timeout)
    paths = _check_inputs(input_paths)
    if output != "-" and any(_same_file(path, output) for path in paths):
        raise click.BadParameter("the output would overwrite the input file; jufo never modifies its input",
                                 param_hint="-o")
    out.check_target(output)
    if as_json and output == "-" and json_path is None:
        raise click.BadParameter("--json prints to standard output, where the LML goes: give -o FILE, "
                                 "or --json-out FILE", param_hint="--json")
    if json_path:
        out.check_target(json_path, "--json-out")
    if metrics_path:
        out.check_target(metrics_path, "--metrics")
    if history_path:
        _history_targets(history_path, {"-o": output, "--metrics": metrics_path, "--json-out": json_path})
    settings = {**preset_settings(preset), **parse_overrides(overrides)}
    doc = lml.read_all(paths)
    report = Report(quiet=quiet)
    first = paths[0] if only_first and len(paths) > 1 else None
    if history_path:
        forecast = _predict_with_history(doc, report, settings, output, history_path, coverage, keep_days,
                                         history_jump, first, min(workers, os.cpu_count() or 1))
    else:
        forecast = _forecast(doc, report, settings)
        _write(doc, forecast, output, first)
    signals.time_limit(None)
    if as_json or json_path:
        text = json_text("predict", prediction_json(doc, forecast))
        if json_path:
            out.write(json_path, (text + "\n").encode())
        else:
            click.echo(text)
    if metrics_path:
        from .views import metrics

        metrics.write_run(metrics_path, forecast.jobs, time.perf_counter() - began)
    if verbose:
        jobs = forecast.jobs
        started = sum(1 for j in jobs if j.start is not None)
        blocked = sum(1 for j in jobs if not j.running and j.start is None)
        cfg = forecast.config
        click.echo(
            f"jufo: {len(jobs)} jobs read ({sum(j.running for j in jobs)} running), {started} predicted, "
            f"{blocked} not startable; {cfg.algorithm} with {cfg.state}, {forecast.simulation.events} event times; "
            f"{time.perf_counter() - began:.3f} s",
            err=True,
        )


def prediction_json(doc: lml.Document, forecast) -> dict:
    """``predict --json``: the system time, the settings, a summary, and every job as written."""
    from .views import show as views
    from .io.dates import format_date

    records = views.job_records(doc)
    waiting = [r for r in records if not r["running"]]
    starts = sorted(r["starttime"] for r in waiting if "starttime" in r)
    config = forecast.config
    return {"system_time": format_date(forecast.snapshot.epoch, views.ISO), "settings": dict(config.settings),
            "summary": {"jobs": len(records), "running": len(records) - len(waiting), "waiting": len(waiting),
                        "predicted": len(starts), "cannot_start": len(waiting) - len(starts),
                        "latest_start": starts[-1] if starts else None},
            "jobs": records}


def _predict_with_history(doc: lml.Document, report: Report, settings: dict[str, str], output: str,
                          history_path: str, coverage: float, keep_days: int, jump: bool = False,
                          first: str | None = None, processes: int = 1):
    """Record what the snapshot shows, forecast with what the history taught, keep the
    forecasts and write the output: all or nothing. The history's changes are one
    transaction; the output is staged (written whole beside its target) inside it and renamed
    into place only after the commit, so a failure anywhere leaves the history and the
    output as they were."""
    from .engine.snapshot import prepare
    from .forecast import provenance
    from .io.dates import format_date
    from .learn import outlook
    from .learn.history import History

    prepared = prepare(doc, report, settings)
    assert prepared is not None  # predict mode raises instead
    snap, config = prepared
    staged = None
    try:
        with History.open(history_path, wait=min(60.0, signals.remaining() or 60.0)) as history:
            with history.transaction():
                system = doc.of_type("system")
                name = (system[0].data.get("hostname") or system[0].name or system[0].id) if system else "system"
                history.check_system(name, [n.name for n in snap.machine.nodes])
                if not jump:
                    history.check_time(snap.epoch, keep_days, lambda t: format_date(t, "%Y-%m-%dT%H:%M:%SZ"))
                history.record_snapshot(snap.epoch, outlook.observations(snap))
                history.set_meta("capacity", str(snap.machine.total_cores))
                bar = progress_bar()
                look = outlook.outlook(snap, config, report, history, coverage, bar, processes)
                if bar:
                    bar.done()
                data = {**outlook.results(look), **provenance(doc, look.config)}
                staged = out.stage(output, _serialized(doc, data, first))
                history.record_forecasts(snap.epoch, outlook.forecast_rows(look))
                history.trim(snap.epoch, keep_days)
        out.publish(staged)
        staged = None
    finally:
        if staged is not None:
            out.discard(staged)
    return look


def _history_targets(history_path: str, targets: dict[str, str | None]) -> None:
    """Refuse, before any work, an output that is the history itself or one of SQLite's files
    beside it (also through a link): writing it would replace the user's history."""
    real = os.path.realpath(history_path)
    guarded = {real, *(real + suffix for suffix in ("-wal", "-shm", "-journal"))}
    for option, path in targets.items():
        if not path or path == "-":
            continue
        if os.path.realpath(path) in guarded or _same_file(history_path, path):
            raise click.BadParameter(f"{path} is the history ({history_path}); writing there would replace it",
                                     param_hint=option)


def _same_file(a: str, b: str) -> bool:
    """Are ``a`` (``-``: standard input) and ``b`` the same regular file?"""
    try:
        if a == "-" and sys.stdin is None:
            return False
        sa = os.fstat(sys.stdin.fileno()) if a == "-" else os.stat(a)
        sb = os.stat(b)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(sa.st_mode) and (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def schema_path() -> Path:
    """The raw-LML core schema: beside the package in a checkout, else installed with it."""
    local = Path(__file__).resolve().parent.parent / "schemas" / "raw-lml.xsd"
    if local.exists():
        return local
    from importlib import resources  # here: 14 ms that only validate needs

    return Path(str(resources.files("jufo.schemas") / "raw-lml.xsd"))


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the presets as JSON.")
@guarded
@_needs_stdout
def presets(as_json: bool) -> None:
    """The scheduler presets --config takes by name (files in configs/), each with its first
    sentence."""
    from .forecast import presets as shipped

    found = shipped()
    if as_json:
        click.echo(json_text("presets", {"presets": [{"name": n, "about": a} for n, a in found]}))
        return
    width = max((len(n) for n, _ in found), default=4)
    for name, about in found:
        click.echo(f"{name:{width}}  {about}")


@main.command()
@_inputs
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@guarded
@_needs_stdout
def validate(input_paths: tuple[str, ...], as_json: bool) -> None:
    """Check INPUT (several files: merged first) against jufo's raw-LML schema and the
    scheduling rules; list every problem."""
    import xmlschema
    from lxml import etree

    paths = _check_inputs(input_paths)
    input_path = " + ".join(paths)
    doc = lml.read_all(paths, scan=False)  # the schema check needs the tree
    problems: list[str] = []
    schema = xmlschema.XMLSchema11(str(schema_path()))
    tree = doc.tree
    root = tree.getroot()
    if etree.QName(root).namespace != lml.LML_NS:  # check no-namespace and LLview files as LML
        root = etree.fromstring(etree.tostring(root))
        root.tag = f"{{{lml.LML_NS}}}lgui"
    for err in schema.iter_errors(root):
        where = err.path or "/"
        problems.append(f"schema: {where}: {err.reason}")
    from .engine.snapshot import prepare, read_snapshot

    report = Report(collect=True)
    prepared = prepare(doc, report)
    problems.extend(f"error: {e}" for e in report.errors)
    snap = read_snapshot(doc, Report(collect=True)) if prepared is None else prepared[0]
    if snap is not None:
        problems.extend(f"job: {p}" for p in snap.job_problems)
    if prepared is not None:
        snap, config = prepared
        state = config.make_state(snap.machine, snap.queues)
        for job in snap.jobs:
            reason = None if job.running or job.reason else state.exceeds(job)
            if reason:
                problems.append(f"job {job.id}: {reason}")
    if as_json:
        click.echo(json_text("validate", {"input": paths, "valid": not problems, "objects": len(doc.objects),
                                          "jobs": len(doc.of_type("job")), "problems": problems,
                                          "warnings": list(report.warnings)}))
        if problems:
            sys.exit(EXIT_BAD_INPUT)
        return
    for warning in report.warnings:
        click.echo(f"jufo: warning: {warning}")
    for problem in problems:
        click.echo(problem)
    if problems:
        click.echo(f"{input_path}: {len(problems)} problem(s)", err=True)
        sys.exit(EXIT_BAD_INPUT)
    click.echo(f"{input_path}: valid ({len(doc.objects)} objects, {len(doc.of_type('job'))} jobs)")


@main.command()
@click.argument("trace_path", metavar="TRACE")
@click.option("-o", "--output", default="-", show_default=True, help="Output LML file ('-': standard output).")
@click.option("--at", "at", type=int, default=None, help="Snapshot time, seconds after the trace starts (default: first submit).")
@click.option("--future", is_flag=True, help="Add every later job with its future queue date.")
@click.option("--exact", is_flag=True, help="wall = the real run time.")
@click.option("--actual", is_flag=True, help="Add actualruntime = the real run time.")
@click.option("--nodes", type=click.IntRange(min=1), default=None, help="Nodes (default: MaxProcs / cores).")
@click.option("--cores", type=click.IntRange(min=1), default=1, show_default=True, help="Cores per node.")
@_settings_option
@click.option("-q", "--quiet", is_flag=True, help="Do not print the counts.")
@guarded
def swf2lml(trace_path: str, output: str, at: int | None, future: bool, exact: bool, actual: bool,
            nodes: int | None, cores: int, overrides: tuple[str, ...], quiet: bool) -> None:
    """Convert a Standard Workload Format trace (.swf, .swf.gz) into a raw LML snapshot."""
    from .io import swf

    out.check_target(output)
    trace = swf.read(trace_path)
    conv = swf.Conversion(at, future, exact, actual, nodes, cores, parse_overrides(overrides))
    data, counts = swf.snapshot(trace, conv)
    out.write(output, data)
    if not quiet:
        click.echo(_conversion_summary(counts), err=True)


def _conversion_summary(counts: dict[str, int]) -> str:
    taken = counts["running"] + counts["waiting"] + counts["future"]
    return (f"jufo: {taken} jobs ({counts['running']} running, {counts['waiting']} waiting, "
            f"{counts['future']} future); skipped {counts['unknown']} with unknown run time or size, "
            f"{counts['too_big']} larger than the machine")


@main.command()
@click.argument("trace_path", metavar="TRACE")
@click.option("--nodes", type=click.IntRange(min=1), default=None, help="Nodes (default: MaxProcs / cores).")
@click.option("--cores", type=click.IntRange(min=1), default=1, show_default=True, help="Cores per node.")
@click.option("--exact", is_flag=True, help="Plan with the real run times instead of the requested ones.")
@click.option("--config", "preset", default=None, metavar="FILE",
              help="A scheduler preset (as for predict), e.g. ljsf-bf; --set wins over it.")
@_settings_option
@click.option("-o", "--output", default=None, help="Also write the predicted LML here.")
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print warnings and counts.")
@guarded
@_needs_stdout
def replay(trace_path: str, nodes: int | None, cores: int, exact: bool, preset: str | None,
           overrides: tuple[str, ...], output: str | None, as_json: bool, quiet: bool) -> None:
    """Simulate a whole SWF trace from its first submit (real run times, future queue dates)
    and print the schedule's statistics: the one-command trace simulator.

    Processors are counted (system_state=AttributeState) unless --set says otherwise.
    """
    from .views import evaluation
    from .io import swf

    began = time.perf_counter()
    if output:
        out.check_target(output)
    settings = {"system_state": "AttributeState", **preset_settings(preset),
                **parse_overrides(overrides)}
    trace = swf.read(trace_path)
    conv = swf.Conversion(None, True, exact, True, nodes, cores, settings)
    # the predicted file is only written on request; otherwise skip the XML and the job text
    if output:
        objects, counts = swf.snapshot_objects(trace, conv)
        doc, jobs = lml.parse(lml.build(objects), trace_path), None
    else:
        from .engine.snapshot import trace_snapshot

        objects, jobs, counts = trace_snapshot(trace, conv)
        doc = lml.from_objects(objects)
    forecast = _forecast(doc, Report(quiet=quiet), None, jobs)
    if output:
        _write(doc, forecast, output)
    stats = evaluation.schedule_stats(evaluation.records_of_forecast(forecast), forecast.snapshot.machine.total_cores)
    unstarted = sum(1 for j in forecast.jobs if j.start is None and not j.running)
    if as_json:
        click.echo(json_text("replay", {"trace": trace_path, **counts, "not_started": unstarted, **stats,
                                        "seconds": round(time.perf_counter() - began, 3)}))
        return
    if not quiet:
        click.echo(_conversion_summary(counts), err=True)
    cfg = forecast.config
    title = (f"{Path(trace_path).name}: {cfg.algorithm} (maxtopdogs={cfg.settings['maxtopdogs']}), "
             f"{cfg.state}, {forecast.snapshot.machine.total_cores} cores")
    click.echo(evaluation.table([(title, stats)]))
    if unstarted:
        click.echo(f"  {'jobs without a start':<34} {unstarted}")


@main.command()
@click.argument("predicted_path", metavar="PREDICTED")
@click.option("--actual", "actual_path", required=True, metavar="ACTUAL",
              help="What really happened: an SWF trace, or an LML file with real start dates.")
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@click.option("--per-job", "per_job", is_flag=True,
              help="Also each job: predicted and actual start, error (and the batch system's estimate).")
@guarded
@_needs_stdout
def evaluate(predicted_path: str, actual_path: str, as_json: bool, per_job: bool) -> None:
    """Compare predicted starts with actual ones: error statistics and schedule measures."""
    from .views import evaluation
    from .io import swf
    from .io.dates import format_date
    from .views.show import ISO

    doc = lml.read(predicted_path)
    predicted = evaluation.records_of_document(doc, predicted=True)
    if actual_path.endswith((".swf", ".swf.gz")):
        actual = evaluation.records_of_trace(swf.read(actual_path))
    else:
        actual = evaluation.records_of_document(lml.read(actual_path), predicted=False)
    if not predicted:
        raise InputError(predicted_path, "jufo_starttime", None, "no job has a predicted start: run jufo predict first")
    capacity = sum(count_of(o, "ncores", 0, 0, MAX_CORES_PER_NODE) for o in doc.of_type("node"))
    errors = evaluation.prediction_errors(predicted, actual)
    if not errors["count"]:
        raise InputError(actual_path, None, None, f"no job predicted in {predicted_path} has a real start here "
                         "(jobs are matched by their batch id, step; a later snapshot gives the starts of the jobs "
                         "it shows running or finished)")
    mismatch = evaluation.submit_mismatch(predicted, actual)
    if mismatch > 0.5:
        raise InputError(actual_path, "queuedate", None, f"{mismatch:.0%} of the {errors['count']:,} jobs matched by id "
                         "were submitted at other times than in the prediction: another trace or system?")
    if mismatch:
        click.echo(f"jufo: warning: {mismatch:.0%} of the matched jobs were submitted at other times than in the "
                   "prediction", err=True)
    schedule = evaluation.schedule_stats(list(predicted.values()), capacity)
    estimates = evaluation.records_of_estimates(doc)
    compared = {}
    if any(key in actual for key in estimates):  # the batch system's own forecast, on the same jobs
        same = {key: predicted[key] for key in estimates if key in predicted}
        compared = {"batch_estimate": evaluation.prediction_errors(estimates, actual),
                    "jufo_same_jobs": evaluation.prediction_errors(same, actual)}
    rows = None
    if per_job:  # dates as ISO text, for the table and the JSON alike
        rows = [{k: format_date(v, ISO) if k in ("predicted_start", "actual_start", "batch_estimate") else v
                 for k, v in row.items()} for row in evaluation.per_job(predicted, actual, estimates)]
    if as_json:
        if rows is not None:
            compared["jobs"] = rows
        click.echo(json_text("evaluate", {"errors": errors, "schedule": schedule, **compared}))
        return
    sections = [("prediction error (actual - predicted start)", errors)]
    if compared:
        sections += [("the batch system's own estimate (pending starttime), actual - estimate",
                      compared["batch_estimate"]), ("jufo on the same jobs", compared["jufo_same_jobs"])]
    click.echo(evaluation.table(sections + [("predicted schedule", schedule)]))
    if rows is not None:
        click.echo(_per_job_table(rows))


def _per_job_table(rows: list[dict]) -> str:
    """``evaluate --per-job``'s table: one line per job, ISO dates, errors in seconds."""
    estimate = any("batch_estimate" in row for row in rows)
    head = ["JOBID", "PREDICTED_START", "ACTUAL_START", "ERROR_S"] + (["BATCH_EST", "BATCH_ERROR_S"] if estimate else [])
    table = [head]
    for row in rows:
        cells = [row["job"], row["predicted_start"], row["actual_start"], str(row["error"])]
        if estimate:
            cells += [row.get("batch_estimate", "N/A"), str(row.get("batch_error", "N/A"))]
        table.append(cells)
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    return "\n" + "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table)


def _comma_list(value: str | None) -> set[str] | None:
    return None if value is None else {part.strip() for part in value.split(",") if part.strip()}


@main.command()
@click.argument("predicted_paths", metavar="PREDICTED...", nargs=-1, required=True)
@click.option("-j", "--jobs", default=None, metavar="LIST", help="Only these jobs (comma list of job ids).")
@click.option("-u", "--user", default=None, metavar="LIST", help="Only these users' jobs (comma list).")
@click.option("-p", "--partition", "--queue", "partition", default=None, metavar="LIST",
              help="Only these partitions (queues; comma list).")
@click.option("--format", "fmt", default=None, metavar="FORMAT",
              help="Columns in squeue's style, e.g. '%i %P %u %S %e %R' (also %b: the batch system's "
                   "estimate, %r: the range, %w: the wait).")
@click.option("-o", "--output", default="-", show_default=True, metavar="FILE",
              help="Write the table (or JSON) here instead of standard output. (-o with a format, "
                   "squeue's letter, still works this release, with a warning: use --format.)")
@click.option("--json", "as_json", is_flag=True, help="Print the rows and the summary as JSON.")
@guarded
def show(predicted_paths: tuple[str, ...], jobs: str | None, user: str | None, partition: str | None,
         fmt: str | None, output: str, as_json: bool) -> None:
    """Waiting jobs and their predicted starts, like squeue --start (dates ISO 8601)."""
    if "%" in output and fmt is None:  # the old meaning of -o (squeue's): a column format
        click.echo("jufo: warning: show -o FORMAT is deprecated: -o names the output file, as in every jufo "
                   "command; use --format FORMAT", err=True)
        fmt, output = output, "-"
    if output == "-":
        _shown(predicted_paths, jobs, user, partition, fmt, as_json, None)
    else:
        if any(_same_file(path, output) for path in predicted_paths if path != "-"):
            raise click.BadParameter("the output would overwrite an input file", param_hint="-o")
        out.check_target(output)
        _shown(predicted_paths, jobs, user, partition, fmt, as_json, output)


@_needs_stdout
def _to_stdout(text: str) -> None:
    click.echo(text)


def _shown(predicted_paths, jobs, user, partition, fmt, as_json, output: str | None) -> None:
    """``show``'s work: the table or JSON, to standard output or (all or nothing) to ``output``."""
    from .views import show as views

    paths = _check_inputs(predicted_paths)
    predicted_path = " + ".join(paths)
    doc = lml.read_all(paths)
    selection = views.Selection(_comma_list(jobs), _comma_list(user), _comma_list(partition))
    if fmt is not None:
        try:
            views.parse_format(fmt)
        except ValueError as err:
            raise click.BadParameter(str(err), param_hint="--format") from None
    try:
        text = json_text("show", views.show_json(doc, selection)) if as_json else views.show_table(doc, selection, fmt)
    except ValueError as err:
        raise InputError(predicted_path, "jufo_starttime", None, f"{err}; run jufo predict first") from None
    if output is None:
        _to_stdout(text)
    else:
        out.write(output, (text + "\n").encode())


@main.command()
@click.argument("predicted_path", metavar="PREDICTED")
@click.option("-o", "--output", required=True, help="chart.svg, chart.html or chart.png ('-': SVG to stdout).")
@click.option("--title", default=None, help="Chart title (default: the file name).")
@click.option("--by", type=click.Choice(["auto", "nodes", "jobs"]), default="auto", show_default=True,
              help="Rows: nodes, or one per job (auto: nodes while a node row is at least 3 px high).")
@click.option("--tz", default="local", show_default=True,
              help="Time zone of the snapshot's clock, named on the time axis: local, UTC or e.g. Europe/Berlin.")
@guarded
def gantt(predicted_path: str, output: str, title: str | None, by: str, tz: str) -> None:
    """Draw a predicted file: time across; nodes, or one row per job, down."""
    from .views import gantt as chart

    out.check_target(output)
    doc = lml.read(predicted_path)
    try:
        data = chart.render(doc, output, title or Path(predicted_path).name, by, tz)
    except ValueError as err:
        key = "system_time" if "system_time" in str(err) else "jufo_starttime"
        raise InputError(predicted_path, key, None, f"{err}; run jufo predict first") from None
    out.write(output, data)


@main.group()
def history() -> None:
    """The history jufo learns from: import accounting, show what it has learned."""


def _history_option(f):
    return click.option("--history", "history_path", required=True, envvar="JUFO_HISTORY", metavar="FILE",
                        help="The history file (also $JUFO_HISTORY).")(f)


def _machine_option(f):
    return click.option("--machine", "machine_path", default=None, metavar="SNAPSHOT",
                        help="The machine's nodes and partitions from a raw LML snapshot of it (jufo slurm snapshot "
                             "-o FILE, or LLview's), instead of --nodes and --cores: each job runs in its own "
                             "partition.")(f)


def _warn_missing_partitions(run) -> None:
    """Say which partitions of the accounting ``--machine`` lacks (exit 2 when it lacks all)."""
    from .learn import backtest as bt

    missing = bt.missing_partitions(run)
    if missing:
        listed = ", ".join(f"{q} ({n:,} jobs)" for q, n in missing.items())
        click.echo(f"jufo: warning: the --machine snapshot has no partition {listed}: those jobs are left out",
                   err=True)


def _layout(machine_path: str | None):
    """The ``--machine`` layout (None without one); giving ``--nodes`` or ``--cores`` as well is
    a usage error, since the snapshot says both."""
    from .learn import backtest as bt

    if machine_path is None:
        return None
    ctx = click.get_current_context()
    given = [f"--{p}" for p in ("nodes", "cores")
             if ctx.get_parameter_source(p) is not click.core.ParameterSource.DEFAULT]
    if given:
        raise click.UsageError(f"--machine gives the nodes; drop {' and '.join(given)}")
    return bt.machine_layout(machine_path)


@history.command("import")
@click.argument("source", metavar="SOURCE")
@_history_option
@click.option("--until", "until", default=None, metavar="T",
              help="Keep only what the accounting showed at T: finished jobs and starts of running ones. "
                   "SWF: seconds after the trace's start (as swf2lml --at); sacct: a date.")
@click.option("--format", "kind", type=click.Choice(["auto", "swf", "sacct"]), default="auto", show_default=True,
              help="SOURCE's format; auto: .swf/.swf.gz is SWF, anything else sacct --parsable2 output.")
@click.option("--cores", type=click.IntRange(min=1), default=1, show_default=True,
              help="Cores per node (SWF: as given to swf2lml; with --retro: the machine's).")
@click.option("--retro", "retro_days", type=click.IntRange(min=1, max=90), default=None, metavar="DAYS",
              help="Also forecast, every hour of the last DAYS days, what jufo would have said then (knowing "
                   "only what the accounting showed), and keep those forecasts: ranges from the first run.")
@click.option("--nodes", type=click.IntRange(min=1), default=None,
              help="With --retro: the machine's nodes (default: SWF's MaxProcs / --cores; sacct needs it or --machine).")
@_machine_option
@click.option("--config", "preset", default=None, metavar="FILE",
              help="With --retro: the scheduler model (jufo slurm config writes one).")
@click.option("-P", "--processes", "workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="With --retro: local processes.")
@guarded
def history_import(source: str, history_path: str, until: str | None, kind: str, cores: int,
                   retro_days: int | None, nodes: int | None, machine_path: str | None, preset: str | None,
                   workers: int) -> None:
    """Load accounting into the history: an SWF trace, or the output of Slurm's

    \b
      sacct --parsable2 --allusers \\
        --format=JobID,User,Group,Account,Partition,QOS,NNodes,NCPUS,Timelimit,Submit,Start,End,State
    """
    from .io import accounting
    from .io import swf
    from .io.dates import parse_date
    from .learn.history import History

    if kind == "auto":
        kind = "swf" if source.endswith((".swf", ".swf.gz")) else "sacct"
    skipped = ""
    capacity = None
    if kind == "swf":
        trace = swf.read(source)
        records = accounting.from_swf(trace, cores)
        capacity = trace.max_procs
        limit = None
        if until is not None:
            try:
                limit = trace.epoch + int(until)
            except ValueError:
                raise InputError(source, "--until", until, "SWF: whole seconds after the trace's start") from None
    else:
        records, counts = accounting.read_sacct(accounting.text_lines(source), source)
        skipped = f"; skipped {counts['steps']:,} job steps and {counts['pending_arrays']:,} pending array lines"
        limit = None
        if until is not None:
            try:
                limit = parse_date(until)[0]
            except ValueError as err:
                raise InputError(source, "--until", until, str(err)) from None
    if limit is not None:
        records = list(accounting.until(records, limit))
    _refuse_future(records, source, time.time())
    layout = _layout(machine_path)
    retro = _retro(source, kind, records, limit, retro_days, nodes, cores, layout, preset, workers) if retro_days else []
    with History.open(history_path) as store, store.transaction():  # the jobs and their forecasts, or nothing
        store.import_records(records, kind)
        if capacity and not store.meta("capacity"):
            store.set_meta("capacity", str(capacity))
        kept = sum(store.record_forecasts(made, rows) for made, rows in retro)
    finished = sum(r.start is not None and r.end is not None for r in records)
    running = sum(r.start is not None and r.end is None for r in records)
    never = sum(r.never_ran for r in records)
    click.echo(f"jufo: imported {len(records):,} jobs from {source} ({finished:,} finished, {running:,} running, "
               f"{len(records) - finished - running - never:,} queued"
               f"{f', {never:,} cancelled before they started' if never else ''}){skipped}", err=True)
    if retro_days:
        click.echo(f"jufo: kept {kept:,} retro-forecasts of {len(retro):,} hourly snapshots (the last "
                   f"{retro_days} days)", err=True)


FUTURE_GRACE = 86400  # seconds a record may lie after the present: clocks that disagree


def _refuse_future(records: list, source: str, now: float) -> None:
    """InputError (exit 2, nothing imported) for a record dated after the present: accounting
    cannot know it, and the history would take it for its newest time, refusing every later
    snapshot as too early (a clock set wrong, or a damaged export).

    >>> from jufo.io.accounting import JobRecord
    >>> _refuse_future([JobRecord("7", submit=0, start=10, end=4_102_444_800)], "s.txt", 1.8e9)
    Traceback (most recent call last):
    jufo.io.errors.InputError: s.txt, job 7: end='2100-01-01T00:00:00Z': after the present (2027-01-15T08:00:00Z): accounting cannot know it; check the clock of the machine that wrote it
    """
    from .io.dates import format_date

    for rec in records:
        for key in ("submit", "start", "end"):
            value = getattr(rec, key)
            if value is not None and value > now + FUTURE_GRACE:
                raise InputError(f"{source}, job {rec.id}", key, format_date(value, "%Y-%m-%dT%H:%M:%SZ"),
                                 f"after the present ({format_date(int(now), '%Y-%m-%dT%H:%M:%SZ')}): accounting "
                                 "cannot know it; check the clock of the machine that wrote it")


def _retro(source: str, kind: str, records: list, limit: int | None, days: int, nodes: int | None, cores: int,
           layout, preset: str | None, workers: int) -> list[tuple[int, list[tuple]]]:
    """``history import --retro``: the backtest's forecasts of the last ``days`` days before the
    newest accounted time (or ``--until``), every hour, as rows to keep."""
    from .learn import backtest as bt

    if source == "-":
        raise click.BadParameter("--retro reads SOURCE again: give a file, not standard input", param_hint="--retro")
    if kind == "sacct" and nodes is None and layout is None:
        raise click.BadParameter("--retro on sacct needs the machine: --machine SNAPSHOT, or --nodes (and --cores "
                                 "per node)", param_hint="--nodes")
    newest = max((t for r in records for t in (r.submit, r.start, r.end) if t is not None), default=None)
    if newest is None:
        return []
    run = bt.Settings(source, nodes, cores, tuple(sorted(preset_settings(preset).items())), layout=layout)
    _warn_missing_partitions(run)
    epoch = bt._load(run)[0].epoch
    stop = (limit if limit is not None else newest) - epoch
    return bt.retro_forecasts(run, max(0, stop - days * 86400), stop, min(workers, os.cpu_count() or 1))


@history.command("show")
@_history_option
@click.option("--coverage", type=COVERAGE, default=DEFAULT_COVERAGE,
              show_default=True, help="The range share to show the calibration for.")
@click.option("--days", type=click.IntRange(min=1), default=None, metavar="N",
              help="Score only the forecasts made in the last N days the history knows (after a change of "
                   "configuration, say); default: every kept one.")
@click.option("--json", "as_json", is_flag=True, help="Print it as JSON.")
@guarded
@_needs_stdout
def history_show(history_path: str, coverage: float, days: int | None, as_json: bool) -> None:
    """What the history has learned: run-time accuracy and bias per user/queue, start windows,
    user caps, how late real starts come against the simulation, range coverage so far, and
    how the forecasts fared against the real starts, next to the batch system's own estimate."""
    from .learn import outlook
    from .learn.history import History

    with History.read_only(history_path) as store:
        info = outlook.taught(store, coverage, days=days)
    if as_json:
        click.echo(json_text("history show", info))
    else:
        click.echo(outlook.taught_text(info))


_DASK_ADDRESS = re.compile(r"(?:(tcp|tls|ws|wss)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9])?)"
                           r":([0-9]{1,5})")


def _dask_address(value: str | None) -> str | None:
    """A Dask scheduler's address as ``[tcp|tls|ws|wss://]HOST:PORT``; UsageError (exit 2)
    naming the flag otherwise (``inproc://`` and ``file://`` would run nothing anywhere).

    >>> _dask_address("tcp://login1:8786"), _dask_address("10.0.0.5:8786"), _dask_address("tls://[::1]:8786")
    ('tcp://login1:8786', '10.0.0.5:8786', 'tls://[::1]:8786')
    """
    if value is None:
        return None
    m = _DASK_ADDRESS.fullmatch(value.strip())
    if not m or not 0 < int(m.group(3)) < 65536:
        raise click.BadParameter(f"{value!r} is not a Dask scheduler address: give tcp://HOST:PORT "
                                 "(as the scheduler prints it)", param_hint="--dask")
    return value.strip()


@main.command()
@click.argument("trace_path", metavar="TRACE")
@click.option("--every", type=click.IntRange(min=60), default=86400, show_default=True, metavar="SECONDS",
              help="Time between snapshots.")
@click.option("--from", "start", type=click.IntRange(min=0), default=None, metavar="SECONDS",
              help="First snapshot, seconds after the trace's start (default: first submit + --every).")
@click.option("--to", "stop", type=click.IntRange(min=0), default=None, metavar="SECONDS",
              help="Last snapshot at or before this (default: the last submit).")
@click.option("--coverage", type=COVERAGE, default=DEFAULT_COVERAGE,
              show_default=True, help="The share of real starts the ranges are to hold.")
@click.option("--nodes", type=click.IntRange(min=1), default=None, help="Nodes (default: MaxProcs / cores).")
@click.option("--cores", type=click.IntRange(min=1), default=1, show_default=True, help="Cores per node.")
@_machine_option
@_settings_option
@click.option("--config", "preset", default=None, metavar="FILE", help="A scheduler preset (as for predict).")
@click.option("-P", "--processes", "workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Local processes for the snapshots (at most the machine's cores are used).")
@click.option("-j", "--jobs", "old_workers", type=click.IntRange(min=1), default=None, hidden=True,
              help="Deprecated: --processes (-j names job ids, as in show and squeue).")
@click.option("--dask", "dask_address", default=None, metavar="ADDRESS", callback=lambda c, p, v: _dask_address(v),
              help="Run the snapshots on the Dask scheduler at tcp://HOST:PORT (needs .venv/bin/pip install -e '.[dask]' in jufo's folder).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help=f"Give up after SECONDS (workers stopped, nothing printed): exit {EXIT_TIMEOUT}.")
@click.option("--at-submit", is_flag=True, help="A snapshot at each job's submit time (in --from/--to) instead of "
              "every --every seconds, scoring only that job: the what-if answer ('if I submit this now') "
              "against its real start.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@guarded
@_needs_stdout
def backtest(trace_path: str, every: int, start: int | None, stop: int | None, coverage: float, nodes: int | None,
             cores: int, machine_path: str | None, overrides: tuple[str, ...], preset: str | None, workers: int,
             old_workers: int | None,
             dask_address: str | None, timeout: float | None, at_submit: bool, as_json: bool) -> None:
    """Forecast TRACE's waiting queue every --every seconds, with a history that knows only
    what the accounting showed then, and compare with the real starts: the walltime-only
    forecast, "starts now" and the history forecast with its range."""
    from dataclasses import asdict

    from .learn import backtest as bt

    signals.time_limit(timeout)
    if old_workers is not None:
        click.echo("jufo: warning: backtest -j/--jobs is deprecated: use -P/--processes (-j names job ids, as in "
                   "show and squeue)", err=True)
        workers = old_workers
    if dask_address is not None:
        try:
            import dask.distributed  # noqa: F401
        except ImportError:
            raise click.UsageError("--dask needs the optional Dask extra: .venv/bin/pip install -e '.[dask]' in jufo's folder") from None
    if start is not None and stop is not None and start >= stop:
        raise click.BadParameter(f"{start} is not before --to {stop}", param_hint="--from")
    settings = {**preset_settings(preset), **parse_overrides(overrides)}
    workers = min(workers, os.cpu_count() or 1)  # more processes than cores only cost memory
    run = bt.Settings(trace_path, nodes, cores, tuple(sorted(settings.items())), layout=_layout(machine_path))
    _warn_missing_partitions(run)
    bar = progress_bar("backtest, {done:,} of {total:,} snapshots simulated")
    began = time.perf_counter()
    summary, _ = bt.backtest(run, every, start, stop, coverage, workers, dask_address, bar, at_submit)
    if bar:
        bar.done()
    if as_json:
        click.echo(json_text("backtest", {"trace": trace_path, "every": every, "at_submit": at_submit, "coverage": coverage,
                                          **asdict(summary), "seconds": round(time.perf_counter() - began, 3)}))
        return
    when = "a snapshot at each submit, its job scored" if at_submit else f"a snapshot every {every:,} s"
    click.echo(bt.table(summary, f"{Path(trace_path).name}: {when}, {coverage:.0%} ranges"))


def _for_system(values: tuple[str, ...], systems: list[str], option: str) -> dict[str, str]:
    """``FILE`` (every system) or ``NAME=FILE`` (one) per value, as a map from system name
    (``""``: every system) to the value; a NAME that is no system's is exit 2."""
    out: dict[str, str] = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if sep and name in systems:
            out[name] = rest
        elif sep and not os.path.exists(value) and "/" not in name:
            raise click.BadParameter(f"{name!r} is no system given with --system ({', '.join(systems)})",
                                     param_hint=option)
        else:
            out[""] = value
    return out


@main.command()
@click.argument("input_paths", nargs=-1, metavar="[SNAPSHOT...]")
@click.option("-N", "--nodes", type=click.IntRange(min=1), default=None, help="Whole nodes (as sbatch -N --exclusive).")
@click.option("-n", "--ntasks", type=click.IntRange(min=1), default=None, help="Cores (one per task, as sbatch -n).")
@click.option("-G", "--gpus-per-node", "gpus", default="0", metavar="[MODEL:]G",
              help="GPUs on each of its nodes (as sbatch --gpus-per-node=G or --gres=gpu:G; a100:1 asks "
                   "GPUs of that model, as --gres=gpu:a100:1).")
@click.option("--mem", "memory", default=None, metavar="MB",
              help="Memory on each of its nodes (as sbatch --mem: MB, or with a K/M/G/T unit); default: the "
                   "partition's, where Slurm counts memory.")
@click.option("--mem-per-cpu", "memory_per_cpu", default=None, metavar="MB", help="Memory per core (as sbatch).")
@click.option("-t", "--time", "time_text", required=True, metavar="LIMIT",
              help="The time limit: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (sbatch's forms).")
@click.option("-p", "--partition", default=None, metavar="P,...", help="Partitions to ask (default: every one).")
@click.option("--user", default=lambda: os.environ.get("USER", "whatif"), show_default="$USER",
              help="Who submits (user caps and priority formulas may depend on it).")
@click.option("--account", default="", help="The account, for formulas and reservations that name it.")
@click.option("--qos", default="", help="The QOS, for formulas that name it.")
@click.option("--system", "systems", multiple=True, metavar="NAME=FILE[,FILE...]",
              help="Another system's snapshot (or LLview 2 file set), answered side by side; repeatable.")
@click.option("--config", "configs", multiple=True, metavar="[NAME=]FILE",
              help="A preset for every system, or NAME=FILE for one (jufo slurm config writes one).")
@_settings_option
@click.option("--history", "histories", multiple=True, metavar="[NAME=]FILE",
              help="A history (read only): the start becomes the learned forecast with its range.")
@click.option("--coverage", type=COVERAGE, default=DEFAULT_COVERAGE,
              show_default=True, help="With --history: the share of real starts the range is to hold.")
@click.option("--by", type=click.Choice(["start", "end"]), default="start", show_default=True,
              help="Sort by start, or by end (the completion-time criterion of meta-scheduling).")
@click.option("--test-only", "with_test_only", is_flag=True,
              help="Also what sbatch --test-only would answer: Slurm's quick estimate, from the running jobs and "
                   "the work queued ahead, planning no other job (column TEST_ONLY, JSON start_test_only).")
@click.option("--json", "as_json", is_flag=True, help="Print the answers as JSON.")
@guarded
@_needs_stdout
def whatif(input_paths: tuple[str, ...], nodes: int | None, ntasks: int | None, gpus: str, memory: str | None,
           memory_per_cpu: str | None, time_text: str,
           partition: str | None, user: str, account: str, qos: str, systems: tuple[str, ...],
           configs: tuple[str, ...], overrides: tuple[str, ...], histories: tuple[str, ...], coverage: float,
           by: str, with_test_only: bool, as_json: bool) -> None:
    """When would a job start if submitted now? Inserts it at each snapshot's system time, in
    every partition it could go to (or those of -p), and prints start, end, the walltime-only
    start, the range (with --history) and why it waits."""
    from . import whatif as wi
    from .engine.snapshot import prepare
    from .io.dates import format_date
    from .views.show import ISO

    request = wi.parse_request(nodes, ntasks, time_text, user, account, qos, gpus, memory, memory_per_cpu)
    sets: list[tuple[str | None, list[str]]] = [(None, list(input_paths))] if input_paths else []
    for spec in systems:
        name, sep, files = spec.partition("=")
        if not sep or not name or not files:
            raise click.BadParameter(f"{spec!r}: expected NAME=FILE[,FILE...]", param_hint="--system")
        sets.append((name, files.split(",")))
    if not sets:
        raise click.BadParameter("give a SNAPSHOT, or --system NAME=FILES", param_hint="SNAPSHOT")
    named = [name for name, _ in sets if name]
    config_of, history_of = _for_system(configs, named, "--config"), _for_system(histories, named, "--history")
    wanted = _comma_list(partition)
    answers = []
    for name, files in sets:
        paths = _check_inputs(tuple(files))
        doc = lml.read_all(paths)
        system = doc.of_type("system")
        label = name or ((system[0].data.get("hostname") or system[0].name or system[0].id) if system else "system")
        preset = config_of.get(name or "", config_of.get(""))
        settings = {**preset_settings(preset), **parse_overrides(overrides)}
        report = Report(quiet=True)
        prepared = prepare(doc, report, settings)
        assert prepared is not None
        snap, config = prepared
        parts = wi.partitions_of(snap)
        if wanted:
            unknown = sorted(wanted - set(parts))
            if unknown and len(sets) == 1:
                raise click.BadParameter(f"no partition {unknown[0]!r} on {label} (it has {', '.join(parts)})",
                                         param_hint="-p/--partition")
            parts = [p for p in parts if p in wanted]
        queue_data = {(o.name or o.id): o.data for o in doc.of_type("queue")}
        learned = None
        path = history_of.get(name or "", history_of.get(""))
        if path:
            learned = _whatif_learned(path, config, coverage)
        answers += wi.answer(label, snap, config, request, parts, queue_data, report, learned, with_test_only)
    answers = wi.sort_answers(answers, by)

    def iso(t: int | None) -> str | None:
        return format_date(t, ISO) if t is not None else None

    if as_json:
        click.echo(json_text("whatif", {
            "request": {"wall": request.wall, "nodes": request.nodes, "cores": request.cores,
                        "gpus_per_node": request.gpus, "gpu_model": request.gpu_type, "memory": request.memory,
                        "memory_per_cpu": request.memory_per_cpu, "user": request.user},
            "answers": [{"system": a.system, "partition": a.partition, "start": iso(a.start), "end": iso(a.end),
                         "start_wall": iso(a.start_wall), "start_lo": iso(a.start_lo), "start_hi": iso(a.start_hi),
                         "coverage": a.coverage, "reason": a.reason,
                         **({"start_test_only": iso(a.test_only)} if with_test_only else {})} for a in answers]}))
        return
    rows = [("SYSTEM", "PARTITION", "START", "END", "START_WALL", *(("TEST_ONLY",) if with_test_only else ()),
             "RANGE", "WHY")]
    for a in answers:
        span = f"{iso(a.start_lo)}..{iso(a.start_hi)} ({a.coverage:.0%})" if a.start_lo is not None else ""
        quick = ((iso(a.test_only) or "N/A"),) if with_test_only else ()
        rows.append((a.system, a.partition, iso(a.start) or "N/A", iso(a.end) or "N/A", iso(a.start_wall) or "N/A",
                     *quick, span, a.reason))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])


def _whatif_learned(path: str, config, coverage: float):
    """The history's forecast of the candidate in a trial snapshot: (best, lo, hi, coverage),
    or the walltime start alone when the history has no range for it yet. Reads only."""
    from .learn import outlook
    from .learn.history import History
    from .whatif import CANDIDATE

    history = History.read_only(path)

    def learned(trial):
        look = outlook.outlook(trial, config, Report(quiet=True), history, coverage)
        found = look.ranges.get(CANDIDATE)
        if found is None:
            job = next(j for j in look.learned.jobs if j.id == CANDIDATE)
            return None if job.start is None else (trial.epoch + job.start, None, None, None)
        return found[0], found[1], found[2], coverage

    return learned


@main.group()
def slurm() -> None:
    """Read a live Slurm directly: its scheduler model and its queue, without LLview."""


_FROM = click.option("--from", "directory", type=click.Path(file_okay=False), default=None,
                     help="Read saved scontrol outputs from this folder (job.txt, node.txt, partition.txt, "
                          "reservation.txt, config.txt; and sdiag.txt, qos.txt if there) instead of running scontrol.")
_SCONTROL_TIMEOUT = click.option("--scontrol-timeout", type=click.FloatRange(min=0.1, max=600), default=30,
                                 show_default=True, help="Seconds each scontrol call may take.")


@slurm.command("config")
@click.option("-o", "--output", default="-", show_default=True, help="The configuration file ('-': standard output).")
@_FROM
@_SCONTROL_TIMEOUT
@click.option("-q", "--quiet", is_flag=True, help="Do not list what is approximated.")
@guarded
def slurm_config(output: str, directory: str | None, scontrol_timeout: float, quiet: bool) -> None:
    """Write the scheduler model of this Slurm (scontrol show config, partitions) as a file that
    --config takes."""
    from .io import scontrol

    out.check_target(output)
    data, notes = scontrol.site_config(directory, scontrol_timeout)
    out.write(output, data)
    if not quiet:
        for note in notes:
            click.echo(f"jufo: note: {note}", err=True)


@slurm.command("snapshot")
@click.option("-o", "--output", default="-", show_default=True, help="The raw LML file ('-': standard output).")
@_FROM
@_SCONTROL_TIMEOUT
@guarded
def slurm_snapshot(output: str, directory: str | None, scontrol_timeout: float) -> None:
    """Write a raw LML snapshot of this Slurm's jobs, nodes, partitions and reservations, in the keys
    LLview 2's adapter uses, with the scheduler object jufo slurm config writes (and, from sdiag,
    when Slurm's backfill last planned: its walltime-only forecast is that plan)."""
    from .io import scontrol

    out.check_target(output)
    objects = scontrol.snapshot_objects(scontrol.capture(directory, scontrol_timeout))
    out.write(output, lml.build(objects))


if __name__ == "__main__":  # pragma: no cover
    main()
