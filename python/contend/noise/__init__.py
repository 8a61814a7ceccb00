"""OS noise: settings for the engine's noise model (``settings``), noise traces (``trace``) and the
selfish-detour measurement behind ``contend noise measure`` (``measure``)."""

from __future__ import annotations

import importlib

# Loaded on first use (PEP 562): the machine files need the settings, not the traces' pandas.
_PUBLIC = {
    "NoiseSettings": "contend.noise.settings",
    "from_table": "contend.noise.settings",
    "parse_spec": "contend.noise.settings",
    "resolve": "contend.noise.settings",
    "NoiseTrace": "contend.noise.trace",
    "read_trace": "contend.noise.trace",
    "write_trace": "contend.noise.trace",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'contend.noise' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
