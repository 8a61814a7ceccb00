"""Which repeated runs share the machine's most common state (contend.native.bench.repeats)."""

from __future__ import annotations

import numpy as np

from contend.native.bench.repeats import common_state

SIZES = np.array([2.0**k for k in range(13)])
FAST = 1900 + 0.25 * SIZES  # round trips (ns) in the fast state
SLOW = 2600 + 1.0 * SIZES  # the slow state: a third slower at small sizes, eager copies at half speed


def test_each_group_keeps_its_runs_in_the_common_state():
    parameters = [FAST * 1.02, SLOW, FAST * 0.99, FAST]
    checks = [SLOW * 1.01, FAST * 1.01, FAST * 0.98, SLOW]
    assert common_state([parameters, checks]) == [[0, 2, 3], [1, 2]]


def test_a_stall_at_one_size_does_not_make_another_state():
    stalled = FAST.copy()
    stalled[5] *= 3
    assert common_state([[FAST, stalled, FAST * 1.03], [FAST * 0.97]]) == [[0, 1, 2], [0]]


def test_without_a_common_state_every_run_is_kept():
    spread = [FAST * factor for factor in (1.0, 1.3, 1.7, 2.2)]
    assert common_state([spread[:2], spread[2:]]) == [[0, 1], [0, 1]]


def test_a_group_with_no_run_in_the_common_state_keeps_all_its_runs():
    assert common_state([[FAST, FAST * 1.01, FAST * 0.99], [SLOW, SLOW * 1.01]]) == [[0, 1, 2], [0, 1]]
