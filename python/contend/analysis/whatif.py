"""``contend whatif``: one schedule simulated over the cross product of what-if axes (the use cases of
Hoefler 2011: overlap potential, a faster or slower network or CPU, noise at scale), plus link
contention, placement, NIC congestion and throttling. docs/models.md ("What-if axes") says how each
axis changes the model.

Every axis is a list of values; the runs are the cross product of the axes in the order given (the
first axis varies slowest), and the first run (every axis at its first value) is the reference the
others are compared with. The cross product, not one axis at a time, because Hoefler 2011's findings are
interactions: a faster network helps a network-bound run and not a noise-bound one.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from contend.errors import UserError

#: Axis names, in the order the help lists them.
AXES = ("network", "cpu", "overhead", "noise", "noise-phase", "ranks", "machine", "placement", "ranks-per-node",
        "nic", "throttle", "cores")
#: The most runs one command makes (the cross product of its axes).
MAX_RUNS = 4096
#: Speed factors of the network and the CPU (and overhead factors) lie in [1/MAX_FACTOR, MAX_FACTOR].
MAX_FACTOR = 1000.0
NOISE_KINDS = ("periodic:", "random:", "trace:")


@dataclass(frozen=True)
class Axis:
    """One ``--vary AXIS=VALUES``: the values as written (``labels``) and as the model takes them."""

    name: str
    labels: tuple[str, ...]
    values: tuple[Any, ...]

    def numbers(self) -> list[float] | None:
        """The values as numbers where they all are (speed factors, rank counts), for plots."""
        if self.name in ("network", "cpu", "ranks", "ranks-per-node") or (
                self.name == "overhead" and all(isinstance(v, float) for v in self.values)):
            return [float(v) for v in self.values]
        return None


@dataclass(frozen=True)
class Workload:
    """A GOAL file (``schedule``), a traced run (``trace``: converted to GOAL by ``convert_trace``, once
    per rank count of the ranks axis, extrapolated; ``converted`` maps each count, None for the traced
    one, to its schedule), or a generated collective of ``ranks`` ranks and ``bytes`` bytes."""

    schedule: str | None = None
    collective: str | None = None
    ranks: int | None = None
    bytes: int | None = None
    root: int = 0
    seed: int = 0
    trace: str | None = None
    converted: dict[int | None, str] | None = None

    def arguments(self, ranks: int | None = None) -> dict[str, Any]:
        """``simulate``'s workload arguments, at ``ranks`` ranks if given (the ranks axis)."""
        if self.trace is not None:
            return {"schedule": self.converted[ranks]}
        if self.schedule is not None:
            return {"schedule": self.schedule}
        return {"collective": self.collective, "ranks": ranks or self.ranks, "bytes": self.bytes,
                "root": self.root, "seed": self.seed}

    def to_dict(self) -> dict[str, Any]:
        if self.trace is not None:
            return {"trace": self.trace}
        if self.schedule is not None:
            return {"schedule": self.schedule}
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in ("schedule", "trace", "converted")}


def convert_trace(workload: Workload, axes: list[Axis], directory: str, mpi: Mapping[str, int]) -> Workload:
    """A trace workload with its schedules written in ``directory``: extrapolated to each rank count of
    the ranks axis (``contend goal convert --ranks``, docs/models.md "Extrapolating a trace"), else at
    its traced size, with the MPI library's costs ``mpi`` (the machine's ``[mpi]``)."""
    from contend.native.trace.replay import convert_input

    counts = next((list(axis.values) for axis in axes if axis.name == "ranks"), [None])
    converted = {}
    for ranks in counts:
        converted[ranks] = f"{directory}/app-{ranks or 'traced'}.goal"
        # Every one-sided operation a message: the axes move the ranks onto other machines and nodes.
        convert_input(workload.trace, converted[ranks], ranks=ranks, in_place=False, **mpi)
    return dataclasses.replace(workload, converted=converted)


# --- parsing ---------------------------------------------------------------------------------------------

