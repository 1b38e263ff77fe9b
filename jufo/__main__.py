"""The command line's way in (``jufo`` and ``python -m jufo``): one line instead of a traceback
where the memory this process may use is too small even for jufo's own modules."""

import os

from . import own_module


def run() -> None:
    """Import the command line and run it; where its modules cannot be loaded (out of memory, a
    shared library that cannot be mapped in): one line saying so, exit 1."""
    try:
        from .cli import main
    except (MemoryError, SyntaxError) as err:  # (a SyntaxError: the parser out of memory compiling jufo itself)
        if isinstance(err, SyntaxError) and not own_module(err.filename):
            raise
        os.write(2, b"jufo: error: out of memory while starting (the memory this process may use is too small "
                    b"for jufo itself)\n")
        os._exit(1)
    except (ImportError, OSError) as err:  # a library that cannot be mapped in (also a memory limit), or missing
        os.write(2, f"jufo: error: cannot load its modules: {err}\n".encode(errors="replace"))
        os._exit(1)
    main()


if __name__ == "__main__":
    run()
