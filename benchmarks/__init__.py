"""Benchmarks and studies: jufo's speed and policy figures on synthetic snapshots and the real
traces in ``../shared/traces``. Run from the project root (``python -m benchmarks.bench``);
not installed with jufo, which never refers to ``../shared``."""
