"""contend: measure, simulate, diagnose and avoid contention in parallel programs."""

__version__ = "0.1.0"
