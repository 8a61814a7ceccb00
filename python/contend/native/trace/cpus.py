"""Which CPU each rank of a traced run ran on, sampled from /proc while it runs: Linux keeps a task on
its CPU's run queue between load balances, and which ranks share a core decides what ranks that take
turns on it cost each other (docs/models.md, "Shared cores", "Placement"). The sample goes beside the
rank files as ``cpus.json``; ``contend predict`` replays the run with each rank on its CPU.

A rank is a process whose environment holds the tracer's directory (``CONTEND_TRACE_DIR``) and its MPI
rank (``PMI_RANK``, MPICH's; ``OMPI_COMM_WORLD_RANK``, Open MPI's); its CPU is field 39 of
``/proc/PID/stat``. Only this host's processes are seen: ranks on other hosts are not sampled."""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from pathlib import Path

FILE = "cpus.json"
PERIOD_S = 0.005  # a sample every 5 ms: cheap beside the run (a migration is rare: pairs hold for the run)
FIND_EVERY = 2  # look for ranks not yet found every 2 samples (10 ms)
RANK_VARIABLES = (b"PMI_RANK=", b"OMPI_COMM_WORLD_RANK=")


def _rank_of(pid: str, mark: bytes) -> int | None:
    """The MPI rank of process ``pid`` if its environment carries ``mark``; else None."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:  # not ours to read, or it ended
        return None
    if mark not in environ:
        return None
    for entry in environ:
        for variable in RANK_VARIABLES:
            if entry.startswith(variable) and entry[len(variable):].isdigit():
                return int(entry[len(variable):])
    return None


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
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) not in self._pids and int(entry) != os.getpid():
                rank = _rank_of(entry, self._mark)
                if rank is not None:
                    self._pids[int(entry)] = rank

    def _run(self) -> None:
        last: dict[int, int] = {}
        tick = 0
        while not self._stop.wait(PERIOD_S):
            if tick % FIND_EVERY == 0:
                self._find()
            tick += 1
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
