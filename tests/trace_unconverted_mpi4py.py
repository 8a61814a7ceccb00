"""Calls contend's converter has no algorithm for, traced: Alltoallw, a neighborhood allgather and a
nonblocking neighborhood alltoall on a ring, and a persistent Allreduce started twice. Each result is
checked, so the tracer's wrappers must pass the calls through intact.

    mpiexec -n 4 python tests/trace_unconverted_mpi4py.py
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI


def main() -> None:
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    ring = world.Create_cart([size], periods=[True])
    left, right = (rank - 1) % size, (rank + 1) % size

    got = np.zeros(2, np.int64)
    ring.Neighbor_allgather(np.array([rank], np.int64), got)
    assert sorted(got.tolist()) == sorted([left, right]), got

    out = np.full(2, -1, np.int64)
    ring.Ineighbor_alltoall(np.array([10 * rank, 10 * rank + 1], np.int64), out).Wait()
    assert out.tolist() == [10 * left + 1, 10 * right], out

    send = np.arange(size, dtype=np.int64) + 100 * rank
    into = np.zeros(size, np.int64)
    ones, offsets = [1] * size, [8 * i for i in range(size)]
    world.Alltoallw([send, (ones, offsets), [MPI.INT64_T] * size], [into, (ones, offsets), [MPI.INT64_T] * size])
    assert into.tolist() == [100 * j + rank for j in range(size)], into

    total, value = np.zeros(1, np.int64), np.array([rank + 1], np.int64)
    request = world.Allreduce_init(value, total)
    for _ in range(2):
        request.Start()
        request.Wait()
        assert int(total[0]) == size * (size + 1) // 2
    request.Free()


if __name__ == "__main__":
    main()
