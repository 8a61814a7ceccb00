"""contend: measure, simulate, diagnose and avoid contention in parallel programs."""

__version__ = "0.1.0"

from contend.machine import Machine, load_machine, preset_names  # noqa: E402
from contend.records import read_records  # noqa: E402
from contend.result import SimulationResult  # noqa: E402
from contend.simulate import simulate  # noqa: E402

__all__ = ["Machine", "SimulationResult", "load_machine", "preset_names", "read_records", "simulate"]
