"""The engine: the scheduling objects (``job``, ``node``, ``queue``, ``reservation``), read from
a snapshot and built (``snapshot``), the resource managers (``state`` with ``node_state`` and
``attribute_state``; ``ranges`` and ``availability`` underneath), the event order
(``timeline``), the priority formula (``sorter``), the policies (``simulation``: FCFS, list
scheduling, backfilling), the factory that assembles them from the scheduler's keys
(``configuration``), and one prediction of a snapshot with the data it writes back
(``prediction``).

May import: ``io`` (to read objects and report problems); never ``learn``, ``views`` or the
command line. What the forecast that learns hands in comes through ``prediction.Behaviour``.
"""
