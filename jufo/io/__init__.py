"""Reading and writing: raw LML (``lml``, its fast scanner ``lmlscan``), dates and checked
numbers (``dates``, ``values``), the error and warning types every room reports with
(``errors``), atomic output files (``output``), SWF traces (``swf``), ``sacct`` accounting
(``accounting``) and Slurm's own vocabulary (``slurm``).

May import: the standard library, lxml and the project's root (``jufo.__version__``); no
other room, with one named exception: ``swf.snapshot_jobs`` builds ``engine.job.Job``
objects directly, so that a replay or backtest skips writing 28,000 jobs as text and reading
them back (a tenth of the time).
"""
