"""Topology-aware mapping on the emulated fabric: the same program under the default (block) placement
and a mapped one, measured side by side and simulated on a machine file calibrated on the fabric.

The case: ``app-halo`` with DISTANCE = P/2 on a line (or ring) of P nodes, one rank per node, so rank r
exchanges its two halos with rank r + P/2 only. Block placement (rank r on node r) puts every partner
P/2 router links away, and on a line all P/2 pairs cross the middle link in both directions: that link
carries P/2 flows each way while the others idle. Placing each pair on two neighbouring nodes makes every
message one router link long and gives every pair its own link, so the bytes that shared one link now
flow in parallel: the communication should take about P/2 times less. It is the case Bhatele and Kale 2009 names
(partners placed far apart by a default that does not know the pattern), and one the fabric can show:
each link is a tbf-shaped veth, so sharing a link is sharing its rate.

The mapped placement is what ``contend map``'s ``topo`` method computes: the program is traced once
(block placement), its communication graph read from the trace (``CommGraph.from_trace``: the halos and
the allreduce's messages) and placed on the fabric's line or ring (``contend.mapping.methods``).

One repetition, in this order so both placements and the calibration see the machine in the same state:
the calibration runs (``contend.experiments.fabric_check.measure`` with no cases: one flow, 1-byte round
trips), then per placement (alternating which goes first) an untraced run (time between MPI_Init and
MPI_Finalize, ``libcontend-span.so``) and a traced run, as ``contend predict`` runs them. Afterwards the
machine file is written from the calibration medians (``fabric_machine.machine_toml``), and

- every traced run is converted and simulated with its own placement (``predict.predict_traces``): the
  prediction of each run beside its measurement;
- the schedule of the first default run is simulated under both placements (``mapping.objective.evaluate``,
  with hop-bytes and link loads under the engine's routes): the simulated gain of the placement alone,
  the program being the same.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from contend.native import fabric as fabric_module
from contend.native import mpi
from contend.analysis import predict
from contend.errors import UserError
from contend.experiments import fabric_check
from contend.experiments.fabric_machine import TOPOLOGY_KIND, calibrate, machine_toml
from contend.machine.file import loggops_params, parse_machine
from contend.mapping.graph import CommGraph
from contend.mapping.methods import METHODS, place
from contend.mapping.objective import evaluate
from contend.machine.topology import network_params

PLACEMENTS = ("default", "mapped")
# Bounds on what one experiment may run (runs per placement, app-halo's arguments: 32 MiB halos at most).
LIMITS = {"repeats": 100, "iterations": 100_000, "halo": 1 << 22, "every": 100_000}


@dataclass(frozen=True)
class Settings:
    """What to run; the defaults are the experiment's, tests run a smaller one."""

    nodes: int = 8
    topology: str = "line"
    link: str = "1gbit"
    repeats: int = 5
    iterations: int = 20
    halo: int = 32768  # doubles per message: 256 KiB, about 2.2 ms of a 1 Gbit/s link
    every: int = 10  # an allreduce of the residual every EVERY iterations
    method: str = "topo"  # the mapped placement's (contend.mapping.methods)
    timeout_s: float = 120.0  # per run

    def check(self) -> None:
        if self.topology not in ("line", "ring"):
            raise UserError(f"--topology: the mapping experiment needs hops: line or ring, not {self.topology!r}")
        if self.nodes < 4 or self.nodes % 2:
            raise UserError(f"--nodes: an even number of at least 4 (rank r pairs with r + nodes/2), not {self.nodes}")
        if self.nodes > fabric_module.MAX_NODES:
            raise UserError(f"--nodes: at most {fabric_module.MAX_NODES}, not {self.nodes}")
        if self.method not in METHODS:
            raise UserError(f"--method: expected one of {', '.join(METHODS)}, not {self.method!r}")
        for name, most in LIMITS.items():  # every run also ends after timeout_s
            if not 1 <= getattr(self, name) <= most:
                raise UserError(f"--{name}: expected 1..{most}, got {getattr(self, name)}")

    @property
    def distance(self) -> int:
        return self.nodes // 2

    def program(self, build: Path) -> list[str]:
        """app-halo ITERATIONS CELLS HALO EVERY DISTANCE; CELLS = 2 x HALO, the least it allows, so the
        run is bound by the network."""
        return [str(build / "app-halo"), str(self.iterations), str(2 * self.halo), str(self.halo), str(self.every),
                str(self.distance)]


