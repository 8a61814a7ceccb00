"""``Finding``: one step of an experiment (the demo tour, a reproduction), ready to be reported; ``stopwatch``:
the wall time of each step, kept beside its results."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

T = TypeVar("T")


@dataclass
class Finding:
    """An explanation, a table, whether its check passed, optionally a plot and files beside the report."""

    slug: str
    title: str
    summary: str
    columns: list[str]
    rows: list[list[Any]]
    ok: bool = True
    plot: str | None = None
    files: list[tuple[str, str]] = field(default_factory=list)


def stopwatch(seconds: dict[str, float]) -> Callable[[str, Callable[[], T]], T]:
    """``timed(key, fn)``: runs ``fn`` and records its wall time (s, 3 decimals) in ``seconds[key]``."""

    def timed(key: str, fn: Callable[[], T]) -> T:
        t0 = time.perf_counter()
        value = fn()
        seconds[key] = round(time.perf_counter() - t0, 3)
        return value

    return timed
