"""mpi4py stress program for libcontend-throttle.so, run by tests/test_throttle.py under mpiexec.

On MPICH 5, mpi4py calls the large-count entry points (MPI_Isend_c, MPI_Put_c, MPI_Alltoall_c, ...), so
this checks that the library throttles Python programs too. Every rank derives every rank's plan from the
seed: random peers, random sizes (log-uniform up to max_bytes).
1. Nonblocking: Isend, Issend, Ibsend or Irsend; receives are all posted first and completed with Waitany
   and Testsome, sends with a random one of Waitany, Testsome, Testall and Waitall.
2. Blocking: receives posted, then Send, Ssend, Bsend or Rsend; then rounds of Sendrecv and
   Sendrecv_replace with a random shift (each round after a barrier: see throttle/test/stress.c).
3. Persistent: Send_init, Ssend_init, Bsend_init or Rsend_init, matched by Recv_init, started `rounds`
   times with Start or Startall.
4. Collectives: Alltoall, Alltoallv, Allgather, Allgatherv, a third in place, with MPI.INT or derived
   types that leave gaps (a vector, a resized int), every int checked, gaps untouched.
5. One-sided, passive target: Put, Rput, Accumulate and Raccumulate into slots only the origin writes,
   random flushes, then Get and Rget of what was written. Every byte is checked.

    mpiexec -n 4 python throttle_mpi4py.py [messages] [ops] [max_bytes] [seed] [blocking] [rounds] [collectives]
                                           [--nocheck]

--nocheck opens the lock_all epochs with MPI.MODE_NOCHECK, where the proxy policy's servers issue the
Puts and Gets for their owners.

Rank 0 prints one JSON line; the exit code is 1 if any byte was wrong. The library leaves traffic within a
node alone, so the line also has, per rank, the operations of each kind whose peer is on another node
("off_node": sends, blocking sends, Sendrecv rounds, persistent starts, collective sends (one per peer and
call), one-sided ops), nodes named as the library names them (see throttle/test/stress.c).
"""

from __future__ import annotations

import json
import os
import socket
import sys

import numpy as np
from mpi4py import MPI

KINDS = ("sends", "blocking", "sendrecvs", "persistent", "collective_sends", "one_sided")
OFF_NODE = dict.fromkeys(KINDS, 0)  # this rank's operations to other nodes, per kind
NODE_OF: list[str] = []  # world rank -> the library's name of its node


def name_nodes(comm) -> None:
    per = int(os.environ.get("CONTEND_THROTTLE_RANKS_PER_NODE", "0"))
    host = socket.gethostname()
    mine = os.environ.get("CONTEND_THROTTLE_NODE") or (f"{host}#{comm.Get_rank() // per}" if per else host)
    NODE_OF[:] = comm.bcast(comm.gather(mine))  # not allgather: the library would count it


def leaves(comm, peer: int) -> int:
    return int(NODE_OF[peer] != NODE_OF[comm.Get_rank()])


SLOT = 512
BSEND_MAX = 4096  # buffered sends are at most this long, so the attached buffer holds them all
PERSISTENT = 16


def pattern(key: int, n: int) -> np.ndarray:
    start = (key * 2654435761) % 251
    return ((np.arange(n, dtype=np.int64) * 131 + start) % 256).astype(np.uint8)


def log_uniform(rng: np.random.Generator, high: int) -> int:
    top = 1 << int(rng.integers(0, high.bit_length() + 1))
    return int(rng.integers(0, min(top, high) + 1))


def plan(src: int, size: int, messages: int, max_bytes: int, seed: int) -> list[tuple[int, int, int]]:
    rng = np.random.default_rng([seed, src])
    out = []
    for _ in range(messages):
        dest, kind, n = (src + 1 + int(rng.integers(0, size - 1))) % size, int(rng.integers(0, 4)), log_uniform(rng, max_bytes)
        out.append((dest, kind, n % (BSEND_MAX + 1) if kind == 2 else n))  # kinds: standard, synchronous, buffered, ready
    return out


