"""A rich progress bar for long simulations, fed by the engine's progress callback (every few million
events, so short runs never show a bar at all) or by runs counted one by one (``contend tune``'s sweep
points, ``contend whatif``'s runs: ``contend.parallel.parallel_map``'s progress).
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator


@contextlib.contextmanager
def simulation_progress(description: str = "simulating", unit: str = "ops") -> Iterator[Callable[[int, int], None]]:
    """Yields ``callback(done, total)`` (counted in ``unit``) that draws a bar on stderr once the first call comes.
    Only on a terminal: elsewhere rich would leave an empty line on stderr, before any error message.
    rich is loaded at that first call: a short run, which never calls, does not pay for it."""
    progress = None
    task = None

    def update(done: int, total: int) -> None:
        nonlocal progress, task
        if task is None:
            if done >= total:  # the final call of a run too short for a report: nothing to show
                return
            progress = _bar(unit)
            progress.start()
            task = progress.add_task(description, total=total)
        progress.update(task, completed=done)

    try:
        yield update
    finally:
        if task is not None:
            progress.stop()


def _bar(unit: str):
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    console = Console(stderr=True)
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=not console.is_interactive,
    )
