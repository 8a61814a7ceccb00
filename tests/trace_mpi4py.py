"""mpi4py program for libcontend-trace.so, run by tests/test_trace.py under `contend trace`.

On MPICH 5, mpi4py calls the large-count entry points (MPI_Send_c, MPI_Put_c, ...): this checks the
tracer records Python programs too. Random peers from a shared seed (every rank knows its senders):
Isend / Send to one destination, Irecv / Recv from each sender; then Put, Get, Accumulate, Rput, Rget
to random targets with flushes. Each rank prints one JSON line of what it issued.

    mpiexec -n 4 python trace_mpi4py.py [rounds] [seed]
"""

from __future__ import annotations

import json
import sys

import numpy as np
from mpi4py import MPI


def main() -> None:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    shared = np.random.default_rng(int(sys.argv[2]) if len(sys.argv) > 2 else 3)
    own = np.random.default_rng(rank + 100)
    issued = {k: 0 for k in ("send", "isend", "recv", "irecv", "put", "get", "accumulate", "rput", "rget")}
    window = MPI.Win.Allocate(8 * 64, 8, comm=comm)
    for it in range(rounds):
        dest = [int((r + 1 + shared.integers(size - 1)) % size) for r in range(size)]
        nbytes = int(shared.integers(1, 300))
        data, into = np.zeros(nbytes, np.uint8), np.zeros(nbytes, np.uint8)
        requests = []
        for s in range(size):
            if dest[s] == rank:
                requests.append(comm.Irecv(into.copy(), source=s, tag=it))
                issued["irecv"] += 1
        if own.integers(2):
            requests.append(comm.Isend(data, dest=dest[rank], tag=it))
            issued["isend"] += 1
        else:  # the receives are posted first everywhere before anyone could block: see the barrier
            comm.Barrier()
            comm.Send(data, dest=dest[rank], tag=it)
            issued["send"] += 1
            comm.Barrier()
            MPI.Request.Waitall(requests)
            comm.Barrier()
            continue
        comm.Barrier()
        comm.Barrier()
        MPI.Request.Waitall(requests)
        comm.Barrier()
    # a round of blocking receives: ring
    comm.Isend(np.zeros(4, np.uint8), dest=(rank + 1) % size, tag=999).Wait()
    issued["isend"] += 1
    comm.Recv(np.zeros(4, np.uint8), source=(rank - 1) % size, tag=999)
    issued["recv"] += 1
    # pickled objects: comm.recv is MPI_Mprobe + MPI_Mrecv; a matched probe, then MPI_Imrecv
    comm.send({"from": rank}, dest=(rank + 1) % size, tag=7)
    issued["send"] += 1
    assert comm.recv(source=MPI.ANY_SOURCE, tag=7) == {"from": (rank - 1) % size}
    issued["recv"] += 1
    comm.Isend(np.full(3, rank, np.int32), dest=(rank + 1) % size, tag=8).Wait()
    issued["isend"] += 1
    got = np.zeros(3, np.int32)
    comm.Mprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG).Irecv(got).Wait()
    assert (got == (rank - 1) % size).all()
    issued["irecv"] += 1
    window.Lock_all()
    value, result = np.ones(4, np.int64), np.zeros(4, np.int64)
    for _ in range(rounds):
        target = int(own.integers(size))
        op = int(own.integers(5))
        if op == 0:
            window.Put(value, target, target=(rank * 4, 4, MPI.LONG)); issued["put"] += 1
        elif op == 1:
            window.Get(result, target, target=(0, 4, MPI.LONG)); issued["get"] += 1
        elif op == 2:
            window.Accumulate(value, target, target=(32, 4, MPI.LONG), op=MPI.SUM); issued["accumulate"] += 1
        elif op == 3:
            window.Rput(value, target, target=(rank * 4, 4, MPI.LONG)).Wait(); issued["rput"] += 1
        else:
            window.Rget(result, target, target=(0, 4, MPI.LONG)).Wait(); issued["rget"] += 1
        window.Flush(target)
    window.Unlock_all()
    comm.Barrier()
    window.Free()
    sys.stdout.write(json.dumps({"rank": rank, **issued}) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
