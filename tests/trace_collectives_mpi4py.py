"""mpi4py program for `contend goal convert` of a traced run (tests/test_goal_convert_ctrace.py): the
collectives the tracer records, as mpi4py calls them (their large-count `_c` forms on MPICH), on
MPI_COMM_WORLD and on a split communicator (even and odd world ranks, key -rank).

    mpiexec -n 4 python trace_collectives_mpi4py.py
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI


def main() -> None:
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    half = world.Split(rank % 2, -rank)
    data = np.zeros(64, dtype=np.float64)
    half.Bcast(data, root=1)
    out = np.empty_like(data)
    world.Allreduce(data, out)
    counts = np.arange(1, size + 1, dtype=np.int64) * 2
    displs = np.concatenate(([0], np.cumsum(counts)[:-1]))
    send = np.zeros(int(counts.sum()), dtype=np.float64)
    receive = np.zeros(int(counts[rank]) * size, dtype=np.float64)
    mine = int(counts[rank])  # every rank sends rank r (r + 1) * 2 doubles
    world.Alltoallv([send, (counts, displs), MPI.DOUBLE],
                    [receive, ([mine] * size, [mine * i for i in range(size)]), MPI.DOUBLE])
    half.Scan(data, out)
    world.Ibarrier().Wait()
    world.Iallreduce(data, out).Wait()
    half.Free()


if __name__ == "__main__":
    main()