def parse_axes(specs: Sequence[str], workload: Workload, machine: Any) -> list[Axis]:
    """The ``--vary`` options, checked together with the workload and the machine (``Machine``): every
    value, every combination the model cannot take, and the number of runs. One UserError line each."""
    from contend.machine.tomlfile import did_you_mean

    axes: list[Axis] = []
    for spec in specs:
        name, sep, text = spec.partition("=")
        name = name.strip()
        if not sep:
            raise UserError(f"--vary {spec!r}: expected AXIS=VALUES, e.g. network=0.1x,1x,10x")
        if name not in AXES:
            raise UserError(f"--vary: unknown axis {name!r}{did_you_mean(name, AXES)}; known: {', '.join(AXES)}")
        if any(axis.name == name for axis in axes):
            raise UserError(f"--vary {name}: axis given twice; give all its values in one --vary {name}=A,B,...")
        labels = _split(name, text)
        if len(set(labels)) != len(labels):
            twice = next(label for label in labels if labels.count(label) > 1)
            raise UserError(f"--vary {name}: value {twice!r} given twice")
        axes.append(Axis(name, tuple(labels), tuple(_PARSERS[name](label, f"--vary {name}") for label in labels)))
    _check_combinations(axes, workload, machine)
    runs = 1
    for axis in axes:
        runs *= len(axis.values)
    if runs > MAX_RUNS:
        raise UserError(f"--vary: {' x '.join(str(len(a.values)) for a in axes)} = {runs:,} runs, more than "
                        f"{MAX_RUNS:,}; vary fewer axes or fewer values")
    return axes


def _split(name: str, text: str) -> list[str]:
    """The comma-separated values of an axis. A noise trace lists its files with commas too
    (``trace:A,B``): there a piece that starts no noise kind belongs to the trace before it.

    >>> _split("noise", "none, trace:a.noise,b.noise,periodic:1kHz:25us")
    ['none', 'trace:a.noise,b.noise', 'periodic:1kHz:25us']
    """
    pieces = [piece.strip() for piece in text.split(",")]
    if name == "noise":
        joined: list[str] = []
        for piece in pieces:
            if joined and joined[-1].startswith("trace:") and piece and piece != "none" \
                    and not piece.startswith(NOISE_KINDS):
                joined[-1] += "," + piece
            else:
                joined.append(piece)
        pieces = joined
    if not text.strip() or any(not piece for piece in pieces):
        raise UserError(f"--vary {name}: empty value in {text!r}; give values separated by commas")
    return pieces


def _factor(label: str, where: str, *, zero: bool = False) -> float:
    """``0.1x``, ``10x`` or a bare number, in [1/MAX_FACTOR, MAX_FACTOR] (or 0 where ``zero``)."""
    text = label[:-1] if label.endswith("x") else label
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    low = 0.0 if zero else 1 / MAX_FACTOR
    if not low <= value <= MAX_FACTOR:  # also refuses nan
        raise UserError(f"{where}: expected a factor such as 0.1x, 1x or 10x, in [{low:g}, {MAX_FACTOR:g}], "
                        f"got {label!r}")
    return value


def _overhead(label: str, where: str) -> float | str:
    """A factor on o and O (0: full overlap), or ``g``: o = g and O = G (no overlap), as in Hoefler 2011."""
    if label == "g":
        return "g"
    try:
        return _factor(label, where, zero=True)
    except UserError:
        raise UserError(f"{where}: expected 0 (o = O = 0: full overlap), a factor such as 0.5x or 2x, or g "
                        f"(o = g, O = G: no overlap), got {label!r}") from None


def _noise(label: str, where: str) -> Any:
    from contend.noise.settings import parse_spec

    return parse_spec(label, where)


def _phase(label: str, where: str) -> Any:
    from contend.noise.settings import parse_phase

    return parse_phase(label, where)


def _ranks(label: str, where: str) -> int:
    from contend.machine.quantities import parse_count
    from contend.simulation.simulate import MAX_RANKS

    return parse_count(label, where, minimum=1, maximum=MAX_RANKS)


def _machine(label: str, where: str) -> Any:
    from contend.machine.file import load_machine

    return load_machine(label)  # its errors name the file, or the unknown preset


def _per_node(label: str, where: str) -> int:
    from contend.machine.quantities import parse_count

    return parse_count(label, where, minimum=1, maximum=2**32 - 1)


def _choice(options: tuple[str, ...]) -> Callable[[str, str], str]:
    def parse(label: str, where: str) -> str:
        if label not in options:
            raise UserError(f"{where}: expected {' or '.join(options)}, got {label!r}")
        return label
    return parse


def _throttle(label: str, where: str) -> Any:
    from contend.machine.admission import parse_spec

    try:
        return parse_spec(label)
    except UserError as exc:  # parse_spec speaks of --throttle
        raise UserError(str(exc).replace("--throttle ", f"{where}=", 1)) from None


def _cores(label: str, where: str) -> Any:
    from contend.machine.cores import parse_cores

    return parse_cores(label, where)


_PARSERS: dict[str, Callable[[str, str], Any]] = {
    "network": _factor, "cpu": _factor, "overhead": _overhead, "noise": _noise, "noise-phase": _phase,
    "ranks": _ranks, "machine": _machine, "placement": _choice(("block", "cyclic")), "ranks-per-node": _per_node,
    "nic": _choice(("on", "off")), "throttle": _throttle, "cores": _cores,
}


