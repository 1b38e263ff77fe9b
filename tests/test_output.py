"""Where results go: devices and FIFOs written through, targets checked before any work,
no temporary file left behind (SIGTERM, stale ones swept), short writes are errors."""

import os
import resource
import signal
import stat
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, SAMPLES
from jufo.io import output
from jufo.signals import Terminated

SAMPLE = SAMPLES / "slurm-adapter.xml"


def jufo(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "jufo", *args], capture_output=True, **kwargs)


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    target = tmp_path / "x.xml"
    output.write(str(target), b"<a/>")
    assert target.read_bytes() == b"<a/>"
    assert os.listdir(tmp_path) == ["x.xml"]
    assert target.stat().st_mode & 0o444  # readable like a normally created file, not mkstemp's 0600


def test_a_fifo_is_written_through_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    run = jufo("predict", str(SAMPLE), "-o", str(fifo))
    reader.join(timeout=30)
    assert run.returncode == 0, run.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got and got[0].startswith(b"<?xml") and b"jufo_starttime" in got[0]


def test_dev_null_stays_a_device():
    run = jufo("predict", str(SAMPLE), "-o", os.devnull)
    assert run.returncode == 0, run.stderr
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


@pytest.mark.parametrize("where, message", [("missing/out.xml", "no such directory"), (".", "is a directory")])
def test_an_unusable_output_is_exit_2_before_any_work(tmp_path, where, message):
    run = jufo("predict", str(SAMPLE), "-o", str(tmp_path / where))
    assert run.returncode == 2
    assert message in run.stderr.decode() and len(run.stderr.splitlines()) == 1


def test_reading_stdin_from_the_output_file_is_refused(tmp_path):
    target = tmp_path / "in.xml"
    target.write_bytes(SAMPLE.read_bytes())
    with open(target, "rb") as fh:
        run = jufo("predict", "-", "-o", str(target), stdin=fh)
    assert run.returncode == 2 and target.read_bytes() == SAMPLE.read_bytes()


def test_a_termination_while_writing_removes_the_temporary_file(tmp_path, monkeypatch):
    def stop(fd, data, name):
        raise Terminated()

    monkeypatch.setattr(output, "_write_fd", stop)
    with pytest.raises(Terminated):
        output.write(str(tmp_path / "x.xml"), b"<a/>")
    assert os.listdir(tmp_path) == []


def test_sigterm_exits_143_without_output_or_temporary_files(tmp_path):
    big = tmp_path / "big.xml"
    subprocess.run([sys.executable, "-m", "benchmarks.bench", "large", "--write", str(big)], check=True, cwd=ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "jufo", "predict", str(big), "-o", str(tmp_path / "out.xml")],
                            stderr=subprocess.PIPE)
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert sorted(os.listdir(tmp_path)) == ["big.xml"]
    assert err.decode().strip() == "jufo: terminated; no output written"


def test_stale_temporary_files_of_ours_are_swept(tmp_path):
    stale, fresh, other = tmp_path / ".x.xml.abc123.tmp", tmp_path / ".x.xml.def456.tmp", tmp_path / ".y.tmp"
    for p in (stale, fresh, other):
        p.write_bytes(b"half")
    old = time.time() - 2 * output.STALE_AFTER
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    output.write(str(tmp_path / "x.xml"), b"<a/>")
    assert sorted(os.listdir(tmp_path)) == sorted([".x.xml.def456.tmp", ".y.tmp", "x.xml"])


def test_a_short_write_to_stdout_is_exit_1(tmp_path):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    with open(tmp_path / "small.xml", "wb") as fh:
        run = subprocess.run([sys.executable, "-m", "jufo", "predict", str(SAMPLE)], stdout=fh,
                             stderr=subprocess.PIPE, preexec_fn=limit)
    assert run.returncode == 1
    assert run.stderr.decode().startswith("jufo: error: cannot write standard output")
    assert len(run.stderr.splitlines()) == 1


