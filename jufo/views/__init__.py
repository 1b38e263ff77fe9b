"""What people read: the ``squeue``-like table and JSON records (``show``), the Gantt chart
(``gantt``, with its page script ``gantt.js``), the comparison of a forecast with what really
happened (``evaluation``) and the Prometheus textfile (``metrics``).

May import: ``io``, ``engine`` and ``learn``; never the command line.
"""
