"""Prediction against reality (``contend predict``; docs/measure.md, "Prediction against reality").

A real MPI program is run several times untraced and several times under the tracer, alternating, so a
change of the machine's state reaches both kinds alike. Each traced run is converted to a schedule
(``contend goal convert``) and simulated on a machine model; its prediction is compared with the time
the runs took between MPI_Init and MPI_Finalize:

- untraced runs: ``libcontend-span.so`` (native/span) takes both ends after a barrier, on rank 0;
- traced runs: the tracer's clock samples at MPI_Init and MPI_Finalize (rank 0's ``at_init`` and
  ``at_finalize``, each taken once every rank has arrived), so a traced run also measures itself.

The prediction's error is against the untraced median (the program as it runs without us) and, run by
run, against the traced run it was converted from (the model's own error, without the tracer's cost).

With a throttle policy (``Throttle``) the untraced runs run under libcontend-throttle.so with it, and the
prediction simulates the same policy on the traced runs' schedules: predicted against measured time of
the throttled program. The traced runs stay unthrottled (the tracer and the library both wrap the MPI
calls; the schedule is the program's, the policy the model's), so they are compared with the
unthrottled prediction, as without a policy.
"""

from __future__ import annotations

import contextlib
import io
import os
import statistics
from contend.atomic import scratch_directory
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from contend.errors import UserError

if TYPE_CHECKING:
    from contend.machine.file import Machine
    from contend.native.fabric import Fabric
    from contend.simulation.critical_path import CriticalPath
    from contend.noise.settings import NoiseSettings

# Records the tracer keeps per rank in a predicted run (96 B each): a dropped record would leave a hole
# in the schedule, so a run that drops any is refused and names the option to raise.
DEFAULT_RECORDS = 1 << 20


@dataclass(frozen=True)
class Throttle:
    """A policy as the engine takes it (``contend.machine.admission.parse_spec``) and the ranks per node,
    for both the library's runs and the simulation. ``ranks_per_node`` None: the nodes are the emulated
    fabric's (the library tells them by host name, the model by the machine's placement)."""

    policy: dict
    ranks_per_node: int | None

    def library_variables(self, stats: Path | None = None) -> dict[str, str]:
        from contend.machine.admission import library_values
        from contend.native import libthrottle

        values = library_values(self.policy)
        return libthrottle.settings(values.pop("policy"), ranks_per_node=self.ranks_per_node, stats=stats, **values)

    def check(self, what: str) -> None:
        """Refuse before any run what the library would refuse in each rank's MPI_Init (its own rules,
        ``throttle-check``: e.g. at most 64 proxy servers, a gap of at most 1 s); ``what`` names the
        options in the message."""
        from contend.native import libthrottle, mpi

        checker = mpi.throttle_checker(mpi.find_mpi())
        if not checker.is_file():
            raise UserError(f"{checker} is not built: run `contend native build`")
        refused = libthrottle.check(checker, self.library_variables())
        if isinstance(refused, str):
            raise UserError(f"{what}: libcontend-throttle.so cannot run it: {refused}")


