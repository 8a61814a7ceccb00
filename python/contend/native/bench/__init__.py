"""Measure: run contend's native MPI benchmarks, read their results, fit LogGP parameters.

Modules: ``registry`` (the benchmarks), ``runner`` (launch one), ``results`` (JSON lines, pandas,
Parquet), ``sanity`` (physical checks), ``loggp`` (fit and machine file), ``tables`` and ``plot``.
Only the registry is imported here, so ``contend`` starts fast; the rest loads pandas and matplotlib.

>>> from contend.native.bench import BENCHMARKS
>>> "pingpong" in BENCHMARKS and "loggp" in BENCHMARKS
True
"""

from contend.native.bench.registry import BENCHMARKS, Benchmark, benchmark

__all__ = ["BENCHMARKS", "Benchmark", "benchmark"]
