"""OS noise: settings for the engine's noise model (``settings``), noise traces (``trace``) and the
selfish-detour measurement behind ``contend noise measure`` (``measure``)."""

from contend.noise.settings import NoiseSettings, from_table, parse_spec, resolve
from contend.noise.trace import NoiseTrace, read_trace, write_trace

__all__ = ["NoiseSettings", "NoiseTrace", "from_table", "parse_spec", "read_trace", "resolve", "write_trace"]
