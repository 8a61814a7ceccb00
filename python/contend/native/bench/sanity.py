"""Is a run physically sane? The checks ``contend bench run`` applies and the tests assert.

Each check returns a list of problems (empty means sane), so callers can print them all at once:
- the run finished and every row is well formed (times positive, percentiles ordered);
- no bandwidth beats what can carry it: a link's rate on the emulated fabric, or on one host the
  speed of copying the same number of bytes in memory (an MPI message is at least one copy);
- all bytes are accounted for: what all ranks sent equals what all ranks received, counted from MPI
  statuses; data moved one-sided was checked byte by byte; no rank found data it checked wrong;
- the nodes are what the launcher made: one host name per node, K ranks on each.
"""

from __future__ import annotations

import time

import numpy as np

from contend.native.bench.results import RunResult

TIME_COLUMNS = ("t_min_ns", "t_p50_ns", "t_p90_ns", "t_p99_ns", "t_max_ns")
ONE_SIDED = ("put", "get", "randomaccess")
NO_TRAFFIC = ("noise", "barrier")  # no payload: nothing to balance
# The copy bound's one factor: the message and the reference copy are timed at different moments, and
# a core's clock (which a cache-resident copy's speed follows) can differ by this much between two
# moments: a boost clock is up to ~1.5x the base clock, and which one a core runs at depends on what
# else the machine is doing. The best of repeated timings removes the rest of the timing noise.
COPY_MARGIN = 1.5
# Below this a copy's time is its call, not its bytes: both buffers of a smaller copy sit in L1 like
# those of a 4 KiB one, which moves more bytes per call, so a smaller copy is no faster per byte.
SMALLEST_TIMED_COPY = 4096
CACHE_LINE = 64
COPY_BYTES_PER_TIMING = 32 << 20  # a few hundred microseconds: Python's ~1 us per call is noise
COPY_ROWS_MAX = 4096
COPY_REPEATS = 7
COPY_RETRIES = 3  # more timings of the reference before a row is called too fast


def _aligned(nbytes: int) -> np.ndarray:
    """nbytes of page-aligned memory, as the benchmarks' buffers and MPI windows are."""
    raw = np.empty(nbytes + 4096, dtype=np.uint8)
    start = -raw.ctypes.data % 4096
    return raw[start:start + nbytes]


