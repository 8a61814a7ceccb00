"""Repeated measurements on a shared machine: which runs were taken in the same state of the machine.

This virtual machine moves between states in which the same round trips differ by a third (small
messages) to a half (eager copies of kilobytes run at half speed in the slow one); a state can last a
single run of a third of a second or tens of seconds, and another job can slow a run for a while.
Per-size medians over runs that mix states take some sizes from one state and some from the other,
and the parameter runs and the check runs of a fit then describe different machines.
``common_state`` keeps, in every group of runs, those in the machine's most common state.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

SAME_STATE = 0.10  # two runs agree when their times differ by at most 10% at the median size


def common_state(groups: Sequence[Sequence[Sequence[float]]]) -> list[list[int]]:
    """For each group, the indices of its runs measured in the most common state.

    ``groups[g][i]`` holds the times of run i of group g at every size, the same sizes in the same
    order for all runs of all groups (e.g. round trips from parameter runs and from check runs). Two
    runs agree when the median over sizes of their relative difference is at most SAME_STATE: a few
    sizes hit by a short stall do not count, a state that changes most sizes does. The run that agrees
    with the most others, of any group, is the centre; every group keeps its runs that agree with it.
    When that leaves a group empty or keeps fewer than half of all runs, there is no common state and
    every run is kept.

    >>> common_state([[[2.0, 3.0], [2.7, 6.0], [2.1, 3.1]], [[2.6, 6.1], [2.0, 3.1]]])
    [[0, 2], [1]]
    """
    curves = np.log(np.asarray([run for group in groups for run in group], dtype=float))
    owner = np.repeat(np.arange(len(groups)), [len(group) for group in groups])
    start = np.concatenate([[0], np.cumsum([len(group) for group in groups])])
    differences = np.median(np.abs(curves[:, None, :] - curves[None, :, :]), axis=2)
    agree = differences <= np.log1p(SAME_STATE)
    kept = agree[int(np.argmax(agree.sum(axis=1)))]
    per_group = [[int(i - start[g]) for i in np.flatnonzero(kept & (owner == g))] for g in range(len(groups))]
    if all(per_group) and 2 * kept.sum() >= len(curves):
        return per_group
    return [list(range(len(group))) for group in groups]