def fabric_params(settings: Settings) -> dict[str, Any]:
    """Engine parameters of the fabric before calibration: its shape and nominal link rate (the placement
    methods need only the shape)."""
    rate = f"{fabric_module.parse_link_rate(settings.link) / 1e9:g}Gbit/s"
    table = {"kind": TOPOLOGY_KIND[settings.topology], "dims": [settings.nodes], "ranks_per_node": 1,
             "link_bandwidth": rate}
    return {**loggops_params(), "network": network_params(table, lambda key="": f"the fabric's {key}")}


def placements(graph: CommGraph, settings: Settings) -> dict[str, np.ndarray]:
    """Node of each rank. default: block (rank r on node r, what the launcher does with one rank per
    node); mapped: ``settings.method`` of ``contend.mapping.methods`` on the graph (topo puts partners
    on neighbouring nodes, each pair on its own link)."""
    params = fabric_params(settings)
    return {"default": place(graph, params, "block"), "mapped": place(graph, params, settings.method)}


@dataclass
class Runs:
    """One placement's runs: a ``predict.Measured`` and what else each untraced run told."""

    measured: predict.Measured = field(default_factory=predict.Measured)
    outputs: list[str] = field(default_factory=list)  # rank 0's line of each untraced run (the residual)
    traces: list[Path] = field(default_factory=list)


def _run_placement(command: list[str], runs: Runs, traces: Path, timeout_s: float) -> None:
    lines: list[str] = []
    runs.measured.untraced_ns.append(predict.untraced_span(command, timeout_s, lines.append))
    runs.outputs.append(next((line.strip() for line in lines if line.startswith("app-halo:")), ""))
    directory = traces / f"run-{len(runs.traces) + 1}"
    predict.traced_run(command, directory, predict.DEFAULT_RECORDS, timeout_s)
    span, runs.measured.ranks = predict.traced_span(directory)
    runs.measured.traced_ns.append(span)
    runs.traces.append(directory)


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": len(values)}


