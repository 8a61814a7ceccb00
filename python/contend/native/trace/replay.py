"""Traced runs to schedules: which reader takes a trace, and its conversion to GOAL by the engine's replay
module (docs/models.md, "Replaying traces"). The one entry point for ``contend goal convert``,
``contend whatif`` and ``contend predict``."""

from __future__ import annotations

from pathlib import Path

from contend.engine import engine, user_errors
from contend.errors import UserError

# The engine's collective algorithm presets (engine/src/replay/algorithms.rs, `Preset`).
ALGORITHMS = ("mpich", "mpich-shm", "schedgen")
# Not a preset: MPICH's own choice for a traced run, by where its ranks ran (``algorithms_of``).
AUTO_ALGORITHMS = "auto"


def algorithms_of(directory: str | Path, choice: str, extrapolated: bool = False) -> str:
    """The preset ``choice`` stands for on a ``contend trace`` directory: ``auto`` is ``mpich-shm`` when
    every rank ran on one host (MPICH runs a node's collectives through shared memory) and the
    schedule is not extrapolated (its copies stand for other nodes), else ``mpich``."""
    if choice != AUTO_ALGORITHMS:
        return choice
    if extrapolated:
        return "mpich"
    from contend.native.trace.files import host_names

    hosts = host_names(directory)
    return "mpich-shm" if len(hosts) == 1 and b"" not in hosts else "mpich"


def trace_format(path: str) -> str:
    """Which reader takes INPUT (the engine's ``trace_format``, where readers of other formats join)."""
    if not Path(path).exists():
        raise UserError(f"{path}: no such file or directory")
    if Path(path).is_file() and path.endswith(".otf2"):
        return "otf2"
    kind = engine().trace_format(path)
    if kind is None:
        raise UserError(f"{path}: not a trace contend can read (a `contend trace` directory, a liballprof trace "
                        "set: directory or rank-0 file, or an OTF2 anchor file)")
    return kind


def convert_input(path: str, output: str, progress=None, kind: str | None = None, **options) -> tuple[dict, list[str]]:
    """Converts the trace at ``path`` (any format contend reads) to GOAL at ``output`` with the engine's
    ``convert_trace`` ``options`` (e.g. ``ranks`` to extrapolate); returns its summary and the readers'
    warnings. Trace problems raise UserError (file:line). Shared by ``goal convert``, ``whatif``
    and ``predict``. ``kind``: the format, when the caller has already asked ``trace_format``."""
    kind = kind or trace_format(path)
    source, read_warnings = path, []
    if kind == "otf2":  # read here with the otf2 package, handed to the engine as the tracer's records
        from contend.native.trace.otf2_import import otf2_calls

        calls, read_warnings = otf2_calls(path)
        source, kind = [(rank.name, rank.records.tobytes(), rank.comm_words) for rank in calls], "records"
    with user_errors():
        summary = engine().convert_trace(source, output, format=kind, progress=progress, **options)
    return summary, read_warnings
