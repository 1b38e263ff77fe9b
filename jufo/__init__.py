"""jufo: forecast what an HPC batch scheduler will do, from an LLview raw LML snapshot."""

__version__ = "0.1.0"  # the package's version (pyproject.toml reads it from here)