@dataclass
class Measured:
    """Times in ns of one setting: untraced spans, traced spans and the predictions of the traced runs
    (one per traced run, in the same order)."""

    untraced_ns: list[int] = field(default_factory=list)
    traced_ns: list[int] = field(default_factory=list)
    predicted_ns: list[int] = field(default_factory=list)
    schedule_ns: list[int] = field(default_factory=list)  # the schedules' own makespans (no outside time)
    noisy_ns: list[int] = field(default_factory=list)  # predictions with the given noise, if any
    # with a throttle policy: the untraced runs are throttled and predicted_ns simulates the policy;
    # plain_ns are the predictions without it, of the unthrottled traced runs
    plain_ns: list[int] = field(default_factory=list)
    ranks: int = 0
    operations: int = 0  # schedule operations of the last converted run
    # where the time of the last converted run's schedule goes (its prediction's critical path)
    critical_path: CriticalPath | None = None
    warnings: list[str] = field(default_factory=list)  # the conversions'

    def summary(self) -> dict:
        """Medians and ranges; errors in % of the measured time (positive: predicted too long)."""
        out: dict = {"ranks": self.ranks, "operations": self.operations, "warnings": list(self.warnings),
                     "critical_path": None if self.critical_path is None else self.critical_path.to_dict()}
        for key in ("untraced_ns", "traced_ns", "predicted_ns", "schedule_ns", "noisy_ns", "plain_ns"):
            values = getattr(self, key)
            out[key] = list(values)
            out[key.replace("_ns", "")] = _spread(values)
        predicted = out["predicted"]["median_ns"]
        untraced, traced = out["untraced"]["median_ns"], out["traced"]["median_ns"]
        throttled = bool(self.plain_ns)
        out["tracing_overhead_pct"] = None if throttled else _pct(traced, untraced)
        out["error_pct"] = _pct(predicted, untraced)
        out["error_noisy_pct"] = _pct(out["noisy"]["median_ns"], untraced)
        per_run = [_pct(p, t) for p, t in zip(self.plain_ns if throttled else self.predicted_ns, self.traced_ns)]
        out["error_vs_traced_pct"] = statistics.median(per_run) if per_run else None
        return out


def _spread(values: Sequence[int]) -> dict:
    if not values:
        return {"median_ns": None, "min_ns": None, "max_ns": None, "runs": 0}
    return {"median_ns": statistics.median(values), "min_ns": min(values), "max_ns": max(values),
            "runs": len(values)}


def _pct(value: float | None, reference: float | None) -> float | None:
    if value is None or not reference:
        return None
    return 100.0 * (value - reference) / reference


def fifo_command(command: Sequence[str]) -> list[str]:
    """The launch command with every program under ``chrt -f 1`` (SCHED_FIFO, root): other jobs on the
    host then cannot preempt a rank (the kernel still leaves them 5% of each second). Only for at most
    one rank per core: ranks of one priority spinning on one core never let each other run."""
    import shutil

    from contend.native import mpi

    if shutil.which("chrt") is None:
        raise UserError("predict: --fifo needs `chrt` (Debian: util-linux)")
    if os.geteuid() != 0:
        raise UserError("predict: --fifo needs root (real-time scheduling)")
    starts = mpi.program_starts(command, mpi.launcher_mpi(command[0]).flavor)
    out = list(command)
    for start in reversed(starts):
        out[start:start] = ["chrt", "-f", "1"]
    return out


def fabric_command(command: Sequence[str], built: Fabric, scratch: Path, placement: str | None = None) -> tuple[list[str], np.ndarray]:
    """``mpiexec -n N prog args`` as the launch of N ranks on the emulated fabric ``built``, its rank
    wrapper written into ``scratch``, and the node of each rank: rank r on node r // ppn, or where the
    placement file ``placement`` puts it (``contend map``'s placement.toml or a list of nodes,
    ``contend.mapping.formats.read_placement``)."""
    from contend.native import fabric as fabric_module
    from contend.native import mpi
    from contend.mapping.formats import read_placement
    from contend.machine.quantities import parse_count

    library = mpi.launcher_mpi(command[0])
    starts = mpi.program_starts(command, library.flavor)
    options = list(command[1:starts[0]])
    if len(starts) != 1 or len(options) != 2 or options[0].lstrip("-") not in ("n", "np"):
        raise UserError("predict: --fabric takes `mpiexec -n N PROGRAM [ARGS]` (the placement on the fabric's "
                        "nodes is contend's)")
    ranks = parse_count(options[1], f"predict --fabric: -n (at most {built.nodes} nodes x {built.ppn} ranks)",
                        minimum=1, maximum=built.nodes * built.ppn)
    node_of_rank = (np.arange(ranks, dtype=np.int64) // built.ppn if placement is None
                    else read_placement(placement, ranks, built.nodes, built.ppn))
    wrapper = fabric_module.write_rank_wrapper(built, scratch, node_of_rank)
    argv, _ = mpi.launch_command(library, ranks, command[starts[0]:], mpi.Placement(wrapper))
    return argv, node_of_rank