def _check_combinations(axes: list[Axis], workload: Workload, machine: Any) -> None:
    """What the model cannot take, before any run: one line naming the axes."""
    by_name = {axis.name: axis for axis in axes}
    if "ranks" in by_name and workload.schedule is not None:
        raise UserError("--vary ranks: a GOAL schedule has its own rank count; give the application's trace "
                        "instead (extrapolated to each count), or vary the ranks of a --collective")
    if "ranks" in by_name and workload.root >= min(by_name["ranks"].values):
        raise UserError(f"--vary ranks: root {workload.root} is not a rank of {min(by_name['ranks'].values)} ranks")
    machines = list(by_name["machine"].values) if "machine" in by_name else [machine]
    # A throttle or cores axis and a ranks-per-node axis give a machine without nodes its nodes together,
    # as `contend sim --throttle SPEC --ranks-per-node K` does; either alone would need the machine's.
    policies = any(name in by_name and any(v is not None for v in by_name[name].values)
                   for name in ("throttle", "cores"))
    for needs, what, has in (("placement", "network ([topology])", lambda m: m.network is not None),
                             ("ranks-per-node", "nodes ([topology], [nic], [throttle] or [cores])",
                              lambda m: policies or m.network is not None or m.node is not None),
                             ("nic", "NIC congestion curves ([nic])", lambda m: m.node is not None
                              and m.node.get("nic") is not None)):
        if needs in by_name:
            lacking = next((m for m in machines if not has(m)), None)
            if lacking is not None:
                raise UserError(f"--vary {needs}: machine {lacking.name} has no {what}")
    if policies and "ranks-per-node" not in by_name:
        lacking = next((m for m in machines if m.node is None), None)
        if lacking is not None:
            axis = "throttle" if "throttle" in by_name else "cores"
            raise UserError(f"--vary {axis}: machine {lacking.name} does not say how many ranks share a node "
                            "(a [nic], [throttle] or [cores] table, or --vary ranks-per-node)")
    if "noise-phase" in by_name:
        noises = list(by_name["noise"].values) if "noise" in by_name else [m.noise for m in machines]
        if all(n is None for n in noises):
            raise UserError("--vary noise-phase: there is no noise to apply it to (vary noise, or a machine "
                            "with [noise])")
        from contend.noise.settings import checked

        for noise in filter(None, noises):  # every combination the runs will meet, before any runs
            for phase in by_name["noise-phase"].values:
                checked(dataclasses.replace(noise, phase=phase), lambda key: "--vary noise-phase")


# --- one run ---------------------------------------------------------------------------------------------

