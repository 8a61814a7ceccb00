"""mpi4py program for `contend goal convert --algorithms mpich-shm` (tests/test_goal_convert_ctrace.py):
four barriers on MPI_COMM_WORLD, with MPI initialized at the thread level the argument names
(`single` or `multiple`). MPICH runs the third and fourth through its shared-memory buffers, except
under MPI_THREAD_MULTIPLE.

    mpiexec -n 4 python trace_barriers_mpi4py.py single
"""

from __future__ import annotations

import sys

import mpi4py

mpi4py.rc.thread_level = sys.argv[1]

from mpi4py import MPI  # noqa: E402 (the thread level is set before MPI starts)

for _ in range(4):
    MPI.COMM_WORLD.Barrier()
