"""Independent runs shared out: over MPI ranks under ``mpiexec`` (mpi4py), over local processes
otherwise. The one place that decides how ``contend tune`` (NIC sweeps) and ``contend whatif`` fan out
their simulations, and which process writes the outputs."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Sequence


def under_mpi() -> bool:
    """Launched by mpiexec with more than one rank (and mpi4py importable)."""
    size = next((os.environ[k] for k in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE") if k in os.environ), "1")
    if int(size) <= 1:
        return False
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def is_root() -> bool:
    """Whether this process writes the outputs: rank 0 under mpiexec, always otherwise."""
    if not under_mpi():
        return True
    from mpi4py import MPI

    return MPI.COMM_WORLD.rank == 0


def parallel_map(function: Callable[[Any], Any], items: Sequence[Any], *, workers: int | None = None,
                 progress: Callable[[int, int], None] | None = None) -> list[Any]:
    """``[function(item) for item in items]``, in their order. Under mpiexec the ranks share the items
    (round robin) and every rank gets every answer; otherwise ``workers`` local processes (default: 2,
    at most the CPUs; ``function`` must then be a module-level function and the items picklable).
    ``progress(done, total)`` after each answer (under mpiexec once, at the end)."""
    if under_mpi():
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        mine = [(i, function(item)) for i, item in enumerate(items) if i % comm.size == comm.rank]
        gathered = comm.allgather(mine)
        answers = [answer for _, answer in sorted((pair for part in gathered for pair in part), key=lambda x: x[0])]
        if progress:
            progress(len(items), len(items))
        return answers
    workers = workers or min(2, os.cpu_count() or 1)
    answers: list[Any] = []
    if workers <= 1 or len(items) <= 1:
        for i, item in enumerate(items):
            answers.append(function(item))
            if progress:
                progress(i + 1, len(items))
        return answers
    with ProcessPoolExecutor(max_workers=min(workers, len(items))) as pool:
        try:
            for i, answer in enumerate(pool.map(function, items)):
                answers.append(answer)
                if progress:
                    progress(i + 1, len(items))
        except BaseException:  # an error (a bad input found by one run) or ^C: the queued runs are moot
            pool.shutdown(cancel_futures=True)
            raise
    return answers
