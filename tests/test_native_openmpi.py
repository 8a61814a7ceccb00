"""Any mpicc works: the same harness built with Debian's Open MPI (CONTEND_MPICC) runs and is sane."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from contend.native import mpi
from contend.native.bench import sanity
from contend.native.bench.runner import run_benchmark

OPEN_MPI_CC = Path("/usr/bin/mpicc.openmpi")

pytestmark = pytest.mark.skipif(not OPEN_MPI_CC.exists(),
                                reason="Debian's Open MPI is not installed (apt-get install openmpi-bin libopenmpi-dev)")


def test_open_mpi_build_runs_pingpong_and_incast(monkeypatch):
    monkeypatch.setenv("CONTEND_MPICC", str(OPEN_MPI_CC))
    library = mpi.find_mpi()
    assert library.flavor == "openmpi" and library.build_name.startswith("openmpi-")
    for name, ranks in (("pingpong", 2), ("incast", 3)):
        ours = []  # this test's own ranks, seen while they run (other jobs' benchmarks are not counted)

        def look(done: int, total: int) -> None:
            ours.append(mpi.running_benchmarks(os.getpid()))

        run = run_benchmark(name, ranks=ranks, sizes=[8, 65536], iters=20, warmup=2, timeout_s=120, progress=look)
        assert not sanity.problems(run), sanity.problems(run)
        assert "Open MPI" in run.meta["mpi_library"] and run.meta["mpi_flavor"] == "openmpi"
        assert len(ours[0]) == ranks  # the launcher's mark reaches the ranks, so the check below can see them
        assert mpi.running_benchmarks(os.getpid()) == []
