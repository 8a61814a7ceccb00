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
    ``progress(done, total)`` after each answer (under mpiexec once, at the end). Under mpiexec the
    first failure (by item) is raised on rank 0 and the other ranks exit with code 2, after every rank
    has stopped: an error on one rank never leaves the others waiting."""
    if under_mpi():
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        mine: list[tuple[int, bool, Any]] = []
        for i in range(comm.rank, len(items), comm.size):
            try:
                mine.append((i, True, function(items[i])))
            except Exception as exc:  # every rank must reach the allgather, or the others wait forever
                mine.append((i, False, exc))
                break
        done = sorted((entry for part in comm.allgather(mine) for entry in part), key=lambda entry: entry[0])
        failed = next((error for _, ok, error in done if not ok), None)
        if failed is not None:
            if comm.rank == 0:
                raise failed
            raise SystemExit(2)  # the same failure: rank 0 alone says it, on one line
        if progress:
            progress(len(items), len(items))
        return [answer for _, _, answer in done]
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
