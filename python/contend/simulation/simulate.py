"""``contend.simulate``: one call to simulate a GOAL schedule or a generated collective.

The public API the CLI (``contend sim``), the demo and user scripts share: it resolves the LogGOPS
parameters (LogGOPSim's defaults < machine file < explicit values), checks the inputs, runs the engine
and wraps its answer in a ``SimulationResult`` in the schedule's unit (ns).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable

from contend.cachedir import cache_dir
from contend.engine import engine, user_errors
from contend.errors import UserError
from contend.machine.file import Machine, located_engine_errors, loggops_params, machine_of
from contend.noise.settings import NoiseSettings, resolve
from contend.machine.quantities import bounded_number, parse_bytes, parse_count
from contend.machine.topology import sharing_model

if TYPE_CHECKING:  # the result loads numpy: the CLI's parsers import this module and need neither
    from contend.simulation.result import SimulationResult

# The largest rank count the engine accepts (collectives::MAX_RANKS, goal::MAX_RANKS).
MAX_RANKS = 2**31 - 1
#: The engine's event loops, and the most threads that can share one (its MAX_WORKERS).
EXECUTIONS = ("chosen", "time-ordered", "windowed")
MAX_THREADS = 64
#: The CPU speed factors the engine accepts (its CpuScale::MIN and MAX).
CPU_SCALE_RANGE = (1e-6, 1e6)


def simulate(
    schedule: str | os.PathLike | None = None,
    *,
    collective: str | None = None,
    ranks: int | str | None = None,
    bytes: int | str | None = None,  # noqa: A002 - the natural name for a message size
    machine: Machine | str | os.PathLike | None = None,
    L: Any = None,
    o: Any = None,
    g: Any = None,
    G: Any = None,
    O: Any = None,  # noqa: E741 - the model's name for the per-byte CPU overhead
    S: Any = None,
    noise: Any = None,
    throttle: Any = None,
    ranks_per_node: int | None = None,
    cores: Any = None,
    memory: Any = None,
    memory_throttle: Any = None,
    reserve_core: bool | None = None,
    records: bool = False,
    timeline: bool = False,
    root: int = 0,
    seed: int = 0,
    sharing: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    threads: int | None = None,
    execution: str = "chosen",
    cpu_scale: float | str | None = None,
    critical_path: bool = False,
    cache: bool = True,
) -> SimulationResult:
    """Simulate a GOAL file (``schedule``) or a generated ``collective`` on ``ranks`` ranks of ``bytes``.

    Parameters come from LogGOPSim's defaults (L=2500 o=1500 g=1000 G=6 O=0 S=65535), replaced by
    ``machine`` (a preset name, a TOML path or a ``Machine``), replaced by explicit ``L o g G O S``:
    strings with units (``"3us"``, ``"12.5GB/s"``) or numbers in ns (ns per byte for G and O, bytes for
    S). ``noise`` replaces the machine's ``[noise]``: a spec (``"periodic:1kHz:25us"``,
    ``"random:1kHz:25us"``, ``"trace:FILE"``), a dict with the keys of a ``[noise]`` table, a
    ``NoiseSettings``, or ``"none"``/``False`` for none (docs/models.md, "Noise"). ``records=True``
    adds per-message records (``result.records``), ``timeline=True`` the CPU activity
    (``result.timeline``). ``root`` and ``seed`` select the root rank and the random pattern.
    ``sharing`` ("flow" or "packet") replaces the link sharing model of the machine's network.
    ``throttle`` replaces the machine's ``[throttle]`` policy: a spec (``"token:20"``, ``"rate:2us"``,
    ``"proxy:8:16"``, ``"none"``) or an engine policy dict (docs/models.md, "NIC congestion and
    admission control"); ``ranks_per_node`` replaces the machine's when a node model applies.
    ``cores`` replaces the machine's ``[cores]``: the cores a node's ranks share, a spec
    (``"2"``, ``"2:3.8us"``, ``"none"``) or an engine dict (docs/models.md, "Shared cores").
    ``memory`` replaces the machine's ``[memory]`` model: an engine memory dict, or ``"none"``/``False``
    for none; ``memory_throttle`` (a bandwidth, ``"none"``) and ``reserve_core`` apply its
    mitigations (docs/models.md, "Memory contention (NiMC)").
    ``cpu_scale`` multiplies every calc's duration (0.5: a CPU twice as fast), rounded to the
    picosecond; overheads o and O stay the machine's (docs/models.md, "CPU speed").
    ``critical_path=True`` traces where the time goes: ``result.critical_path`` splits the makespan
    along the run's critical path, and records get a ``critical`` column (docs/models.md, "Where the
    time goes"); it costs memory in proportion to the operations and runs the events in time order.
    ``progress(ops_done, ops_total)``, if given, is called every few million events of a long run.
    ``threads`` share a windowed run (None: the machine's cores, on runs large enough to gain);
    ``execution`` picks the event loop: ``"chosen"`` (windows for ranks that independent noise
    scatters, else time order), ``"time-ordered"`` or ``"windowed"`` (wherever exact). Neither
    changes a result, only the speed (docs/models.md, "Noise", Cost). ``cache=False`` parses a large
    GOAL file even where a cached parse of it is valid, and caches nothing (docs/formats.md, "Schedule
    cache"); it changes no result either.

    Bad input raises ``contend.errors.UserError`` with a one-line message. A deadlocked schedule is
    not an error: ``result.deadlock`` names the blocked ranks and ops.

    The binomial broadcast of the reference table (engine/tests/reference.rs):

    >>> r = simulate(collective="binomial-bcast", ranks=8, bytes=1, L=3000, o=1500, g=1000, G=6)
    >>> r.makespan
    18000
    >>> r.ranks.tolist()
    [4500, 9000, 9000, 13500, 9000, 13500, 13500, 18000]

    Per-message records, one row per message, times in ns:

    >>> r = simulate(collective="scatter", ranks=4, bytes=1024, machine="loggops-reference", records=True)
    >>> len(r.records), int(r.records["bytes"].sum())
    (3, 3072)

    A detour of 500 ns every 5 us on both ranks of a ping-pong, all ranks at the same phase (the
    first detour at 1 us): the first message's overheads each meet one (docs/models.md, "Noise"):

    >>> r = simulate(collective="pingpong", ranks=2, bytes=1, L=3000, o=1500,
    ...              noise={"kind": "periodic", "period": "5us", "duration": "500ns", "phase": "1us"})
    >>> r.makespan, r.noise_charged
    (13000, 1000)

    Where the time goes: along a ping-pong's critical path, o, L and o each way:

    >>> r = simulate(collective="pingpong", ranks=2, bytes=1, L=3000, o=1500, critical_path=True)
    >>> r.critical_path.split
    {'computation': 0, 'overhead': 6000, 'wire': 6000, 'late_partner': 0, 'contention': 0, 'cores': 0, 'noise': 0}
    """
    if (schedule is None) == (collective is None):
        raise UserError("give either a GOAL schedule file or a collective, not both and not neither")
    machine = machine_of(machine)
    params = loggops_params(machine, L=L, o=o, g=g, G=G, O=O, S=S)
    if sharing is not None:
        if "network" not in params:
            raise UserError("sharing: the machine has no network; give a machine with a [topology] table")
        params["network"] = {**params["network"], "sharing": sharing_model(sharing, "sharing")}
    _apply_node_options(params, throttle, ranks_per_node, cores)
    _apply_memory_options(params, memory, memory_throttle, reserve_core)
    # Settings already resolved (contend sim's, with its --noise-* options) are taken as they are.
    settings = noise if isinstance(noise, NoiseSettings) else resolve(noise, machine.noise)
    params.pop("noise", None)
    if settings is not None:
        params["noise"] = settings.engine_params()
    if cpu_scale is not None:
        params["cpu_scale"] = bounded_number(cpu_scale, "cpu scale", *CPU_SCALE_RANGE)
    if execution not in EXECUTIONS:
        raise UserError(f"execution must be one of {', '.join(EXECUTIONS)}, not {execution!r}")
    # How the engine runs, beside the model's parameters (which the result keeps).
    run_params = {**params, "execution": execution}
    if critical_path:
        run_params["critical_path"] = True
    if threads is not None:
        run_params["threads"] = parse_count(threads, "threads", minimum=1, maximum=MAX_THREADS)
    eng = engine()
    # What the caller gave instead of the machine file: engine errors about these are not the file's.
    replaced = {name for name, given in (("sharing", sharing is not None),
                                         ("noise", settings != machine.noise),
                                         ("memory", params.get("memory") != machine.memory)) if given}
    if schedule is not None:
        for name, value in (("ranks", ranks), ("bytes", bytes)):
            if value is not None:
                raise UserError(f"{name} applies to generated collectives, not to a GOAL file")
        path = os.fspath(schedule)
        workload = {"schedule": path}
        with user_errors(path), located_engine_errors(machine, replaced):
            raw = eng.simulate_goal(path, run_params, records=records, timeline=timeline, progress=progress,
                                    cache_dir=os.fspath(cache_dir("goal")) if cache else None)
    else:
        name, num_ranks, size, root, seed = collective_arguments(collective, ranks, bytes, root, seed)
        workload = {"collective": name, "ranks": num_ranks, "bytes": size, "root": root, "seed": seed}
        with user_errors(f"collective {name}"), located_engine_errors(machine, replaced):
            raw = eng.simulate_collective(
                name, num_ranks, size, run_params, root=root, seed=seed, records=records, timeline=timeline,
                progress=progress,
            )
    from contend.simulation.result import SimulationResult

    return SimulationResult.from_engine(raw, params, workload)


def _apply_node_options(params: dict[str, Any], throttle: Any, ranks_per_node: int | None, cores: Any) -> None:
    """Replace the machine's policy, shared cores and ranks per node in ``params["node"]``."""
    from contend.machine.admission import parse_spec
    from contend.machine.cores import parse_cores

    if throttle is None and ranks_per_node is None and cores is None:
        return
    node = dict(params.get("node") or {"ranks_per_node": None, "nic": None, "policy": None, "cores": None})
    if throttle is not None:
        node["policy"] = parse_spec(throttle) if isinstance(throttle, str) else (throttle or None)
    if cores is not None:
        node["cores"] = parse_cores(cores) if isinstance(cores, str) else (cores or None)
    if ranks_per_node is not None:
        node["ranks_per_node"] = parse_count(ranks_per_node, "ranks per node", minimum=1, maximum=2**32 - 1)
    if node["ranks_per_node"] is None and "network" in params:
        node["ranks_per_node"] = params["network"]["ranks_per_node"]  # its placement decides the nodes
    if node["ranks_per_node"] is None:
        if node["policy"] is None and node.get("cores") is None:
            return
        what = "throttle" if node["policy"] is not None else "cores"
        raise UserError(f"{what}: the machine does not say how many ranks share a node; give ranks_per_node "
                        "([nic], [topology], [throttle] or [cores] of the machine file, or --ranks-per-node)")
    params["node"] = node


def _apply_memory_options(params: dict[str, Any], memory: Any, throttle: Any, reserve_core: bool | None) -> None:
    """Replace the machine's memory model and its mitigations in ``params["memory"]``."""
    from contend.machine.memory import with_mitigations

    if memory is not None:
        params.pop("memory", None)
        if memory not in (False, "none"):
            if not isinstance(memory, dict):
                raise UserError(f"memory: expected an engine memory model (dict) or 'none', got {memory!r}")
            params["memory"] = dict(memory)
    if throttle is None and reserve_core is None:
        return
    if "memory" not in params:
        raise UserError("memory throttle / reserve core: the machine has no [memory] table "
                        "(e.g. --machine sandybridge-onload)")
    params["memory"] = with_mitigations(params["memory"], throttle, reserve_core)


def collective_arguments(
    collective: str, ranks: int | str | None, size: int | str | None, root: int | str, seed: int | str
) -> tuple[str, int, int, int, int]:
    """Check the arguments of a generated collective; returns (name, ranks, bytes, root, seed)."""
    known = engine().collectives()
    if collective not in known:
        raise UserError(f"unknown collective {collective!r}; known: {', '.join(known)}")
    if ranks is None or size is None:
        raise UserError(f"collective {collective} needs a rank count and a message size (ranks, bytes)")
    num_ranks = parse_count(ranks, "ranks", minimum=1, maximum=MAX_RANKS)
    size = parse_bytes(size, "bytes")
    root = parse_count(root, "root", maximum=num_ranks - 1)
    seed = parse_count(seed, "seed")
    return collective, num_ranks, size, root, seed
