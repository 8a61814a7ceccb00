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

from contend.bench.results import RunResult

TIME_COLUMNS = ("t_min_ns", "t_p50_ns", "t_p90_ns", "t_p99_ns", "t_max_ns")
ONE_SIDED = ("put", "get", "randomaccess")
NO_TRAFFIC = ("noise",)
# Timing noise margin on the copy bound: a copy timed here and a message timed there differ by more
# than their physics when the machine is shared.
COPY_MARGIN = 1.5
SMALLEST_TIMED_COPY = 1 << 20


def copy_bandwidth(nbytes: int, repeats: int = 5) -> float:
    """Best observed bytes/s of copying an nbytes buffer again and again (numpy, one core).

    Each timing covers at least 16 MiB of copies, so Python's call overhead does not hide the speed of
    small copies; like the benchmarks, the buffer is reused, so it is as warm in cache as theirs.
    """
    nbytes = max(int(nbytes), 4096)
    source = np.ones(nbytes, dtype=np.uint8)
    target = np.empty_like(source)
    copies = max(1, (16 << 20) // nbytes)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(copies):
            np.copyto(target, source)
        best = min(best, time.perf_counter_ns() - start)
    return nbytes * copies / (max(best, 1) * 1e-9)


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
            # Small copies are timed no better than 1 MiB ones (Python's call overhead would dominate),
            # and a small copy is not slower per byte than a cache-resident 1 MiB one.
            limit = copy_bandwidth(max(int(size), SMALLEST_TIMED_COPY)) * COPY_MARGIN
            carrier = "a memory copy"
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
