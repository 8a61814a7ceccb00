"""Workloads with known contention for checking ``contend diagnose`` against the engine's truth, as GOAL
schedules generated here (docs/reproductions.md, "diagnose"):

- ``hot_spot``: a moving hot spot; in round k every rank reads (gets) from rank k mod P;
- ``incast``: every rank sends to rank 0, round after round;
- ``fan_out``: rank 0 gets from every other rank at once (initiator contention); ``mixed``: that and a
  moving hot spot at the same time, from two call sites;
- ``control``: pairs of ranks, each even rank reading from its odd partner: no two operations meet;
- ``global_array``: Tallent et al. 2014's case study in miniature, gets from a distributed array under a blocked or a
  block-cyclic distribution while all ranks sweep over the same region at the same time.

The engine has only two-sided messages, so a get is emulated: a small request (tag T) from the
initiator to the owner of the data, then the data reply (tag T + 1) back. Requests are served by data
servers, as ARMCI (under Global Arrays) runs one per node: with P compute ranks 0..P-1, rank P + r
serves rank r's memory, so serving never waits for r's computation, only for other messages. The
records' ``contend.sites`` metadata names each site and tells diagnose to pair the two messages into
one get (docs/formats.md, "Records").
"""

from __future__ import annotations

import os
from contend.atomic import scratch_directory
from dataclasses import dataclass, field
from typing import Any

REQUEST_BYTES = 8
# LogGOPS parameters of a small modern cluster (ns, ns/byte): fast enough that 4 KiB gets are a few
# microseconds, so the NIC's streaming time is what contends.
MACHINE = {"L": "1us", "o": "300ns", "g": "100ns", "G": "0.1ns", "O": "0", "S": 1_000_000_000}


@dataclass
class Workload:
    """A generated GOAL schedule (``goal``: its text) and the call sites its tags stand for."""

    name: str
    ranks: int
    goal: str
    sites: list[dict[str, Any]] = field(default_factory=list)


class _Program:
    """The ops of one rank, labelled in order, with their dependencies."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0

    def op(self, text: str, after: str | None = None) -> str:
        label = f"l{self.count}"
        self.count += 1
        self.lines.append(f"{label}: {text}")
        if after is not None:
            self.lines.append(f"{label} requires {after}")
        return label


class _Schedule:
    """Rank programs plus the get emulation: ``get`` issues the request and the reply receive on the
    initiator and the serving receive and reply send on the owner's data server (rank P + owner)."""

    def __init__(self, ranks: int, servers: bool = True) -> None:
        self.compute_ranks = ranks
        self.ranks = 2 * ranks if servers else ranks
        self.programs = [_Program() for _ in range(self.ranks)]

    def get(self, initiator: int, owner: int, size: int, tag: int, after: str | None) -> str:
        server = self.compute_ranks + owner
        me, serving = self.programs[initiator], self.programs[server]
        me.op(f"send {REQUEST_BYTES}b to {server} tag {tag}", after)
        reply = me.op(f"recv {size}b from {server} tag {tag + 1}")
        served = serving.op(f"recv {REQUEST_BYTES}b from {initiator} tag {tag}")
        serving.op(f"send {size}b to {initiator} tag {tag + 1}", served)
        return reply

    def text(self) -> str:
        out = [f"num_ranks {self.ranks}"]
        for rank, program in enumerate(self.programs):
            out += [f"rank {rank} {{", *("  " + line for line in program.lines), "}"]
        return "\n".join(out) + "\n"


def get_site(tag: int, name: str) -> dict[str, Any]:
    return {"tag": tag, "reply_tag": tag + 1, "kind": "get", "site": name}


def hot_spot(ranks: int = 8, rounds: int = 8, size: int = 4096, compute_ns: int = 2000) -> Workload:
    """Round k: every rank except k mod P computes, then gets ``size`` bytes from rank k mod P's
    memory (its data server, rank P + k mod P)."""
    schedule = _Schedule(ranks)
    last: list[str | None] = [None] * ranks
    for k in range(rounds):
        hot = k % ranks
        for rank in range(ranks):
            if rank == hot:
                continue
            work = schedule.programs[rank].op(f"calc {compute_ns}", last[rank])
            last[rank] = schedule.get(rank, hot, size, 10, work)
    return Workload("hot spot", schedule.ranks, schedule.text(), [get_site(10, "read_hot (hotspot.c:31)")])