def point_to_point(comm, messages: int, max_bytes: int, seed: int) -> int:
    rank, size = comm.Get_rank(), comm.Get_size()
    plans = [plan(s, size, messages, max_bytes, seed) for s in range(size)]
    incoming = [(s, k, n) for s in range(size) for k, (dest, _, n) in enumerate(plans[s]) if dest == rank]
    bufs = [np.zeros(n, dtype=np.uint8) for _, _, n in incoming]
    rreqs = [comm.Irecv([buf, MPI.BYTE], source=s, tag=k) for buf, (s, k, _) in zip(bufs, incoming)]
    comm.Barrier()  # every receive posted: ready sends may start
    rng = np.random.default_rng([seed, rank, 1])
    sreqs, keep = [], []
    for k, (dest, kind, n) in enumerate(plans[rank]):
        data = pattern(rank * 100003 + k, n)
        keep.append(data)  # the buffer must outlive its send
        send = (comm.Isend, comm.Issend, comm.Ibsend, comm.Irsend)[kind]
        sreqs.append(send([data, MPI.BYTE], dest=dest, tag=k))
        OFF_NODE["sends"] += leaves(comm, dest)
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
            target, kind = int(rng.integers(0, size)), int(rng.integers(0, 4))  # Put, Rput, Accumulate, Raccumulate
            n, value = 1 + log_uniform(rng, SLOT - 1), int(rng.integers(0, 1000))
            slot = -1 if kind >= 2 else used[target]
            used[target] += kind < 2
            out.append((target, kind, slot, n, value))
        return out

    plans = [rma_plan(s) for s in range(size)]
    rng = np.random.default_rng([seed, rank, 3])
    keep, requests = [], []
    win.Lock_all(MPI.MODE_NOCHECK if nocheck else 0)
    for target, kind, slot, n, value in plans[rank]:
        disp = rank * region + slot * SLOT
        if kind >= 2:
            data = np.array([value], dtype=np.int32)
            spec = [counters + 4 * rank, 1, MPI.INT]
            if kind == 2:
                win.Accumulate([data, MPI.INT], target, target=spec, op=MPI.SUM)
            else:
                requests.append(win.Raccumulate([data, MPI.INT], target, target=spec, op=MPI.SUM))
        else:
            data = pattern(rank * 7919 + target * 104729 + slot, n)
            if kind == 0:
                win.Put([data, MPI.BYTE], target, target=[disp, n, MPI.BYTE])
            else:
                requests.append(win.Rput([data, MPI.BYTE], target, target=[disp, n, MPI.BYTE]))
        keep.append(data)
        OFF_NODE["one_sided"] += leaves(comm, target)
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
            if kind >= 2:
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
        if kind >= 2:
            continue
        out = np.zeros(n, dtype=np.uint8)
        OFF_NODE["one_sided"] += leaves(comm, target)
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


