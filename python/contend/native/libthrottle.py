"""Run MPI programs under ``libcontend-throttle.so`` (native/throttle): the command that preloads it
into each rank with its settings, and the per-rank counters it writes.

The library reads ``CONTEND_THROTTLE_*`` variables (docs/measure.md); ``settings`` spells them from
keyword arguments. The variables go on the rank's command line through ``env``, so only the ranks, not
``mpiexec`` or a fabric wrapper, load the library.

>>> settings("token", tokens=2, stall_ms=5000)
{'CONTEND_THROTTLE_POLICY': 'token', 'CONTEND_THROTTLE_TOKENS': '2', 'CONTEND_THROTTLE_STALL_MS': '5000'}
>>> preload(["./prog", "-x"], Path("/lib/libcontend-throttle.so"), {"CONTEND_THROTTLE_POLICY": "none"})
['env', 'LD_PRELOAD=/lib/libcontend-throttle.so', 'CONTEND_THROTTLE_POLICY=none', './prog', '-x']
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence

PREFIX = "CONTEND_THROTTLE_"


def settings(policy: str, **values: object) -> dict[str, str]:
    """The variables for a policy and its values (keyword names are the variables' lower-case
    suffixes: tokens, size_per_token, stall_ms, gap_ns, servers, node, ranks_per_node, job, stats, config).
    None values are left out."""
    out = {f"{PREFIX}POLICY": policy}
    for key, value in values.items():
        if value is not None:
            out[f"{PREFIX}{key.upper()}"] = str(value)
    return out


def preload(program: Sequence[str], library: Path, variables: Mapping[str, str]) -> list[str]:
    """``program`` run with the library preloaded and the variables set."""
    return ["env", f"LD_PRELOAD={library}", *(f"{k}={v}" for k, v in variables.items()), *program]


def read_stats(path: Path) -> list[dict]:
    """The counters each rank wrote at MPI_Finalize (``CONTEND_THROTTLE_STATS``), in rank order."""
    lines = Path(path).read_text().splitlines() if Path(path).exists() else []
    return sorted((json.loads(line) for line in lines if line.strip()), key=lambda row: row["rank"])
