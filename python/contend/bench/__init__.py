"""Measure: run contend's native MPI benchmarks, read their results, fit LogGP parameters.

>>> from contend.bench import BENCHMARKS
>>> "pingpong" in BENCHMARKS and "loggp" in BENCHMARKS
True
"""

from contend.bench.registry import BENCHMARKS, Benchmark, benchmark
from contend.bench.results import RunResult, parse_lines, read_run, write_run

__all__ = ["BENCHMARKS", "Benchmark", "RunResult", "benchmark", "parse_lines", "read_run", "write_run"]
