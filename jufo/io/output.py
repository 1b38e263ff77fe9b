"""Where results go: checked before any work, written whole or not at all.

* A regular file (or a new one) is written to a temporary file beside it and renamed into
  place, so readers never see half a file; the temporary file is removed on any failure,
  SIGTERM and SIGINT included, and stale ones of our own naming pattern (left by SIGKILL or
  a power cut) are swept before the next write.
* A device or FIFO (``/dev/null``, a named pipe) is written through: renaming over it would
  replace it with a regular file.
* Standard output (``-``) is written with every byte accounted for: a short or failed write
  is an error (exit 1), not a quietly truncated file.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError

STALE_AFTER = 3600  # seconds: a temporary file this old is no run's any more


class WriteFailed(Exception):
    """The output could not be written whole."""


def check_target(path: str, option: str = "-o") -> None:
    """Refuse, before any work, an output that cannot be written: a directory, a missing or
    read-only directory. InputError names the option and path (exit 2)."""
    if path == "-":
        return
    target = Path(path)
    try:
        st = _stat(target)
    except OSError as err:
        raise InputError(path, option, path, f"cannot use it: {err.strerror}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise InputError(path, option, path, "is a directory")
    if st is not None and not stat.S_ISREG(st.st_mode):
        if not os.access(path, os.W_OK):
            raise InputError(path, option, path, "not writable")
        return  # a device or FIFO: written through
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(path, option, path, f"no such directory: {parent}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(path, option, path, f"cannot create files in {parent}")


def write(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` (``-``: standard output) whole, or raise WriteFailed."""
    publish(stage(path, data))


@dataclass
class Staged:
    """Output written but not yet in place: a temporary file beside a regular target (renamed
    by ``publish``), or the bytes for standard output, a device or a FIFO (written then)."""

    path: str
    data: bytes | None = None  # not yet written anywhere
    tmp: str | None = None  # written whole and synced, to be renamed onto ``path``


def stage(path: str, data: bytes) -> Staged:
    """Do all of writing ``data`` to ``path`` that can fail, short of putting it in place:
    a run that must commit something else first (the history) publishes only after that."""
    if path == "-":
        return Staged(path, data)
    target = Path(path)
    try:
        st = _stat(target)
    except OSError as err:
        raise WriteFailed(f"{path}: {err.strerror}") from None
    if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        return Staged(path, data)  # a device or FIFO: written through at publish
    return Staged(path, tmp=_temporary(target, data))


def publish(staged: Staged) -> None:
    """Put staged output in place: rename it onto its target, or write it through."""
    if staged.tmp is not None:
        try:
            os.replace(staged.tmp, staged.path)
        except OSError as err:
            discard(staged)
            raise WriteFailed(f"{staged.path}: {err.strerror}") from None
        staged.tmp = None
    elif staged.data is not None:
        data, staged.data = staged.data, None
        if staged.path == "-":
            _write_fd(1, data, "standard output")
        else:
            _write_through(staged.path, data)


def discard(staged: Staged) -> None:
    """Drop staged output that is not to be published (the run failed after staging)."""
    if staged.tmp is not None:
        try:
            os.unlink(staged.tmp)
        except FileNotFoundError:
            pass
        staged.tmp = None
    staged.data = None


def _stat(target: Path) -> os.stat_result | None:
    """The target's status, None if it does not exist yet (other OSErrors propagate)."""
    try:
        return target.stat()
    except FileNotFoundError:
        return None


def _write_fd(fd: int, data: bytes, name: str) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view[:1 << 20])
        except OSError as err:
            if err.errno == errno.EPIPE:
                raise BrokenPipeError(err.errno, err.strerror) from None
            raise WriteFailed(f"{name}: {err.strerror}") from None
        if n <= 0:
            raise WriteFailed(f"{name}: short write ({len(data) - len(view)} of {len(data)} bytes)")
        view = view[n:]


def _write_through(path: str, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as err:
        raise WriteFailed(f"{path}: {err.strerror}") from None
    try:
        _write_fd(fd, data, path)
    finally:
        os.close(fd)


def _temporary(target: Path, data: bytes) -> str:
    """``data`` in a synced temporary file beside ``target``, with the mode ``target`` has (or
    would get); its name, for ``publish`` to rename."""
    directory = target.parent if str(target.parent) else Path(".")
    sweep(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as err:
        raise WriteFailed(f"{target}: {err.strerror}") from None
    try:
        with os.fdopen(fd, "wb", buffering=0) as fh:
            _write_fd(fh.fileno(), data, str(target))
            os.fsync(fh.fileno())
        try:
            mode = target.stat().st_mode & 0o777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return tmp


def sweep(target: Path, older_than: float = STALE_AFTER) -> int:
    """Remove temporary files of our naming pattern beside ``target`` older than
    ``older_than`` seconds (what a killed run left). Returns how many were removed."""
    directory = target.parent if str(target.parent) else Path(".")
    removed = 0
    limit = time.time() - older_than
    try:
        candidates = list(directory.glob(f".{target.name}.*.tmp"))
    except OSError:
        return 0
    for path in candidates:
        try:
            if path.is_file() and not path.is_symlink() and path.stat().st_mtime < limit:
                path.unlink()
                removed += 1
        except OSError:
            continue
    return removed
