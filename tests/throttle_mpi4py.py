"""mpi4py stress program for libcontend-throttle.so, run by tests/test_throttle.py under mpiexec.

On MPICH 5, mpi4py calls the large-count entry points (MPI_Isend_c, MPI_Put_c, ...), so this checks
that the library throttles Python programs too. Every rank derives every rank's plan from the seed:
random peers, random sizes (log-uniform up to --max-bytes), MPI_Isend or MPI_Issend; receives are all
posted first and completed with Waitany and Testsome, sends with a random one of Waitany, Testsome,
Testall and Waitall. Then one-sided, passive target: Put, Rput and Accumulate into slots only the
origin writes, random flushes, then Get and Rget of what was written. Every byte is checked.

    mpiexec -n 4 python throttle_mpi4py.py [messages] [ops] [max_bytes] [seed] [--nocheck]

--nocheck opens the lock_all epochs with MPI.MODE_NOCHECK, where the proxy policy's servers issue the
Puts and Gets for their owners.

Rank 0 prints one JSON line; the exit code is 1 if any byte was wrong.
"""

from __future__ import annotations

import json
import sys

import numpy as np
from mpi4py import MPI

SLOT = 512


def pattern(key: int, n: int) -> np.ndarray:
    start = (key * 2654435761) % 251
    return ((np.arange(n, dtype=np.int64) * 131 + start) % 256).astype(np.uint8)


def log_uniform(rng: np.random.Generator, high: int) -> int:
    top = 1 << int(rng.integers(0, high.bit_length() + 1))
    return int(rng.integers(0, min(top, high) + 1))


def plan(src: int, size: int, messages: int, max_bytes: int, seed: int) -> list[tuple[int, int, int]]:
    rng = np.random.default_rng([seed, src])
    return [((src + 1 + int(rng.integers(0, size - 1))) % size, int(rng.integers(0, 2)), log_uniform(rng, max_bytes))
            for _ in range(messages)]


def point_to_point(comm, messages: int, max_bytes: int, seed: int) -> int:
    rank, size = comm.Get_rank(), comm.Get_size()
    plans = [plan(s, size, messages, max_bytes, seed) for s in range(size)]
    incoming = [(s, k, n) for s in range(size) for k, (dest, _, n) in enumerate(plans[s]) if dest == rank]
    bufs = [np.zeros(n, dtype=np.uint8) for _, _, n in incoming]
    rreqs = [comm.Irecv([buf, MPI.BYTE], source=s, tag=k) for buf, (s, k, _) in zip(bufs, incoming)]
    rng = np.random.default_rng([seed, rank, 1])
    sreqs, keep = [], []
    for k, (dest, kind, n) in enumerate(plans[rank]):
        data = pattern(rank * 100003 + k, n)
        keep.append(data)  # the buffer must outlive its send
        send = comm.Issend if kind else comm.Isend
        sreqs.append(send([data, MPI.BYTE], dest=dest, tag=k))
        choice = int(rng.integers(0, 6))
        if choice == 0:
            MPI.Request.Waitany(sreqs)
        elif choice == 1:
            MPI.Request.Testsome(sreqs)
        elif choice == 2:
            MPI.Request.Testall(sreqs[-4:])
        elif choice == 3:
            MPI.Request.Waitall(sreqs[-2:])
    errors, done, turn = 0, 0, 0
    status = MPI.Status()
    while done < len(rreqs):
        if turn % 2 == 0:
            index = MPI.Request.Waitany(rreqs, status)
            finished = [] if index == MPI.UNDEFINED else [index]
        else:
            finished = MPI.Request.Testsome(rreqs) or []
        turn += 1
        for i in finished:
            s, k, n = incoming[i]
            errors += not np.array_equal(bufs[i], pattern(s * 100003 + k, n))
        done += len(finished)
    MPI.Request.Waitall(sreqs)
    return errors