def test_a_closed_reader_is_quiet():
    proc = subprocess.Popen([sys.executable, "-m", "jufo", "predict", str(SAMPLES / "slurm-adapter.xml")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert proc.returncode in (0, 1) and err == b""


def test_a_limit_too_small_for_jufos_own_modules_is_one_line_both_ways_in(tmp_path):
    """Under address-space limits where the interpreter starts but jufo's modules do not all
    load (a MemoryError, or a shared library that cannot be mapped in), ``jufo`` and ``python
    -m jufo`` each say so in one line, exit 1, never a traceback."""
    script = os.path.join(os.path.dirname(sys.executable), "jufo")
    if not os.path.exists(script):
        pytest.skip("no jufo console script beside this interpreter (not installed with pip)")
    said = 0
    for mb in range(16, 64, 2):
        def limit(mb=mb):
            resource.setrlimit(resource.RLIMIT_AS, (mb << 20, mb << 20))

        if subprocess.run([sys.executable, "-c", "pass"], capture_output=True, preexec_fn=limit).returncode:
            continue  # not even the interpreter starts
        for way in ([script], [sys.executable, "-m", "jufo"]):
            run = subprocess.run([*way, "predict", str(tmp_path / "none.xml")], capture_output=True,
                                 preexec_fn=limit, cwd=tmp_path, timeout=60)
            err = run.stderr.decode(errors="replace")
            if run.returncode == 2:  # it started, and found no input
                continue
            assert run.returncode == 1 and "Traceback" not in err and err.count("\n") == 1, (mb, way, err[-500:])
            assert err.startswith("jufo: "), (mb, way, err)
            said += 1
        if said and run.returncode == 2:
            break
    assert said, "no limit was too small for jufo's modules and large enough for the interpreter"


def test_out_of_memory_is_one_line_and_fast(tmp_path):
    """Under growing address-space limits: each run either succeeds or says "out of memory" in
    one line (exit 1) within seconds; limits too small for jufo's own imports are passed over."""
    snap = tmp_path / "juropa.xml"
    subprocess.run([sys.executable, "-m", "benchmarks.bench", "juropa", "--write", str(snap)], check=True, cwd=ROOT)
    oom = "jufo: error: out of memory (the input is too large for the memory this process may use)"
    starting = ("jufo: error: out of memory while starting (the memory this process may use is too small for "
                "jufo itself)")
    said = False
    for mb in range(30, 400, 10):
        def limit(mb=mb):
            resource.setrlimit(resource.RLIMIT_AS, (mb << 20, mb << 20))

        began = time.perf_counter()
        run = subprocess.run([sys.executable, "-c", "import jufo.cli; import sys; sys.exit(0)"],
                             capture_output=True, preexec_fn=limit)
        if run.returncode != 0:
            continue  # the interpreter and jufo's imports do not fit yet
        run = subprocess.run([sys.executable, "-m", "jufo", "predict", str(snap), "-o", str(tmp_path / "o.xml")],
                             capture_output=True, preexec_fn=limit, timeout=120)
        seconds = time.perf_counter() - began
        if run.returncode == 0:
            break
        if run.returncode == 1 and run.stderr.decode().strip() == starting:
            continue  # at the border, the imports fitted the probe above but not this run
        assert run.returncode == 1 and run.stderr.decode().strip() == oom, (mb, run.stderr[-500:])
        assert seconds < 30 and not (tmp_path / "o.xml").exists()
        said = True
    assert said, "no limit made it run out of memory"


@pytest.mark.parametrize("exhausted", [True, False])
def test_a_system_error_is_out_of_memory_only_where_memory_is_exhausted(tmp_path, exhausted):
    """CPython 3.11 reports a failed allocation of a new frame's stack as SystemError ("error
    return without exception set"; seen under a 40 MiB limit). Where no 8 MiB more can be
    had, that is the out-of-memory line; else an internal error as any other."""
    script = (
        "import sys\n"
        "from jufo import cli, forecast\n"
        f"cli._memory_exhausted = lambda: {exhausted}\n"
        "def fail(*args, **kwargs):\n"
        "    raise SystemError('error return without exception set')\n"
        "forecast.simulate = fail\n"
        "cli.main(['predict', sys.argv[1], '-o', sys.argv[2]])\n")
    target = tmp_path / "o.xml"
    run = subprocess.run([sys.executable, "-c", script, str(SAMPLE), str(target)], capture_output=True,
                         env={**os.environ, "JUFO_DEBUG": ""})
    said = run.stderr.decode().strip()
    assert run.returncode == 1 and not target.exists()
    if exhausted:
        assert said == "jufo: error: out of memory (the input is too large for the memory this process may use)"
    else:
        assert said == ("jufo: internal error: SystemError: error return without exception set "
                        "(set JUFO_DEBUG=1 for a traceback)")
