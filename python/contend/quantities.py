"""Counts and byte sizes as users type them: ``1024``, ``2^20``, ``64KiB``, ``1MB``.

Times and per-byte costs are parsed by the engine (``parse_time``, ``parse_per_byte``); this module only
covers the integers of the front end: rank counts and message sizes.
"""

from __future__ import annotations

import re

from contend.errors import UserError

# Binary and decimal multiples; "k" alone is read as 1000 like "kB".
_BYTE_UNITS = {
    "": 1, "b": 1,
    "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
_SIZE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
_POWER = re.compile(r"^\s*(\d+)\s*\^\s*(\d+)\s*$")

# Anything larger does not fit the engine's 64-bit integers (sizes cross the bindings as i64).
MAX_U64 = 2**64 - 1
MAX_I64 = 2**63 - 1


def parse_count(text: str | int, what: str, *, minimum: int = 0, maximum: int = MAX_U64) -> int:
    """An integer written as ``1048576`` or ``2^20``, checked against [minimum, maximum].

    >>> parse_count("2^20", "--ranks")
    1048576
    """
    if isinstance(text, bool):
        raise UserError(f"{what}: expected an integer, got {text!r}")
    if isinstance(text, int):
        value = text
    else:
        power = _POWER.match(str(text))
        if power:
            base, exponent = int(power.group(1)), int(power.group(2))
            if exponent > 64:
                raise UserError(f"{what}: {text!r} is too large")
            value = base**exponent
        elif str(text).strip().isdigit():
            value = int(str(text))
        else:
            raise UserError(f"{what}: expected a non-negative integer (e.g. 1024 or 2^10), got {text!r}")
    if not minimum <= value <= maximum:
        raise UserError(f"{what}: {value} is out of range [{minimum}, {maximum}]")
    return value


def parse_bytes(text: str | int, what: str) -> int:
    """A byte count: ``65536``, ``64KiB``, ``1MB``, ``2^17``.

    >>> parse_bytes("128KiB", "--bytes"), parse_bytes("1MB", "--bytes")
    (131072, 1000000)
    """
    if isinstance(text, (int, bool)) or _POWER.match(str(text)):
        return parse_count(text, what, maximum=MAX_I64)
    match = _SIZE.match(str(text))
    unit = match.group(2).lower() if match else None
    if unit not in _BYTE_UNITS:
        raise UserError(f"{what}: expected a byte count such as 1024, 64KiB or 1MB, got {text!r}")
    return parse_count(int(match.group(1)) * _BYTE_UNITS[unit], what, maximum=MAX_I64)