def one_sided(comm, ops: int, seed: int, nocheck: bool) -> int:
    rank, size = comm.Get_rank(), comm.Get_size()
    region = ops * SLOT
    counters = region * size
    win = MPI.Win.Allocate(counters + 4 * size, disp_unit=1, comm=comm)
    memory = np.frombuffer(win.tomemory(), dtype=np.uint8)
    memory[:] = 0
    comm.Barrier()

    def rma_plan(origin: int) -> list[tuple[int, int, int, int, int]]:
        rng = np.random.default_rng([seed, origin, 2])
        used = [0] * size
        out = []
        for _ in range(ops):
            target, kind = int(rng.integers(0, size)), int(rng.integers(0, 3))  # Put, Rput, Accumulate
            n, value = 1 + log_uniform(rng, SLOT - 1), int(rng.integers(0, 1000))
            slot = -1 if kind == 2 else used[target]
            used[target] += kind != 2
            out.append((target, kind, slot, n, value))
        return out

    plans = [rma_plan(s) for s in range(size)]
    rng = np.random.default_rng([seed, rank, 3])
    keep, requests = [], []
    win.Lock_all(MPI.MODE_NOCHECK if nocheck else 0)
    for target, kind, slot, n, value in plans[rank]:
        disp = rank * region + slot * SLOT
        if kind == 2:
            data = np.array([value], dtype=np.int32)
            win.Accumulate([data, MPI.INT], target, target=[counters + 4 * rank, 1, MPI.INT], op=MPI.SUM)
        else:
            data = pattern(rank * 7919 + target * 104729 + slot, n)
            if kind == 0:
                win.Put([data, MPI.BYTE], target, target=[disp, n, MPI.BYTE])
            else:
                requests.append(win.Rput([data, MPI.BYTE], target, target=[disp, n, MPI.BYTE]))
        keep.append(data)
        choice = int(rng.integers(0, 8))
        if choice == 0:
            win.Flush(target)
        elif choice == 1:
            win.Flush_local_all()
        elif choice == 2 and requests:
            MPI.Request.Testsome(requests)
    MPI.Request.Waitall(requests)
    win.Unlock_all()
    comm.Barrier()

    errors = 0
    win.Lock(rank, MPI.LOCK_SHARED)
    for origin in range(size):
        total = 0
        for target, kind, slot, n, value in plans[origin]:
            if target != rank:
                continue
            if kind == 2:
                total += value
                continue
            at = origin * region + slot * SLOT
            errors += not np.array_equal(memory[at:at + n], pattern(origin * 7919 + rank * 104729 + slot, n))
        counter = int(memory[counters + 4 * origin:counters + 4 * origin + 4].view(np.int32)[0])
        errors += counter != total
    win.Unlock(rank)
    comm.Barrier()

    win.Lock_all(MPI.MODE_NOCHECK if nocheck else 0)  # read back some writes of others with Get and Rget
    reads = []
    for i in range(ops // 4):
        origin = int(rng.integers(0, size))
        target, kind, slot, n, _ = plans[origin][int(rng.integers(0, ops))]
        if kind == 2:
            continue
        out = np.zeros(n, dtype=np.uint8)
        spec = [origin * region + slot * SLOT, n, MPI.BYTE]
        if i % 2:
            win.Get([out, MPI.BYTE], target, target=spec)
            win.Flush(target)
            reads.append((out, None, origin, target, slot, n))
        else:
            reads.append((out, win.Rget([out, MPI.BYTE], target, target=spec), origin, target, slot, n))
    MPI.Request.Waitall([r[1] for r in reads if r[1] is not None])
    win.Unlock_all()
    for out, _, origin, target, slot, n in reads:
        errors += not np.array_equal(out, pattern(origin * 7919 + target * 104729 + slot, n))
    win.Free()
    return errors


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--nocheck"]
    messages, ops, max_bytes, seed = (int(a) for a in (args + ["500", "400", "100000", "1"][len(args):]))
    comm = MPI.COMM_WORLD
    if comm.Get_rank() == 0:
        print(json.dumps({"started": True}), flush=True)
    errors = point_to_point(comm, messages, max_bytes, seed) + one_sided(comm, ops, seed, "--nocheck" in sys.argv)
    total = comm.allreduce(errors)
    if comm.Get_rank() == 0:
        print(json.dumps({"ranks": comm.Get_size(), "messages": messages * comm.Get_size(),
                          "one_sided": ops * comm.Get_size(), "errors": total, "verified": total == 0}))
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
