"""Problems found in the input: fatal ones stop with exit status 2, the rest are warnings."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field


MAX_SHOWN = 80  # characters of a value a message quotes


def shown(value: object) -> str:
    """A value as a message quotes it: repr, cut to ``MAX_SHOWN`` characters with its length.

    >>> shown("abc"), shown("x" * 100_000)[-30:]
    ("'abc'", 'xxxxxx... (100,002 characters)')
    """
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else f"{text[:MAX_SHOWN]}... ({len(text):,} characters)"


def describe(obj: str, key: str | None = None, value: str | None = None) -> str:
    """The uniform 'object, key, value' prefix of every message (long values cut).

    >>> describe("job j1", "wall", "abc")
    "job j1: wall='abc'"
    """
    text = obj[:200]
    if key is not None:
        text += f": {key[:200]}"
        if value is not None:
            text += f"={shown(value)}"
    return text


class InputError(Exception):
    """Bad input that stops the run: one message naming the object, key and value (exit 2)."""

    def __init__(self, obj: str, key: str | None, value: str | None, reason: str) -> None:
        super().__init__(f"{describe(obj, key, value)}: {reason}")

    def __reduce__(self) -> tuple:
        """Pickled as its class and message, so that a backtest's worker process (or a Dask
        worker) hands it to the command whole: unpickling called ``__init__`` with the
        message alone, which broke the process pool into an internal error instead."""
        return _rebuilt, (type(self), str(self))


def _rebuilt(cls: type[InputError], message: str) -> InputError:
    """An InputError (or subclass) with ``message``, as ``InputError.__reduce__`` pickled it.

    >>> import pickle
    >>> str(pickle.loads(pickle.dumps(InputError("sched", "maxtopdogs", "x", "not a count"))))
    "sched: maxtopdogs='x': not a count"
    """
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    return err


@dataclass
class Report:
    """Collects warnings (defaults applied, keys ignored) and, in validate mode, errors.

    In predict mode (``collect=False``) the first error raises InputError at once, so
    nothing is simulated on bad input; ``jufo validate`` collects them all instead.
    """

    collect: bool = False
    quiet: bool = False
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def error(self, obj: str, key: str | None, value: str | None, reason: str) -> None:
        """Record a fatal problem; raises unless collecting."""
        err = InputError(obj, key, value, reason)
        if not self.collect:
            raise err
        self.errors.append(str(err))

    def warn(self, obj: str, key: str | None, value: str | None, reason: str, always: bool = False) -> None:
        """Record a warning and print it (one line, object first) unless quiet or collecting;
        ``always``: also when quiet (what silently changes the policy must be seen)."""
        text = f"{describe(obj, key, value)}: {reason}"
        self.warnings.append(text)
        if (always or not self.quiet) and not self.collect:
            print(f"jufo: warning: {text}", file=sys.stderr)