def incast(ranks: int = 8, rounds: int = 4, size: int = 4096, compute_ns: int = 1000,
           blocking: bool = False) -> Workload:
    """Each round every rank 1..P-1 computes and sends ``size`` bytes to rank 0, which receives them
    (all receives posted at once, or with ``blocking`` one after the other, as a loop of MPI_Recv)."""
    schedule = _Schedule(ranks, servers=False)
    last: list[str | None] = [None] * ranks
    for _ in range(rounds):
        for rank in range(1, ranks):
            work = schedule.programs[rank].op(f"calc {compute_ns}", last[rank])
            last[rank] = schedule.programs[rank].op(f"send {size}b to 0 tag 20", work)
        for rank in range(1, ranks):
            last[0] = schedule.programs[0].op(f"recv {size}b from {rank} tag 20", last[0] if blocking else None)
    return Workload("incast", ranks, schedule.text(), [{"tag": 20, "site": "send_result (incast.c:42)"}])


def control(ranks: int = 8, rounds: int = 8, size: int = 4096, compute_ns: int = 20_000) -> Workload:
    """Every rank r gets from rank r + 1's memory (its own data server) every round: no two
    operations ever share an end."""
    schedule = _Schedule(ranks)
    last: list[str | None] = [None] * ranks
    for _ in range(rounds):
        for rank in range(ranks):
            work = schedule.programs[rank].op(f"calc {compute_ns}", last[rank])
            last[rank] = schedule.get(rank, (rank + 1) % ranks, size, 30, work)
    return Workload("control", schedule.ranks, schedule.text(), [get_site(30, "read_partner (control.c:12)")])


def fan_out(ranks: int = 8, rounds: int = 4, size: int = 4096, compute_ns: int = 2000) -> Workload:
    """Initiator contention: each round rank 0 computes, then gets ``size`` bytes from every other
    rank's memory at once (nonblocking gets, then wait for all); the replies converge on rank 0."""
    schedule = _Schedule(ranks)
    last: str | None = None
    for _ in range(rounds):
        work = schedule.programs[0].op(f"calc {compute_ns}", last)
        replies = [schedule.get(0, owner, size, 50, work) for owner in range(1, ranks)]
        last = schedule.programs[0].op("calc 0")
        for reply in replies:
            schedule.programs[0].lines.append(f"{last} requires {reply}")
    return Workload("fan-out", schedule.ranks, schedule.text(), [get_site(50, "prefetch_all (fanout.c:20)")])


def mixed(ranks: int = 8, rounds: int = 4, size: int = 4096) -> Workload:
    """Both ends at once: rank 0 fans gets out to every rank (initiator contention) while ranks 1..P-1
    read a moving hot spot (target contention), from two call sites."""
    schedule = _Schedule(ranks)
    last: list[str | None] = [None] * ranks
    for k in range(rounds):
        work = schedule.programs[0].op("calc 2000", last[0])
        replies = [schedule.get(0, owner, size, 50, work) for owner in range(1, ranks)]
        last[0] = schedule.programs[0].op("calc 0")
        schedule.programs[0].lines += [f"{last[0]} requires {reply}" for reply in replies]
        hot = 1 + k % (ranks - 1)
        for rank in range(1, ranks):
            if rank != hot:
                work = schedule.programs[rank].op("calc 2000", last[rank])
                last[rank] = schedule.get(rank, hot, size, 60, work)
    return Workload("mixed", schedule.ranks, schedule.text(),
                    [get_site(50, "prefetch_all (fanout.c:20)"), get_site(60, "read_hot (hotspot.c:31)")])


GA_SITE = "ga_get (fock.c:120)"


