"""Reading and writing: raw LML (``lml``, its fast scanner ``lmlscan``), dates and checked
numbers (``dates``, ``values``), the error and warning types every room reports with
(``errors``), atomic output files (``output``), SWF traces (``swf``), ``sacct`` accounting
(``accounting``) and Slurm's own vocabulary (``slurm``).

May import: the standard library, lxml and the project's root (``jufo.__version__``); no
other room. (An SWF trace's jobs are built as ``engine.job.Job`` objects directly by
``engine.snapshot.trace_snapshot``, from ``swf.snapshot_entries``.)
"""
