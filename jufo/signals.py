"""Stopping a run cleanly: SIGTERM and a time limit unwind the stack like Ctrl-C, so every
``finally`` runs (temporary files removed, history transactions rolled back) and no output
is written."""

from __future__ import annotations

import signal


class Terminated(BaseException):
    """SIGTERM arrived: unwind and exit 143."""


class TimedOut(BaseException):
    """The run passed its ``--timeout``: unwind and exit 124."""


def on_sigterm() -> None:
    """Make SIGTERM raise Terminated in the main thread."""

    def handler(signum, frame):  # noqa: ARG001 - the signal API's signature
        raise Terminated()

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (e.g. a test runner's worker): leave it
        pass


def time_limit(seconds: float | None) -> None:
    """Raise TimedOut in the main thread after ``seconds`` of wall-clock time; None cancels."""
    if not seconds:
        signal.setitimer(signal.ITIMER_REAL, 0)
        return

    def handler(signum, frame):  # noqa: ARG001
        raise TimedOut()

    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)


def remaining() -> float | None:
    """Seconds left before the time limit, None without one (a blocking call that cannot be
    interrupted, such as SQLite waiting for a lock, is bounded by it)."""
    left = signal.getitimer(signal.ITIMER_REAL)[0]
    return left if left > 0 else None
