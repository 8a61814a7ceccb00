"""The ``[mpi]`` table of a machine file: costs of the MPI library that no message carries, which the
trace converter adds to a replayed program's schedule (docs/models.md, "Replaying traces")::

    [mpi]
    collective_entry = "190ns"   # CPU time of entering a collective beyond its messages: a calc
                                 #   before each collective call of every rank (bench fit measures it)

The simulator itself reads none of it: a schedule written by hand or generated says its own costs.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from contend.engine import parse_quantity
from contend.machine.tomlfile import reject_unknown_keys

KEYS = ("collective_entry",)


def mpi_params(table: Mapping[str, Any], where: Callable[[str], str]) -> dict[str, int]:
    """The converter's options from an ``[mpi]`` table; ``where(key)`` locates a key."""
    reject_unknown_keys(table, KEYS, where)
    return {"collective_entry": collective_entry_ns(table.get("collective_entry", 0), where("collective_entry"))}


def collective_entry_ns(value: object, where: str) -> int:
    """A collective's entry time (a machine file's value or ``--collective-entry``) in whole ns, the
    resolution of a schedule's calcs."""
    return (parse_quantity(value, where) + 500) // 1000
