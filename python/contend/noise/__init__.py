"""OS noise: settings for the engine's noise model (``settings``), noise traces (``trace``) and the
selfish-detour measurement behind ``contend noise measure`` (``measure``)."""

from __future__ import annotations

from contend.lazy import lazy_names

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

__getattr__ = lazy_names(__name__, _PUBLIC)