def run_experiment(settings: Settings, work: Path, progress: Callable[[str], None] = lambda _: None,
                   prefix: str = fabric_module.DEFAULT_PREFIX) -> dict[str, Any]:
    """Builds the fabric (its namespaces named ``prefix``...), measures, takes it down (also on failure),
    writes ``work``/fabric.toml (calibrated, block placement), simulates, and returns the results
    (JSON-ready; times in ns)."""
    settings.check()
    library = mpi.find_mpi()
    build = mpi.build_dir(library)
    if not (build / "app-halo").is_file():
        raise UserError(f"{build / 'app-halo'} is not built: run `contend native build`")
    program = settings.program(build)
    runs = {name: Runs() for name in PLACEMENTS}
    calibration_settings = dataclasses.replace(fabric_check.Settings(incasts=(), seeds=(), repeats=1),
                                               timeout_s=settings.timeout_s)
    flows, latencies, loads = [], [], []
    started = datetime.datetime.now(datetime.timezone.utc)
    with fabric_module.session(settings.nodes, 1, settings.link, settings.topology, prefix) as built:
        # What contend map reads: the program's communication graph from a trace of one run.
        progress("tracing one run to map the program")
        (work / "profile").mkdir(parents=True, exist_ok=True)
        wrapper = fabric_module.write_rank_wrapper(built, work / "profile")
        predict.traced_run(mpi.launch_command(library, settings.nodes, program, mpi.Placement(wrapper))[0],
                           work / "profile" / "trace", predict.DEFAULT_RECORDS, settings.timeout_s)
        graph = CommGraph.from_trace(work / "profile" / "trace")
        where = placements(graph, settings)
        commands = {}
        for name in PLACEMENTS:
            (work / name).mkdir(parents=True, exist_ok=True)
            wrapper = fabric_module.write_rank_wrapper(built, work / name, where[name])
            commands[name] = mpi.launch_command(library, settings.nodes, program, mpi.Placement(wrapper))[0]
        for repeat in range(settings.repeats):
            progress(f"repetition {repeat + 1}/{settings.repeats}: calibration")
            calibration_runs = fabric_check.measure(calibration_settings, built)
            flows += calibration_runs.flow_runs
            latencies += calibration_runs.loggp_runs
            order = PLACEMENTS if repeat % 2 == 0 else PLACEMENTS[::-1]
            for name in order:
                progress(f"repetition {repeat + 1}/{settings.repeats}: {name} placement")
                loads.append(os.getloadavg()[0])
                _run_placement(commands[name], runs[name], work / name / "traces", settings.timeout_s)
        calibration = calibrate(built, flows, latencies)
        described = built.describe()
    how = (f"calibration runs interleaved with the mapping experiment's ({settings.repeats} repetitions); "
           f"one flow: incast 1 sender, {calibration_settings.window} x {calibration_settings.incast_bytes} B; "
           f"loggp at 1 B, {calibration_settings.latency_iters} round trips")
    text = machine_toml(calibration, how)
    (work / "fabric.toml").write_text(text)
    machine = parse_machine(text, str(work / "fabric.toml"))
    result: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "settings": dataclasses.asdict(settings),
        "program": " ".join(Path(program[0]).name if i == 0 else a for i, a in enumerate(program)),
        "fabric": described,
        "calibration": {"link_Gbit_s": calibration.link_Bps * 8 / 1e9, "o_ns": calibration.o,
                        "g_ns": calibration.gap, "one_way_1B_ns": calibration.one_way,
                        "hop_latency_ns": calibration.hop_latency},
        "machine_file": text,
        "loadavg_1min": _spread(loads),
        "graph": {"bytes": graph.total_bytes, "pairs": len(graph.src), "messages": int(graph.messages.sum())},
        "placements": {},
    }
    progress("converting the first default run's schedule")
    goal = work / "default-run-1.goal"
    predict.convert(runs["default"].traces[0], goal)
    params = loggops_params(machine)
    for name in PLACEMENTS:
        progress(f"simulating the {name} placement's traced runs")
        predict.predict_traces(runs[name].traces, machine.placed(where[name]), work / name, runs[name].measured)
        result["placements"][name] = {"node_of_rank": where[name].tolist(),
                                      **dataclasses.asdict(evaluate(graph, params, where[name], schedule=goal)),
                                      "outputs": runs[name].outputs, **runs[name].measured.summary()}
    result["gain"] = _gains(result["placements"])
    return result


def _gains(by_name: dict[str, dict]) -> dict[str, Any]:
    """default / mapped (above 1: the mapping is faster or lighter): measured (untraced medians, and per
    repetition, each pair of interleaved runs), predicted (medians of the per-run predictions), simulated
    on one schedule (the placement alone), hop-bytes and the busiest link's bytes."""
    default, mapped = by_name["default"], by_name["mapped"]
    per_repeat = [d / m for d, m in zip(default["untraced_ns"], mapped["untraced_ns"])]
    return {
        "measured": default["untraced"]["median_ns"] / mapped["untraced"]["median_ns"],
        "measured_per_repetition": _spread(per_repeat),
        "measured_traced": default["traced"]["median_ns"] / mapped["traced"]["median_ns"],
        "predicted": default["predicted"]["median_ns"] / mapped["predicted"]["median_ns"],
        "simulated_same_schedule": default["makespan_ns"] / mapped["makespan_ns"],
        "hop_bytes": default["hop_bytes"] / mapped["hop_bytes"],
        "max_link_load": default["max_link_load"] / mapped["max_link_load"],
    }
