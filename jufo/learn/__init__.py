"""The forecast that learns from what the machine did: the history file (``history``), run-time
models (``runtime``), learned habits such as user caps and start windows (``behaviour``),
calibrated ranges (``calibration``), the forecast with a history (``outlook``) and the
backtest that scores it on a trace (``backtest``).

May import: ``io`` and ``engine``; never ``views`` or the command line.
"""
