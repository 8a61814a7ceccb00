"""Counts and byte sizes as users type them: ``1024``, ``2^20``, ``64KiB``, ``1MB``.

Times and per-byte costs are parsed by the engine (``parse_time``, ``parse_per_byte``); this module only
covers the numbers of the front end: rank counts, message sizes and link bandwidths, and the short
size labels of tables and plots.
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


_BANDWIDTH = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKMGT]?i?)(B|bit)/s\s*$")
_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
           "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}


def parse_bandwidth(text: str, what: str) -> float:
    """A link bandwidth in bytes per second: ``425MB/s``, ``10Gbit/s``, ``1.5GiB/s``.

    >>> parse_bandwidth("10Gbit/s", "link"), parse_bandwidth("425MB/s", "link")
    (1250000000.0, 425000000.0)
    """
    match = _BANDWIDTH.match(str(text))
    if not match or match.group(2) not in _PREFIX:
        raise UserError(f"{what}: expected a bandwidth such as 425MB/s or 10Gbit/s, got {text!r}")
    value = float(match.group(1)) * _PREFIX[match.group(2)] / (8 if match.group(3) == "bit" else 1)
    if value <= 0:
        raise UserError(f"{what}: a bandwidth must be positive, got {text!r}")
    return value


def format_bytes(size: int) -> str:
    """A message size as a short label: whole KiB and MiB where they are whole.

    >>> format_bytes(8), format_bytes(65536), format_bytes(3 * 2**20), format_bytes(1500)
    ('8 B', '64 KiB', '3 MiB', '1500 B')
    """
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def bounded_number(text: str, what: str, low: float, high: float) -> float:
    """``text`` as a float in [low, high]; otherwise one UserError line naming the option ``what``."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise UserError(f"{what}: expected a number, got {text!r}") from None
    if not low <= value <= high:
        raise UserError(f"{what}: expected {low:g} <= value <= {high:g}, got {text}")
    return value
