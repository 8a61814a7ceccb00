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
import os
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

from contend.errors import UserError

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


def environment(variables: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without its CONTEND_THROTTLE_* variables, then ``variables``: the
    settings given are the library's whole configuration (a stray CONTEND_THROTTLE_CONFIG or _NODE of
    the caller's would change the policy run)."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith(PREFIX)}, **variables}


def check(checker: Path, variables: Mapping[str, str]) -> dict | str:
    """The settings in force by the library's own rules (``throttle-check``, native/throttle/check),
    without MPI: a dict, or the library's one-line reason for refusing them."""
    try:
        done = subprocess.run([str(checker)], env=environment(variables), capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"throttle: {checker} did not run: {exc}") from None
    if done.returncode == 0:
        return json.loads(done.stdout)
    lines = done.stderr.strip().splitlines()
    if done.returncode != 2 or len(lines) != 1:
        raise UserError(f"throttle: {checker} failed (exit {done.returncode}): {' '.join(lines)[:300]}")
    return lines[0]


def preload(program: Sequence[str], library: Path, variables: Mapping[str, str]) -> list[str]:
    """``program`` run with the library preloaded and the variables set."""
    return ["env", f"LD_PRELOAD={library}", *(f"{k}={v}" for k, v in variables.items()), *program]


def read_stats(path: Path) -> list[dict]:
    """The counters each rank wrote at MPI_Finalize (``CONTEND_THROTTLE_STATS``), in rank order."""
    lines = Path(path).read_text().splitlines() if Path(path).exists() else []
    return sorted((json.loads(line) for line in lines if line.strip()), key=lambda row: row["rank"])
