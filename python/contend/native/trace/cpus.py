"""Which CPU each rank of a traced run ran on, sampled from /proc while it runs: Linux keeps a task on
its CPU's run queue between load balances, and which ranks share a core decides what ranks that take
turns on it cost each other (docs/models.md, "Shared cores", "Placement"). The sample goes beside the
rank files as ``cpus.json``; ``contend predict`` replays the run with each rank on its CPU.

A rank is a descendant of this process (the launcher and its helpers, walked through
``/proc/PID/task/TID/children``) whose environment holds the tracer's directory (``CONTEND_TRACE_DIR``)
and its MPI rank (``PMI_RANK``, MPICH's; ``OMPI_COMM_WORLD_RANK``, Open MPI's); its CPU is field 39 of
``/proc/PID/stat``. Only this host's processes are seen: ranks on other hosts are not sampled. The
sampling costs a few file reads every 20 ms and stops looking for ranks once the job's are found, so
the traced run keeps its cores (a search of every process's environment every 10 ms cost the traced
runs of 2 ranks on 2 cores 11-15% of their time)."""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from pathlib import Path

FILE = "cpus.json"
PERIOD_S = 0.02  # a sample every 20 ms: cheap beside the run (a migration is rare: pairs hold for the run)
RANK_VARIABLES = (b"PMI_RANK=", b"OMPI_COMM_WORLD_RANK=")
SIZE_VARIABLES = (b"PMI_SIZE=", b"OMPI_COMM_WORLD_SIZE=")


def _rank_of(pid: str, mark: bytes) -> tuple[int, int] | None:
    """The MPI rank and job size of process ``pid`` if its environment carries ``mark``; else None."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:  # not ours to read, or it ended
        return None
    if mark not in environ:
        return None

    def value(variables: tuple[bytes, ...]) -> int | None:
        for entry in environ:
            for variable in variables:
                if entry.startswith(variable) and entry[len(variable):].isdigit():
                    return int(entry[len(variable):])
        return None

    rank, size = value(RANK_VARIABLES), value(SIZE_VARIABLES)
    return None if rank is None else (rank, size or 0)


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (children of any of its threads, recursively)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = Path(f"/proc/{parent}/task/{task}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                found.append(child)
                todo.append(child)
    return found


def _cpu_of(pid: int) -> int | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[36])


class CpuSampler:
    """A thread that samples, until stopped, the CPU of every rank whose environment holds
    ``CONTEND_TRACE_DIR=directory``."""

    def __init__(self, directory: Path):
        self._mark = f"CONTEND_TRACE_DIR={directory}".encode()
        self._stop = threading.Event()
        self._pids: dict[int, int] = {}  # pid -> rank
        self._size = 0  # the job's ranks, from their environment: all found, the search stops
        self.counts: dict[int, Counter] = {}  # rank -> CPU -> samples
        self.migrations: Counter = Counter()
        self._thread = threading.Thread(target=self._run, name="contend-cpu-sampler", daemon=True)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _find(self) -> None:
        # Launchers and wrappers are asked again: a rank forked but not yet exec'd has their environment.
        for pid in _descendants(os.getpid()):
            if pid not in self._pids:
                found = _rank_of(str(pid), self._mark)
                if found is not None:
                    self._pids[pid], size = found
                    self._size = max(self._size, size)

    def _run(self) -> None:
        last: dict[int, int] = {}
        while not self._stop.wait(PERIOD_S):
            if not self._size or len(self._pids) < self._size:
                self._find()
            for pid, rank in self._pids.items():
                cpu = _cpu_of(pid)
                if cpu is None:
                    continue
                self.counts.setdefault(rank, Counter())[cpu] += 1
                if last.get(rank, cpu) != cpu:
                    self.migrations[rank] += 1
                last[rank] = cpu

    def summary(self) -> dict:
        """Per rank (in rank order) the CPU it was seen on most, its share of the samples and its
        migrations; ranks never seen are left out (``ranks`` lists those seen)."""
        ranks = sorted(self.counts)
        modal = {r: self.counts[r].most_common(1)[0] for r in ranks}
        return {"ranks": ranks, "cpus": [modal[r][0] for r in ranks],
                "share": [round(modal[r][1] / sum(self.counts[r].values()), 3) for r in ranks],
                "migrations": [self.migrations[r] for r in ranks],
                "samples": [sum(self.counts[r].values()) for r in ranks]}


def write(directory: Path, summary: dict) -> None:
    (directory / FILE).write_text(json.dumps(summary) + "\n")


def core_placement(directory: str | os.PathLike, ranks: int) -> list[int] | None:
    """The core of each of ``ranks`` ranks as sampled in a trace directory (``cpus.json``): the index
    of its CPU among this host's CPUs, for a machine whose ``[cores]`` are this host's (one_host).
    None when there is no sample or it does not cover every rank."""
    path = Path(directory) / FILE
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if summary.get("ranks") != list(range(ranks)):
        return None
    online = sorted(os.sched_getaffinity(0))
    index = {cpu: k for k, cpu in enumerate(online)}
    if not all(cpu in index for cpu in summary["cpus"]):
        return None
    return [index[cpu] for cpu in summary["cpus"]]