def configure(machine: Any, workload: Workload, setting: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The machine and ``simulate`` arguments of one run: ``setting`` maps axis names to parsed values.
    The machine axis picks the base; the network is scaled before the overheads, so that ``overhead=g``
    takes the scaled g."""
    machine = setting.get("machine", machine)
    kwargs: dict[str, Any] = workload.arguments(setting.get("ranks"))
    if "network" in setting:
        machine = _scaled_network(machine, setting["network"])
    if "overhead" in setting:
        machine = _overheads(machine, setting["overhead"])
    if "placement" in setting:
        machine = dataclasses.replace(machine, network={**machine.network, "placement": setting["placement"]})
    if "ranks-per-node" in setting:  # one count of ranks per node for the links and the NIC alike
        per_node = setting["ranks-per-node"]
        if machine.network:
            machine = dataclasses.replace(machine, network={**machine.network, "ranks_per_node": per_node})
        if machine.node is not None or setting.get("throttle") or setting.get("cores"):  # nodes the machine lacks
            kwargs["ranks_per_node"] = per_node
    if setting.get("nic") == "off":
        machine = dataclasses.replace(machine, node={**machine.node, "nic": None})
    if "cpu" in setting and setting["cpu"] != 1.0:
        kwargs["cpu_scale"] = 1.0 / setting["cpu"]  # a CPU twice as fast takes half the time per calc
    if "noise" in setting or "noise-phase" in setting:
        noise = setting["noise"] if "noise" in setting else machine.noise
        if noise is not None and "noise-phase" in setting:
            noise = dataclasses.replace(noise, phase=setting["noise-phase"])
        kwargs["noise"] = noise if noise is not None else False
    if "throttle" in setting:
        kwargs["throttle"] = setting["throttle"] or "none"
    if "cores" in setting:
        kwargs["cores"] = setting["cores"] or "none"
    return machine, kwargs


def _scaled_network(machine: Any, speed: float) -> Any:
    """L, g and G divided by ``speed`` (both cost sets); a network's link bandwidths multiplied by it
    and its hop latency divided by it."""
    def scaled(costs):
        return {**costs, **{key: round(costs[key] / speed) for key in ("L", "g", "G")}}

    network = machine.network
    if network is not None:
        network = {**network, "hop_latency": round(network["hop_latency"] / speed),
                   **{key: network[key] * speed for key in ("link_bandwidth", "injection_bandwidth",
                                                            "global_bandwidth", "peak_bandwidth")
                      if key in network}}
    return dataclasses.replace(machine, params=scaled(machine.params), network=network,
                               rendezvous=scaled(machine.rendezvous) if machine.rendezvous else None)


def _overheads(machine: Any, overhead: float | str) -> Any:
    """o and O multiplied by ``overhead``, or o = g and O = G (``"g"``), in both cost sets."""
    def changed(costs):
        if overhead == "g":
            return {**costs, "o": costs["g"], "O": costs["G"]}
        return {**costs, "o": round(costs["o"] * overhead), "O": round(costs["O"] * overhead)}

    return dataclasses.replace(machine, params=changed(machine.params),
                               rendezvous=changed(machine.rendezvous) if machine.rendezvous else None)


def run_one(job: tuple[Any, Workload, dict[str, Any], bool]) -> dict[str, Any]:
    """Simulate one setting (a module-level function: it runs in worker processes); its row."""
    from contend.simulation.simulate import simulate

    machine, workload, setting, critical_path = job
    machine, kwargs = configure(machine, workload, setting)
    result = simulate(machine=machine, critical_path=critical_path, **kwargs)
    row: dict[str, Any] = {"makespan_ns": result.makespan, "ranks": result.num_ranks, "messages": result.messages,
                           "events": result.events, "noise_charged_ns": result.noise_charged,
                           "admission_waits": result.admission_waits,
                           "deadlock": result.deadlock.to_dict() if result.deadlock is not None else None}
    if result.critical_path is not None:  # where the time went (a finished run): the split, not the steps
        path = result.critical_path.to_dict()
        row["critical_path"] = {key: path[key] for key in ("split", "shares", "ops", "steps")}
    return row


# --- the sweep -------------------------------------------------------------------------------------------

@dataclass
class WhatIf:
    """The axes, and one run per combination (``settings``: axis -> label, in product order)."""

    workload: Workload
    machine: str
    axes: list[Axis]
    runs: list[dict[str, Any]]
    critical_path: bool = False

    @property
    def reference(self) -> dict[str, Any]:
        return self.runs[0]

    def largest_part(self, run: dict[str, Any]) -> str:
        """The part of the critical path that took most of the run, with its share ("noise 62%")."""
        path = run.get("critical_path")
        if not path:
            return "-"
        part = max(path["shares"], key=path["shares"].get)
        return f"{part.replace('_', ' ')} {path['shares'][part]:.0%}"  # the JSON's key: short, for tables

    def relative(self, run: dict[str, Any]) -> float | None:
        """The run's makespan over the reference run's (None when either deadlocked or is 0)."""
        base = self.reference
        if run["deadlock"] or base["deadlock"] or not base["makespan_ns"]:
            return None
        return run["makespan_ns"] / base["makespan_ns"]

    def deadlocked(self) -> list[dict[str, Any]]:
        return [run for run in self.runs if run["deadlock"]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload.to_dict(),
            "machine": self.machine,
            "axes": [{"name": a.name, "values": list(a.labels), "numbers": a.numbers()} for a in self.axes],
            "runs": [{**run, "relative": self.relative(run)} for run in self.runs],
        }


def whatif(workload: Workload, machine: Any, axes: list[Axis], *, workers: int | None = None,
           progress: Callable[[int, int], None] | None = None, critical_path: bool = False) -> WhatIf:
    """Simulate every combination of ``axes`` (from ``parse_axes``) on ``machine`` (a ``Machine``),
    shared out by ``contend.parallel.parallel_map``; with ``critical_path``, each run's makespan split
    along its critical path too (docs/models.md, "Where the time goes"; slower at scale)."""
    from contend.parallel import parallel_map

    combos = list(itertools.product(*(range(len(axis.values)) for axis in axes)))
    jobs = [(machine, workload, {axis.name: axis.values[i] for axis, i in zip(axes, combo)}, critical_path)
            for combo in combos]
    rows = parallel_map(run_one, jobs, workers=workers, progress=progress)
    runs = [{"settings": {axis.name: axis.labels[i] for axis, i in zip(axes, combo)}, **row}
            for combo, row in zip(combos, rows)]
    return WhatIf(workload, machine.name, axes, runs, critical_path)
