"""A rich progress bar for long simulations, fed by the engine's progress callback.

The engine calls back every few million events, so short runs never show a bar at all.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


@contextlib.contextmanager
def simulation_progress(description: str = "simulating", unit: str = "ops") -> Iterator[Callable[[int, int], None]]:
    """Yields ``callback(done, total)`` (counted in ``unit``) that draws a bar on stderr once the first call comes.
    Only on a terminal: elsewhere rich would leave an empty line on stderr, before any error message."""
    console = Console(stderr=True)
    progress = Progress(
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
    task = None

    def update(done: int, total: int) -> None:
        nonlocal task
        if task is None:
            progress.start()
            task = progress.add_task(description, total=total)
        progress.update(task, completed=done)

    try:
        yield update
    finally:
        if task is not None:
            progress.stop()


@contextlib.contextmanager
def count_progress(description: str, unit: str, enabled: bool = True) -> Iterator[Callable[[int, int], None]]:
    """Yields ``callback(done, total)`` for runs counted one by one (``contend.parallel.parallel_map``'s
    progress): a bar on stderr, gone when the block ends. Only on a terminal (as above), and not where
    ``enabled`` is False (MPI ranks other than the root)."""
    console = Console(stderr=True)
    with Progress(TextColumn(f"[bold]{description}"), BarColumn(), MofNCompleteColumn(), TextColumn(unit),
                  TimeElapsedColumn(), console=console, transient=True,
                  disable=not (enabled and console.is_interactive)) as bar:
        task = bar.add_task(description, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)
