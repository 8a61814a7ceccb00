"""``stopwatch``: the wall time of each step of an experiment, kept beside its results."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def stopwatch(seconds: dict[str, float]) -> Callable[[str, Callable[[], T]], T]:
    """``timed(key, fn)``: runs ``fn`` and records its wall time (s, 3 decimals) in ``seconds[key]``."""

    def timed(key: str, fn: Callable[[], T]) -> T:
        t0 = time.perf_counter()
        value = fn()
        seconds[key] = round(time.perf_counter() - t0, 3)
        return value

    return timed