def owner(block: int, blocks: int, ranks: int, layout: str, chunk: int = 1) -> int:
    """The rank owning ``block`` of ``blocks``: ``blocked`` (contiguous ranges, as GA's default) or
    ``cyclic`` (chunks of ``chunk`` blocks dealt round-robin: block-cyclic)."""
    if layout == "blocked":
        return block * ranks // blocks
    return (block // chunk) % ranks


def global_array(ranks: int = 8, layout: str = "blocked", chunk: int = 1, size: int = 4096,
                 compute_ns: int = 1000, seed: int = 0) -> Workload:
    """Tallent et al. 2014's case study in miniature: ``ranks`` steps; at step k every rank reads (get, then
    computes with) each of the ``ranks`` blocks of region k, in its own random order (seeded; as tasks
    handed out together read neighbouring patches). Under ``blocked`` region k lies on rank k: a hot
    target that moves as the sweep moves; block-cyclic spreads each region over ranks / chunk ranks."""
    import numpy as np

    blocks = ranks * ranks
    orders = np.random.default_rng(seed).permuted(np.tile(np.arange(ranks), (ranks * ranks, 1)), axis=1)
    schedule = _Schedule(ranks)
    last: list[str | None] = [None] * ranks
    for step in range(ranks):
        for j in range(ranks):
            for rank in range(ranks):
                block = step * ranks + int(orders[step * ranks + rank, j])
                work = schedule.programs[rank].op(f"calc {compute_ns}", last[rank])
                target = owner(block, blocks, ranks, layout, chunk)
                # a local block is a memory copy, not a message
                last[rank] = work if target == rank else schedule.get(rank, target, size, 40, work)
    name = "blocked" if layout == "blocked" else f"block-cyclic ({chunk})"
    return Workload(f"global array, {name}", schedule.ranks, schedule.text(), [get_site(40, GA_SITE)])


def simulate_workload(workload: Workload, **machine: Any):
    """Simulate a workload (records on) on ``MACHINE``, or on these overrides."""
    from contend.simulation.simulate import simulate

    with scratch_directory("contend-diagnose-") as scratch:
        path = os.path.join(scratch, "workload.goal")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(workload.goal)
        return simulate(path, records=True, **{**MACHINE, **machine})


def diagnose_workload(workload: Workload, result=None, **machine: Any):
    """(result, diagnosis): the workload simulated and its records diagnosed with its sites named."""
    from contend.analysis.diagnose import diagnose

    result = simulate_workload(workload, **machine) if result is None else result
    return result, diagnose(result.records, result.params, result.num_ranks, sites=workload.sites)


def trace_view(result, path, sites: list[dict[str, Any]] = ()) -> None:
    """Write a simulated run as a real trace would record it (docs/formats.md, "Records from real
    traces"): per message an ``isend`` row at the sender (posted, completed when its overhead is
    paid) and an ``irecv`` row at the receiver (posted with the send, as a receive posted early;
    completed when the data is available); no delay split. Lets the trace method be checked against
    the engine's truth."""
    import json

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from contend.atomic import atomic_path

    columns = result.record_columns
    names = {int(site["tag"]): site["site"] for site in sites}
    sites_of = np.array([names.get(int(t), f"send op {op}") for t, op in zip(columns["tag"], columns["send_op"])],
                        dtype=object)
    count = len(columns["src"])
    overhead = int(result.engine_params["o"])  # ps, like the records
    table = pa.table({
        "src": np.tile(columns["src"].astype(np.int64), 2),
        "dst": np.tile(columns["dst"].astype(np.int64), 2),
        "bytes": np.tile(columns["bytes"].astype(np.int64), 2),
        "tag": np.tile(columns["tag"].astype(np.int64), 2),
        "kind": pa.array(["isend"] * count + ["irecv"] * count, type=pa.string()),
        # a receive matched on the arrival's processing was posted before it (say with the send); one
        # matched later was posted then
        "posted": np.concatenate([columns["posted"], np.where(columns["matched"] > columns["received"],
                                                              columns["matched"], columns["posted"])]).astype(np.int64),
        "completed": np.concatenate([columns["injected"] + overhead, columns["completed"]]).astype(np.int64),
        "call_site": pa.array(list(sites_of) * 2, type=pa.string()),
        "context": pa.array([f"rank {r}" for r in columns["src"]] + [f"rank {r}" for r in columns["dst"]],
                            type=pa.string()),
    })
    metadata = {"contend.time_unit": "ps", "contend.source": "trace", "contend.ranks": json.dumps(result.num_ranks),
                "contend.params": json.dumps(result.params),
                "contend.clock": json.dumps("simulated: one clock")}
    with atomic_path(path) as temporary:
        pq.write_table(table.replace_schema_metadata(metadata), temporary)