def blocking(comm, count: int, max_bytes: int, seed: int) -> int:
    """Blocking sends after every receive is posted, then Sendrecv and Sendrecv_replace rounds."""
    rank, size = comm.Get_rank(), comm.Get_size()
    plans = [plan(s, size, count, max_bytes, seed + 1) for s in range(size)]
    incoming = [(s, k, n) for s in range(size) for k, (dest, _, n) in enumerate(plans[s]) if dest == rank]
    bufs = [np.zeros(n, dtype=np.uint8) for _, _, n in incoming]
    rreqs = [comm.Irecv([buf, MPI.BYTE], source=s, tag=k) for buf, (s, k, _) in zip(bufs, incoming)]
    comm.Barrier()
    for k, (dest, kind, n) in enumerate(plans[rank]):
        send = (comm.Send, comm.Ssend, comm.Bsend, comm.Rsend)[kind]
        send([pattern(rank * 100019 + k, n), MPI.BYTE], dest=dest, tag=k)
        OFF_NODE["blocking"] += leaves(comm, dest)
    MPI.Request.Waitall(rreqs)
    errors = sum(not np.array_equal(buf, pattern(s * 100019 + k, n)) for buf, (s, k, n) in zip(bufs, incoming))
    for j in range(count // 2):
        comm.Barrier()  # a round starts when every rank has finished the one before
        common = np.random.default_rng([seed, j, 4])
        shift, replace, same = 1 + int(common.integers(0, size - 1)), bool(common.integers(0, 2)), log_uniform(common, max_bytes)
        dest, source = (rank + shift) % size, (rank - shift) % size
        OFF_NODE["sendrecvs"] += leaves(comm, dest)
        sizes = [log_uniform(np.random.default_rng([seed, j, r, 5]), max_bytes) for r in range(size)]
        status = MPI.Status()
        if replace:
            buf = pattern(rank * 7 + j * 1000003, same)
            comm.Sendrecv_replace([buf, MPI.BYTE], dest=dest, sendtag=j, source=source, recvtag=j, status=status)
            errors += not np.array_equal(buf, pattern(source * 7 + j * 1000003, same))
        else:
            buf = np.zeros(sizes[source], dtype=np.uint8)
            comm.Sendrecv([pattern(rank * 7 + j * 1000003, sizes[rank]), MPI.BYTE], dest=dest, sendtag=j,
                          recvbuf=[buf, MPI.BYTE], source=source, recvtag=j, status=status)
            errors += not np.array_equal(buf, pattern(source * 7 + j * 1000003, sizes[source]))
        errors += status.Get_source() != source
    return errors


def persistent(comm, rounds: int, max_bytes: int, seed: int) -> int:
    """PERSISTENT persistent sends per rank of the four modes, started `rounds` times."""
    rank, size = comm.Get_rank(), comm.Get_size()
    plans = [plan(s, size, PERSISTENT, max_bytes, seed + 2) for s in range(size)]
    incoming = [(s, k, n) for s in range(size) for k, (dest, _, n) in enumerate(plans[s]) if dest == rank]
    bufs = [np.zeros(n, dtype=np.uint8) for _, _, n in incoming]
    recvs = [comm.Recv_init([buf, MPI.BYTE], source=s, tag=k) for buf, (s, k, _) in zip(bufs, incoming)]
    outs = [np.zeros(n, dtype=np.uint8) for _, _, n in plans[rank]]
    sends = [(comm.Send_init, comm.Ssend_init, comm.Bsend_init, comm.Rsend_init)[kind]([out, MPI.BYTE], dest=dest, tag=k)
             for k, ((dest, kind, _), out) in enumerate(zip(plans[rank], outs))]
    rng, errors = np.random.default_rng([seed, rank, 6]), 0
    for r in range(rounds):
        for k, out in enumerate(outs):
            out[:] = pattern(rank * 31 + k * 65537 + r * 7919, len(out))
        for buf in bufs:
            buf[:] = 0
        if recvs:
            MPI.Prequest.Startall(recvs)
        comm.Barrier()  # every receive started: ready sends may start
        OFF_NODE["persistent"] += sum(leaves(comm, dest) for dest, _, _ in plans[rank])
        if rng.integers(0, 2):
            MPI.Prequest.Startall(sends)
        else:
            for request in sends:
                request.Start()
        choice = int(rng.integers(0, 3))
        if choice == 0:
            MPI.Request.Waitall(sends)
        elif choice == 1:
            while not MPI.Request.Testall(sends):
                pass
        else:
            for _ in sends:
                MPI.Request.Waitany(sends)
        MPI.Request.Waitall(recvs)
        errors += sum(not np.array_equal(buf, pattern(s * 31 + k * 65537 + r * 7919, n))
                      for buf, (s, k, n) in zip(bufs, incoming))
    for request in sends + recvs:
        request.Free()
    return errors


def collectives(comm, calls: int, max_elements: int, seed: int) -> int:
    """Alltoall(v) and Allgather(v), a third in place, over int types with and without gaps."""
    rank, size = comm.Get_rank(), comm.Get_size()
    vector = MPI.INT.Create_vector(2, 1, 2).Commit()  # ints 0 and 2 of 3
    resized = MPI.INT.Create_resized(0, 8).Commit()  # int 0 of 2
    types = [(MPI.INT, 1, [0]), (vector, 3, [0, 2]), (resized, 2, [0])]
    errors = 0

    def value(src, dst, call, count, q):
        return (np.arange(count, dtype=np.int64) * 3 + q + (call * 1000003 + src * 10007 + dst * 101) % 1000000007) % 2**31

    def put(buf, extent, data, displ, count, src, dst, call):
        for q, offset in enumerate(data):
            buf[(displ + np.arange(count)) * extent + offset] = value(src, dst, call, count, q)

    for call in range(calls):
        OFF_NODE["collective_sends"] += sum(leaves(comm, peer) for peer in range(size))
        common = np.random.default_rng([seed, call, 7])
        kind, in_place = int(common.integers(0, 4)), int(common.integers(0, 3)) == 0
        datatype, extent, data = types[int(common.integers(0, len(types)))]
        gather, uniform = kind >= 2, kind in (0, 2)
        c = log_uniform(common, max_elements)
        pair = common.integers(0, max_elements + 1, size=(size, size))
        pair = np.minimum(pair, pair.T) if in_place else pair  # in place: what j sends me, I send j
        own = common.integers(0, max_elements + 1, size=size)
        if uniform:
            scounts, rcounts = [c] * size, [c] * size
        elif gather:
            scounts, rcounts = [int(own[rank])] * size, [int(n) for n in own]
        else:
            scounts, rcounts = [int(pair[rank, j]) for j in range(size)], [int(pair[j, rank]) for j in range(size)]
        local = np.random.default_rng([seed, call, rank, 8])

        def place(counts):
            if uniform:
                return [j * counts[0] for j in range(size)], size * counts[0] + 1
            displs, at = [0] * size, 0
            for j in reversed(range(size)):  # out of order, with gaps
                at += int(local.integers(0, 3))
                displs[j], at = at, at + counts[j]
            return displs, at + 1

        sdispls, selems = place(scounts)
        rdispls, relems = place(rcounts)
        send = np.full(selems * extent, 0x7eadbeef, dtype=np.int32)
        recv = np.full(relems * extent, -1, dtype=np.int32)
        want = recv.copy()
        for j in range(size):
            put(want, extent, data, rdispls[j], rcounts[j], j, size if gather else rank, call)
        if gather:
            put(recv if in_place else send, extent, data, rdispls[rank] if in_place else 0, rcounts[rank], rank, size, call)
        else:
            for j in range(size):
                if in_place:
                    put(recv, extent, data, rdispls[j], rcounts[j], rank, j, call)
                else:
                    put(send, extent, data, sdispls[j], scounts[j], rank, j, call)
        sbuf = MPI.IN_PLACE if in_place else send
        if kind == 0:
            comm.Alltoall(sbuf if in_place else [send, c, datatype], [recv, c, datatype])
        elif kind == 1:
            comm.Alltoallv(sbuf if in_place else [send, (scounts, sdispls), datatype], [recv, (rcounts, rdispls), datatype])
        elif kind == 2:
            comm.Allgather(sbuf if in_place else [send, c, datatype], [recv, c, datatype])
        else:
            comm.Allgatherv(sbuf if in_place else [send, scounts[rank], datatype], [recv, (rcounts, rdispls), datatype])
        errors += not np.array_equal(recv, want)
    # mpi4py's pickled collectives go through them too
    got = comm.alltoall([(rank, j) for j in range(size)])
    errors += got != [(j, rank) for j in range(size)]
    errors += comm.allgather(rank * 3) != [j * 3 for j in range(size)]
    vector.Free()
    resized.Free()
    return errors


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--nocheck"]
    defaults = ["500", "400", "100000", "1", "200", "10", "60"]
    messages, ops, max_bytes, seed, count, rounds, calls = (int(a) for a in (args + defaults[len(args):]))
    comm = MPI.COMM_WORLD
    name_nodes(comm)
    if comm.Get_rank() == 0:
        print(json.dumps({"started": True}), flush=True)
    MPI.Attach_buffer(bytearray((messages + count + PERSISTENT) * (BSEND_MAX + MPI.BSEND_OVERHEAD)))
    errors = (point_to_point(comm, messages, max_bytes, seed) + blocking(comm, count, max_bytes, seed)
              + persistent(comm, rounds, max_bytes, seed) + collectives(comm, calls, 512, seed)
              + one_sided(comm, ops, seed, "--nocheck" in sys.argv))
    MPI.Detach_buffer()
    total = comm.allreduce(errors)
    off_node = comm.gather([OFF_NODE[kind] for kind in KINDS])
    size = comm.Get_size()
    if comm.Get_rank() == 0:
        print(json.dumps({"ranks": size, "messages": messages * size, "blocking": count * size,
                          "sendrecvs": count // 2 * size, "persistent": PERSISTENT * rounds * size,
                          "collectives": calls * size, "one_sided": ops * size, "errors": total,
                          "verified": total == 0, "off_node": off_node}))
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