def span_library():
    from contend.native import mpi

    library = mpi.build_dir(mpi.find_mpi()) / "libcontend-span.so"
    if not library.is_file():
        raise UserError(f"{library} is not built: run `contend native build`")
    return library


def untraced_span(command: Sequence[str], timeout_s: float, echo: Callable[[str], None],
                  throttle: Throttle | None = None) -> int:
    """Run the command once without the tracer (under libcontend-throttle.so with ``throttle``); its
    time between MPI_Init and MPI_Finalize in ns."""
    from contend.native import libthrottle, mpi

    with scratch_directory("contend-span-") as scratch:
        span_file = Path(scratch) / "span"
        env = libthrottle.environment({})  # the caller's CONTEND_THROTTLE_* would change the policy run
        preload = [str(span_library())]  # first: its calls go on to the throttle library's (native/span)
        if throttle is not None:
            library = mpi.throttle_library(mpi.find_mpi())
            if not library.is_file():
                raise UserError(f"{library} is not built: run `contend native build`")
            preload.append(str(library))
            env.update(throttle.library_variables(Path(scratch) / "counters.jsonl"))
        env["LD_PRELOAD"] = ":".join(preload + ([env["LD_PRELOAD"]] if env.get("LD_PRELOAD") else []))
        env["CONTEND_SPAN_FILE"] = str(span_file)
        env[mpi.LAUNCHER_MARK] = str(os.getpid())
        finished = mpi.run_streaming(command, env, echo, timeout_s)
        _check_finished(finished, "the untraced run", timeout_s)
        if throttle is not None and not libthrottle.read_stats(Path(scratch) / "counters.jsonl"):
            raise UserError(f"predict: libcontend-throttle.so did not run in the ranks of {_program(command)} (a "
                            "program that MPI does not start, or one linked without MPI?)")
        try:
            return int(span_file.read_text())
        except (OSError, ValueError):
            raise UserError(f"predict: the untraced run of {_program(command)} did not report its time: did the "
                            "program call MPI_Init and MPI_Finalize?") from None


def _program(command: Sequence[str]) -> str:
    """The program a launch command runs (its first, for MPMD), to name it; else the command's first word."""
    from contend.native import mpi

    try:
        return command[mpi.program_starts(command, mpi.launcher_mpi(command[0]).flavor)[0]]
    except (UserError, IndexError):
        return command[0]


def _check_finished(finished, what: str, timeout_s: float) -> None:
    if finished.timed_out:
        raise UserError(f"predict: {what} ran longer than --timeout {timeout_s:g} s and was ended")
    if finished.returncode != 0:
        last = finished.stderr.strip().splitlines()[-1:] or [""]
        raise UserError(f"predict: {what} exited with code {finished.returncode}" +
                        (f": {last[0]}" if last[0] else ""))


def traced_run(command: Sequence[str], directory: Path, records: int, timeout_s: float) -> None:
    """Run the command under the tracer, its rank files into ``directory`` (`contend trace`'s run)."""
    from contend.native.trace.launch import prepare_directory, run_traced

    directory = prepare_directory(directory)
    with contextlib.redirect_stdout(io.StringIO()):  # the program's output, as the untraced runs': not ours
        run_traced(list(command), directory, records=records, depth=1, clock="tsc", timeout_s=timeout_s)


def traced_span(directory: str | os.PathLike) -> tuple[int, int]:
    """A trace directory's own time between MPI_Init and MPI_Finalize in ns (rank 0's two clock
    samples), and its rank count. Refuses a trace that dropped records or never finalized."""
    from contend.native.trace.files import read_directory

    traces = read_directory(directory)
    for trace in traces:
        if int(trace.header["dropped"]):
            raise UserError(f"{trace.path}: {int(trace.header['dropped'])} records dropped (the buffer was "
                            "full): raise --records")
        if int(trace.header["at_finalize"]["rtt_ns"]) < 0:
            raise UserError(f"{trace.path}: rank {trace.rank} never reached MPI_Finalize: no time to compare")
    first = traces[0].header
    span = int(first["at_finalize"]["local_ns"]) - int(first["at_init"]["local_ns"])
    if span <= 0:
        raise UserError(f"{traces[0].path}: the clock sample at MPI_Finalize is not after the one at MPI_Init")
    return span, len(traces)


