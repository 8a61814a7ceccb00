"""mpi4py program for `contend goal convert` of a traced run (tests/test_goal_convert_ctrace.py): the
one-sided calls and nonblocking collectives the tracer added last, as mpi4py calls them (their `_c`
forms on MPICH where MPI has them).

1. Every collective with a nonblocking form the tracer records, blocking then nonblocking (completed by
   its Wait), on MPI_COMM_WORLD, v-forms with different sizes per member: the pairs are the world's
   first collectives, so the k-th pair is the world's collectives 2k and 2k + 1.
2. In a lock_all epoch on a window of int64 slots, each rank r on its right neighbour r + 1:
   Fetch_and_op (8 bytes), Compare_and_swap (8 bytes), Get_accumulate of 4 slots (32 bytes), flushed;
   Raccumulate of 2 slots and Rget_accumulate of 2 slots (16 bytes), completed by a Waitall.
3. A post/start/complete/wait epoch: each rank exposes its window to its left neighbour and puts 2
   slots (16 bytes) into its right one.

Values are checked (the sums of the atomics are exact); rank 0 prints one JSON line, the exit code is 1
if any was wrong.

    mpiexec -n 4 python trace_rma_mpi4py.py
"""

from __future__ import annotations

import json
import sys

import numpy as np
from mpi4py import MPI

# the pairs, in the order the program makes them
PAIRS = ("gather", "scatter", "alltoallv", "allgatherv", "reduce_scatter", "reduce_scatter_block", "scan",
         "exscan", "gatherv", "scatterv")


def collectives(world) -> None:
    rank, size = world.Get_rank(), world.Get_size()
    f8 = MPI.DOUBLE
    block = np.full(3, rank, np.float64)
    everyone = np.zeros(3 * size, np.float64)
    counts = [2 * (i + 1) for i in range(size)]  # member i's share: 2 (i + 1) doubles
    displs = list(np.cumsum([0] + counts[:-1]))
    mine = np.full(counts[rank], rank, np.float64)
    gathered = np.zeros(sum(counts), np.float64)
    sent = np.arange(sum(counts), dtype=np.float64)
    got = np.zeros(counts[rank], np.float64)
    to_all = [counts[rank] + j for j in range(size)]  # alltoallv: rank r sends member j 2 (r + 1) + j doubles
    from_all = [counts[j] + rank for j in range(size)]
    a2a_out = np.zeros(sum(to_all), np.float64)
    a2a_in = np.zeros(sum(from_all), np.float64)
    spec_out = [a2a_out, (to_all, list(np.cumsum([0] + to_all[:-1]))), f8]
    spec_in = [a2a_in, (from_all, list(np.cumsum([0] + from_all[:-1]))), f8]
    vector = np.ones(sum(counts), np.float64)
    blocks = np.ones(4 * size, np.float64)
    four = np.zeros(4, np.float64)
    calls = {
        "gather": lambda c: c(block, everyone, root=1),
        "scatter": lambda c: c(everyone, block, root=1),
        "alltoallv": lambda c: c(spec_out, spec_in),
        "allgatherv": lambda c: c(mine, [gathered, (counts, displs), f8]),
        "reduce_scatter": lambda c: c(vector, got, counts, op=MPI.SUM),
        "reduce_scatter_block": lambda c: c(blocks, four, op=MPI.SUM),
        "scan": lambda c: c(block, np.zeros(3), op=MPI.SUM),
        "exscan": lambda c: c(block, np.zeros(3), op=MPI.SUM),
        "gatherv": lambda c: c(mine, [gathered, (counts, displs), f8], root=2),
        "scatterv": lambda c: c([sent, (counts, displs), f8], got, root=2),
    }
    for name in PAIRS:
        calls[name](getattr(world, name.capitalize()))  # Reduce_scatter, ...
        calls[name](getattr(world, "I" + name)).Wait()  # Ireduce_scatter, ...


def one_sided(world) -> int:
    rank, size = world.Get_rank(), world.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    i8 = MPI.INT64_T
    win = MPI.Win.Allocate(16 * 8, disp_unit=8, comm=world)
    memory = np.frombuffer(win.tomemory(), dtype=np.int64)
    win.Lock(rank)
    memory[:] = 0
    win.Unlock(rank)
    world.Barrier()
    errors = 0
    win.Lock_all()
    old = np.zeros(1, np.int64)
    win.Fetch_and_op(np.array([rank + 1], np.int64), old, right, target_disp=0, op=MPI.SUM)
    win.Flush(right)
    swapped = np.zeros(1, np.int64)
    win.Compare_and_swap(np.array([rank + 10], np.int64), np.array([0], np.int64), swapped, right, target_disp=1)
    win.Flush(right)
    before = np.zeros(4, np.int64)
    win.Get_accumulate(np.full(4, rank + 1, np.int64), before, right, target=(2, 4, i8), op=MPI.SUM)
    win.Flush(right)
    fetched = np.zeros(2, np.int64)
    requests = [win.Raccumulate(np.full(2, rank + 1, np.int64), right, target=(6, 2, i8), op=MPI.SUM),
                win.Rget_accumulate(np.full(2, rank + 1, np.int64), fetched, right, target=(8, 2, i8), op=MPI.SUM)]
    MPI.Request.Waitall(requests)
    win.Unlock_all()
    world.Barrier()
    # only rank - 1 wrote here: every value is its
    win.Lock(rank)
    expected = np.array([left + 1, left + 10] + [left + 1] * 4 + [left + 1] * 4, np.int64)
    errors += int(not (memory[:10] == expected).all())
    win.Unlock(rank)
    errors += int(old[0] != 0 or swapped[0] != 0 or (before != 0).any() or (fetched != 0).any())
    world.Barrier()
    group = world.Get_group()
    exposed, accessed = group.Incl([left]), group.Incl([right])
    win.Post(exposed)
    win.Start(accessed)
    win.Put(np.full(2, 100 + rank, np.int64), right, target=(12, 2, i8))
    win.Complete()
    win.Wait()
    win.Lock(rank)
    errors += int(not (memory[12:14] == 100 + left).all())
    win.Unlock(rank)
    for g in (exposed, accessed, group):
        g.Free()
    win.Free()
    return errors


def main() -> None:
    world = MPI.COMM_WORLD
    collectives(world)
    errors = world.allreduce(one_sided(world))
    if world.Get_rank() == 0:
        print(json.dumps({"verified": errors == 0, "errors": errors}))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
