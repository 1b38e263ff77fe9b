"""``python -m jufo``: the command line, with one line instead of a traceback where the memory
this process may use is too small even for jufo's own modules."""

import os

try:
    from .cli import main
except MemoryError:
    os.write(2, b"jufo: error: out of memory while starting (the memory this process may use is too small "
                b"for jufo itself)\n")
    os._exit(1)

main()