def convert(directory: Path, goal: Path, ranks: int | None = None, algorithms: str = "auto",
            in_place: bool = True, mpi: Mapping[str, int] | None = None) -> list[str]:
    """The trace directory's schedule (``contend goal convert``'s engine conversion, with the collective
    algorithms of preset ``algorithms``, ``auto`` by the trace's hosts: ``algorithms_of``), extrapolated
    to ``ranks`` if given (``--ranks``), one-sided operations MPI does in place as work unless
    ``in_place`` is false (``--no-in-place``), with the MPI library's costs ``mpi`` (a machine's
    ``Machine.mpi``: ``--collective-entry``); returns its warnings."""
    from contend.native.trace.replay import algorithms_of, convert_input

    preset = algorithms_of(directory, algorithms, extrapolated=ranks is not None)
    summary, read_warnings = convert_input(str(directory), str(goal), ranks=ranks, preset=preset,
                                           in_place=in_place, **(mpi or {}))
    return read_warnings + list(summary["warnings"])


def outside_calls(directory: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Per rank (ns): from its clock sample at MPI_Init to its first record, and from its last record's
    return to its clock sample at MPI_Finalize: what a schedule converted from the records does not hold
    (its ranks start at their first record). With the tracer's init and finalize records that is the
    clock synchronisation at both ends; in traces without them, all the time outside MPI calls there."""
    from contend.native.trace.files import read_directory

    leads, tails = [], []
    for trace in read_directory(directory):
        at_init = int(trace.header["at_init"]["local_ns"])
        at_finalize = int(trace.header["at_finalize"]["local_ns"])
        if len(trace.records) == 0:
            leads.append(at_finalize - at_init)
            tails.append(0)
            continue
        leads.append(max(0, int(trace.to_ns(trace.records["posted"][:1])[0]) - at_init))
        tails.append(max(0, at_finalize - int(trace.to_ns(trace.records["returned"]).max())))
    return np.array(leads, dtype=np.int64), np.array(tails, dtype=np.int64)


def predicted_span(goal: Path, machine: str | Machine, directory: Path, noise: NoiseSettings | bool | None = None,
                   ranks: int | None = None, throttle: Throttle | None = None,
                   critical_path: bool = False) -> tuple[int, int, int, CriticalPath | None]:
    """The predicted time between MPI_Init and MPI_Finalize in ns, the schedule's own makespan and operations,
    and (``critical_path``) where the schedule's makespan goes. The schedule simulated on the machine gives
    each rank's finish; a rank starts its first call after its time before it (``outside_calls``), and the
    run ends after the last rank's finish and the time after the last call. That is the least over the ranks
    of their time after their last call: each rank's clock sample at MPI_Finalize comes only once rank 0 has
    served the ranks before it (native/trace/init.c), so the ranks that arrived early also waited there; the
    least waited least. ``noise``: noise replacing the machine's, parsed once by the caller
    (``contend.noise.settings.resolve`` of a ``--noise`` spec; False: none), e.g. this host's measured
    trace. ``ranks``: the schedule was extrapolated to that many ranks, rank r + P·k being traced rank r's
    copy k, which takes its times outside the calls too. ``throttle``: the policy simulated, replacing the
    machine's."""
    from contend.simulation.simulate import simulate

    policy = {} if throttle is None else {"throttle": throttle.policy}
    if throttle is not None and throttle.ranks_per_node is not None:
        policy["ranks_per_node"] = throttle.ranks_per_node
    result = simulate(goal, machine=machine, noise=noise, critical_path=critical_path, **policy)
    if result.deadlock is not None:
        raise UserError(f"predict: the schedule converted from {directory} deadlocks in the simulation")
    leads, tails = outside_calls(directory)
    if ranks is not None:
        leads, tails = np.tile(leads, ranks // len(leads)), np.tile(tails, ranks // len(tails))
    finish = np.asarray(result.ranks, dtype=np.float64)
    if len(finish) != len(leads):
        raise UserError(f"predict: the schedule of {directory} has {len(finish)} ranks, the trace {len(leads)}")
    predicted = int(round(float(np.max(leads + finish) + np.min(tails))))
    return predicted, int(round(result.makespan)), int(result.ops), result.critical_path


def predict_traces(directories: Sequence[Path], machine: str | Machine, work: Path, measured: Measured,
                   noise: NoiseSettings | bool | None = None, ranks: int | None = None,
                   throttle: Throttle | None = None, algorithms: str = "auto") -> None:
    """Convert (collectives by preset ``algorithms``) and simulate each trace directory (extrapolated to
    ``ranks`` if given); its prediction joins ``measured``, with ``noise`` a second one with that noise,
    and with ``throttle`` the predictions simulate the policy and the unthrottled ones join
    ``plain_ns``."""
    from contend.machine.file import machine_of

    mpi = machine_of(machine).mpi
    for directory in directories:
        goal = work / "app.goal"
        # Nodes emulated on one host (--ranks-per-node) are separate nodes to the model: no window is
        # shared between them.
        emulated = throttle is not None and throttle.ranks_per_node is not None
        measured.warnings += [f"{directory}: {w}" for w in convert(directory, goal, ranks, algorithms, not emulated, mpi)]
        predicted, makespan, measured.operations, measured.critical_path = predicted_span(
            goal, machine, directory, ranks=ranks, throttle=throttle, critical_path=True)
        measured.predicted_ns.append(predicted)
        measured.schedule_ns.append(makespan)
        if throttle is not None:
            measured.plain_ns.append(predicted_span(goal, machine, directory, ranks=ranks)[0])
        if noise is not None:
            measured.noisy_ns.append(predicted_span(goal, machine, directory, noise, ranks, throttle)[0])


def predict_trace(directory: Path, machine: str, work: Path, noise: NoiseSettings | bool | None = None,
                  algorithms: str = "auto") -> Measured:
    """One existing trace directory: its own time against its prediction."""
    span, ranks = traced_span(directory)
    measured = Measured(traced_ns=[span], ranks=ranks)
    predict_traces([directory], machine, work, measured, noise, algorithms=algorithms)
    return measured


def measure_runs(command: Sequence[str], runs: int, traces: Path, *, records: int = DEFAULT_RECORDS,
                 timeout_s: float = 600.0, echo: Callable[[str], None] = lambda line: None,
                 progress: Callable[[str], None] = lambda text: None,
                 throttle: Throttle | None = None) -> tuple[Measured, list[Path]]:
    """``runs`` untraced (with ``throttle``: throttled) and ``runs`` traced runs of the command,
    alternating; the traced runs' rank files in ``traces``/run-K."""
    measured, directories = Measured(), []
    for run in range(runs):
        progress(f"run {run + 1}/{runs}: {'throttled' if throttle else 'untraced'}")
        measured.untraced_ns.append(untraced_span(command, timeout_s, echo, throttle))
        progress(f"run {run + 1}/{runs}: traced")
        directory = traces / f"run-{run + 1}"
        traced_run(command, directory, records, timeout_s)
        span, measured.ranks = traced_span(directory)
        measured.traced_ns.append(span)
        directories.append(directory)
    return measured, directories


def predict_command(command: Sequence[str], machine: str | Machine, runs: int, work: Path, *, records: int = DEFAULT_RECORDS,
                    noise: NoiseSettings | bool | None = None, timeout_s: float = 600.0, echo: Callable[[str], None] = lambda line: None,
                    progress: Callable[[str], None] = lambda text: None, throttle: Throttle | None = None,
                    algorithms: str = "auto") -> Measured:
    """Measure (``measure_runs``, the traces in ``work``/traces) and predict every traced run (collectives
    by preset ``algorithms``)."""
    measured, directories = measure_runs(command, runs, work / "traces", records=records, timeout_s=timeout_s,
                                         echo=echo, progress=progress, throttle=throttle)
    progress(f"converting and simulating {len(directories)} traced runs")
    predict_traces(directories, machine, work, measured, noise, throttle=throttle, algorithms=algorithms)
    return measured