def copy_bandwidth(nbytes: int, repeats: int = COPY_REPEATS) -> float:
    """Best observed bytes/s of one core copying nbytes (at least SMALLEST_TIMED_COPY) again and
    again between two buffers as warm as a benchmark's, which reuses its buffers.

    One numpy call does many copies, so Python's call overhead does not hide the speed of a small
    copy: the target is a view of rows a cache line apart, each row one ``memmove`` of nbytes from
    the same source. Consecutive rows overwrite all but one line of each other, so the target stays
    in the cache level of an nbytes buffer, like the message's.
    """
    nbytes = max(int(nbytes), SMALLEST_TIMED_COPY)
    rows = min(max(COPY_BYTES_PER_TIMING // nbytes, 2), COPY_ROWS_MAX)
    source = _aligned(nbytes)
    source[:] = 1
    target = _aligned(nbytes + CACHE_LINE * (rows - 1))
    target[:] = 0
    sources = np.broadcast_to(source, (rows, nbytes))
    targets = np.lib.stride_tricks.as_strided(target, (rows, nbytes), (CACHE_LINE, 1))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter_ns()
        np.copyto(targets, sources)
        best = min(best, time.perf_counter_ns() - start)
    return nbytes * rows / (max(best, 1) * 1e-9)


def check_rows(run: RunResult) -> list[str]:
    """Well-formed rows: finished run, positive ordered times, sample counts as asked."""
    problems = []
    if not run.complete:
        problems.append("the run did not finish (no closing line)")
    rows = run.results
    if rows.empty:
        return problems + ["no results"]
    timed = rows[rows["metric"] != "noise"]
    for column in TIME_COLUMNS:
        if (timed[column] <= 0).any():
            problems.append(f"{column} is not positive in {int((timed[column] <= 0).sum())} rows")
    times = rows[list(TIME_COLUMNS)].to_numpy()
    if (np.diff(times, axis=1) < 0).any():
        problems.append("percentiles out of order (min <= p50 <= p90 <= p99 <= max)")
    for column, name in (("t_mean_ns", "mean"), ("t_tmean_ns", "trimmed mean")):
        if ((rows[column] < rows["t_min_ns"]) | (rows[column] > rows["t_max_ns"])).any():
            problems.append(f"{name} outside [min, max]")
    if (timed["samples"] < 1).any():
        problems.append("rows without samples")
    return problems


def check_bandwidth(run: RunResult) -> list[str]:
    """No row faster than its carrier (link on the fabric, memory copy on one host)."""
    rows = run.results
    if rows.empty or run.pattern in NO_TRAFFIC:
        return []
    fabric = run.meta.get("fabric")
    problems = []
    for size, group in rows.groupby("bytes"):
        if size == 0:
            continue
        fastest = float(group["bandwidth_Bps"].max())
        if fabric:
            # tbf lets a burst through at once, then the rate: a message after an idle pause (a
            # ping-pong's) beats the rate by burst/size; 5% on top for timing.
            burst = float(fabric.get("burst_bytes", 0))
            if size <= burst:
                continue
            limit = float(fabric["link_Bps"]) * size / (size - burst) * 1.05
            carrier = f"the {fabric['link']} link"
        else:
            # On one host a message is at least one copy of its bytes, made by one core: through
            # shared-memory cells the sender copies in and the receiver copies out (two cores, each
            # copying every byte, in a pipeline), a single-copy transfer (CMA, a put or get into a
            # shared window) is one core's copy, and no MPI splits one message's bytes between
            # cores. Ops in flight (a put/get window, msgrate) do not change that: one core still
            # copies each op's bytes, one op after another. So no row beats one core copying the
            # same number of bytes, the reference timed at the same size (same cache level).
            limit = copy_bandwidth(size) * COPY_MARGIN
            carrier = "a memory copy"
            for _ in range(COPY_RETRIES):  # before calling it too fast, time the copy again: best of all
                if fastest <= limit:
                    break
                limit = max(limit, copy_bandwidth(size) * COPY_MARGIN)
        if fastest > limit:
            problems.append(
                f"{size} B: {fastest / 1e9:.2f} GB/s is faster than {carrier} ({limit / 1e9:.2f} GB/s)"
            )
    return problems


def check_accounting(run: RunResult) -> list[str]:
    """All bytes accounted for, from the ranks' own counts."""
    t = run.tallies
    if t.empty:
        return ["no tallies"]
    problems = []
    if len(t) != run.meta.get("ranks"):
        problems.append(f"{len(t)} tallies for {run.meta.get('ranks')} ranks")
    if (t["verified"] == 0).any():
        problems.append(f"ranks {t.loc[t['verified'] == 0, 'rank'].tolist()} received data that was not what was sent")
    # nicrate and outstanding --mode put move their data one-sided only
    only_one_sided = int(t["rma_bytes"].sum()) > 0 and int(t["bytes_sent"].sum()) == 0
    if run.pattern in ONE_SIDED or only_one_sided:
        if int(t["rma_bytes"].sum()) <= 0:
            problems.append("no one-sided bytes moved")
        if (t["verified"] == 0).any() or not (t["verified"] == 1).any():
            problems.append("one-sided data was not verified correct")
        return problems
    if run.pattern in NO_TRAFFIC:
        return problems
    sent, received = int(t["bytes_sent"].sum()), int(t["bytes_received"].sum())
    if sent != received:
        problems.append(f"bytes sent {sent} != bytes received {received}")
    if int(t["messages_sent"].sum()) != int(t["messages_received"].sum()):
        problems.append("messages sent != messages received")
    if sent <= 0:
        problems.append("no bytes moved")
    return problems


def check_nodes(run: RunResult) -> list[str]:
    """One host name per node; on the fabric, ranks placed K per node in rank order."""
    meta = run.meta
    hosts, node_of_rank = meta.get("hosts", []), meta.get("node_of_rank", [])
    problems = []
    if len(hosts) != meta.get("nodes") or len(set(hosts)) != len(hosts):
        problems.append(f"hosts {hosts} do not name {meta.get('nodes')} distinct nodes")
    fabric = meta.get("fabric")
    if fabric:
        ppn = int(fabric["ppn"])
        expected = [rank // ppn for rank in range(int(meta.get("ranks", 0)))]
        if node_of_rank != expected:
            problems.append(f"ranks on nodes {node_of_rank}, expected {expected} ({ppn} per node)")
        if any(not host.startswith(fabric["host_prefix"]) for host in hosts):
            problems.append(f"hosts {hosts} are not the fabric's nodes")
    return problems


def problems(run: RunResult) -> list[str]:
    """Every check at once."""
    return check_rows(run) + check_bandwidth(run) + check_accounting(run) + check_nodes(run)
