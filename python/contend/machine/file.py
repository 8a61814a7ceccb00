"""Machine files: TOML descriptions of a machine, the source of the LogGOPS parameters of a simulation.

A machine file has a ``[machine]`` table (name, description, source) and a ``[loggops]`` table::

    [machine]
    name = "example"
    source = "where the numbers come from"

    [loggops]
    L = "3us"          # latency: a time, bare numbers are ns
    o = "1.5us"        # CPU overhead per message
    g = "1us"          # NIC gap per message
    G = "12.5GB/s"     # NIC gap per byte: a time per byte ("6ns", "80ps") or a bandwidth
    O = "0"            # CPU overhead per byte
    S = 65535          # eager/rendezvous threshold in bytes (size <= S is eager)

An optional ``[loggops.rendezvous]`` table gives a second set of costs for messages of more than S bytes
(a real MPI's costs change where it switches protocol)::

    [loggops.rendezvous]
    L = "2us"          # any of L, o, g, G, O; a key left out keeps its [loggops] value

An optional ``[topology]`` table adds a network with link contention (``contend.machine.topology``), an
optional ``[noise]`` table OS noise (``contend.noise.settings``), an optional ``[nic]`` table NIC
congestion curves (``contend.machine.nic``), an optional ``[throttle]`` table admission control
(``contend.machine.admission``), an optional ``[memory]`` table memory contention (``contend.machine.memory``)
and an optional ``[mpi]`` table costs of the MPI library that replayed traces take (``contend.machine.mpi_library``).
``[fit]`` and ``[measured]`` are records of how the numbers were measured (``contend bench fit``
writes them, with ``o_s`` and ``o_r`` in ``[loggops]``): kept in ``Machine.document``, not checked.
Any other table or key is an error that names the closest known one: a misspelt ``[topology]``
must not silently remove the network. Presets ship in ``contend/machine/presets/``.

Explicit parameters (the CLI's ``-L -o -g -G -O -S``, keyword arguments of ``loggops_params``) replace
the base ``[loggops]`` values only: a rendezvous set from the machine file stays as written.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Collection, Iterator, Mapping, Sequence

from contend.machine.admission import policy_params
from contend.machine.cores import cores_params
from contend.engine import engine, parse_quantity
from contend.errors import UserError
from contend.machine.memory import memory_params
from contend.machine.mpi_library import mpi_params
from contend.machine.nic import nic_classes
from contend.noise.settings import NoiseSettings, from_table as noise_from_table
from contend.machine.quantities import parse_bytes
from contend.machine.tomlfile import Where, key_lines, reject_unknown_keys, shown, tomllib
from contend.machine.topology import network_params

PRESET_DIR = Path(__file__).parent / "presets"
DEFAULT_MACHINE = "loggopsim-default"

TIME_KEYS = ("L", "o", "g")
PER_BYTE_KEYS = ("G", "O")
COST_KEYS = TIME_KEYS + PER_BYTE_KEYS
PARAMETER_KEYS = COST_KEYS + ("S",)
RENDEZVOUS = "rendezvous"  # [loggops.rendezvous]: the costs of messages larger than S
RECORD_KEYS = ("o_s", "o_r")  # [loggops] keys that record measured overheads; no model reads them
HEADER_KEYS = ("name", "description", "source")
TABLES = ("machine", "loggops", "topology", "noise", "nic", "throttle", "cores", "memory", "mpi")
RECORD_TABLES = ("fit", "measured")  # how the numbers were measured: free-form, not checked
ALL_ON_ONE_NODE = 2**32 - 1  # ranks per node of a host file's [cores] without ranks_per_node
# S is stored by the engine as a u64, but no message is larger than this in practice.
MAX_THRESHOLD = 2**63 - 1


@dataclass(frozen=True)
class Machine:
    """A loaded, validated machine file.

    ``params`` are the engine's LogGOPS parameters: L, o, g in picoseconds, G, O in picoseconds per
    byte, S in bytes. ``rendezvous`` is the complete cost set (L, o, g, G, O, same units) for messages
    larger than S, or None. ``network`` is the engine's network (from ``[topology]``), or None.
    ``noise``: the OS noise of ``[noise]``, or None. ``node``: the engine's node model (ranks per
    node, NIC curves of ``[nic]``, policy of ``[throttle]``), or None when neither table is there.
    ``memory``: the engine's memory model of ``[memory]`` (bandwidths in bytes/s), or None.
    ``mpi``: the trace converter's options of ``[mpi]`` (``collective_entry`` in ns; 0 without it).
    ``loggops`` keeps the values as written, ``document`` the whole parsed file. ``where`` locates
    the file's keys for errors found later (``located_engine_errors``), ``places`` the engine's keys
    that are not a plain ``table.key`` of the file (size classes, a ranks per node another table gave).
    """

    name: str
    description: str
    source: str
    params: Mapping[str, int]
    loggops: Mapping[str, Any]
    document: Mapping[str, Any] = field(repr=False)
    path: str = ""
    rendezvous: Mapping[str, int] | None = None
    network: Mapping[str, Any] | None = None
    noise: NoiseSettings | None = None
    node: Mapping[str, Any] | None = None
    memory: Mapping[str, Any] | None = None
    mpi: Mapping[str, int] = field(default_factory=lambda: {"collective_entry": 0})
    where: Where | None = field(default=None, repr=False, compare=False)
    places: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    def locate(self, key: str) -> str | None:
        """Where this file writes the engine's spec key ``table.key`` ("file:line: [table] key"), or
        None when the file has no such table."""
        if key in self.places:
            return self.places[key]
        table, _, rest = key.partition(".")
        if self.where is None or table not in self.document:
            return None
        return self.where.table(table)(rest)

    def placed(self, node_of_rank: Sequence[int]) -> "Machine":
        """This machine with its network's placement replaced by the node of each rank (the engine checks
        the list against the shape when it simulates)."""
        if self.network is None:
            raise UserError(f"{self.path or self.name}: a placement needs a network, and this machine has no "
                            "[topology]")
        return replace(self, network={**self.network, "placement": [int(n) for n in node_of_rank]})


def preset_names() -> list[str]:
    """Names of the machine files shipped with contend.

    >>> "loggopsim-default" in preset_names()
    True
    """
    return sorted(p.stem for p in PRESET_DIR.glob("*.toml"))


def load_machine(spec: str | os.PathLike) -> Machine:
    """Load a preset by name (``"bgp-intrepid"``) or a machine file by path (``"my.toml"``)."""
    text_spec = os.fspath(spec)
    looks_like_path = text_spec.endswith(".toml") or os.sep in text_spec or _is_file(Path(text_spec))
    if looks_like_path:
        path = Path(text_spec)
    else:
        path = PRESET_DIR / f"{text_spec}.toml"
        if not _is_file(path):
            raise UserError(
                f"unknown machine {text_spec!r}: not a file, and the presets are {', '.join(preset_names())}"
            )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{text_spec}: cannot read machine file ({exc.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UserError(f"{path}:{line}: byte 0x{data[exc.start]:02x} is not UTF-8 text") from None
    return parse_machine(text, str(path))


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a regular file; a name the system refuses (too long) is not one."""
    try:
        return path.is_file()
    except OSError:
        return False


def machine_of(spec: "str | os.PathLike | Machine | None") -> Machine:
    """``spec`` itself when it is a loaded machine, else the machine it names (None: the default)."""
    return spec if isinstance(spec, Machine) else load_machine(spec or DEFAULT_MACHINE)


def parse_machine(text: str, origin: str = "<machine>") -> Machine:
    """Parse and validate the text of a machine file; every error names ``origin``, the line and the key."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(_decode_error_message(origin, text, exc)) from None
    root = Where(origin, key_lines(text))
    reject_unknown_keys(document, TABLES + RECORD_TABLES, lambda key: f"{root.line(key)}: [{shown(key)}]", "table")
    for name in TABLES + RECORD_TABLES:
        if name in document and not isinstance(document[name], dict):
            raise UserError(f"{root.line(name)}: {name} must be a table ([{name}]), got {document[name]!r}")
    where = {name: root.table(name) for name in TABLES}

    header = document.get("machine", {})
    reject_unknown_keys(header, HEADER_KEYS, where["machine"])
    for key in HEADER_KEYS:
        if key in header and not isinstance(header[key], str):
            raise UserError(f"{where['machine'](key)}: expected a string, got {header[key]!r}")

    if "loggops" not in document:
        raise UserError(f"{root.line()}: missing [loggops] table ({', '.join(PARAMETER_KEYS)})")
    loggops = document["loggops"]
    reject_unknown_keys(loggops, PARAMETER_KEYS + (RENDEZVOUS,) + RECORD_KEYS, where["loggops"])
    missing = [key for key in PARAMETER_KEYS if key not in loggops]
    if missing:
        raise UserError(f"{where['loggops']()}: missing {', '.join(missing)}")
    params = {key: _parameter(key, loggops[key], lambda k=key: where["loggops"](k)) for key in PARAMETER_KEYS}

    default_name = Path(origin).stem if origin.endswith(".toml") else origin
    places: dict[str, str] = {}
    machine = Machine(
        name=header.get("name", default_name),
        description=header.get("description", ""),
        source=header.get("source", ""),
        params=params,
        loggops=dict(loggops),
        document=document,
        path=origin,
        rendezvous=_rendezvous_costs(loggops, params, where["loggops"]),
        network=network_params(document["topology"], where["topology"]) if "topology" in document else None,
        noise=noise_from_table(document["noise"], where["noise"], Path(origin).parent)
        if "noise" in document else None,
        node=_node_model(document, where, places),
        memory=memory_params(document["memory"], where["memory"], _other_ranks_per_node(document), params["G"])
        if "memory" in document else None,
        mpi=mpi_params(document.get("mpi", {}), where["mpi"]),
        where=root,
        places=places,
    )
    _check_specs(machine)
    return machine


def _check_specs(machine: Machine) -> None:
    """The engine's constructors judge the values of [nic], [throttle] and [memory] (their rules live
    there, once); a refused value is reported at its key's line when the file is read."""
    if machine.node is None and machine.memory is None:
        return
    try:
        engine().check_specs({"node": machine.node, "memory": machine.memory})
    except engine().SpecError as exc:
        raise UserError(f"{machine.locate(exc.key) or machine.path}: {exc.problem}") from None


def _other_ranks_per_node(document: Mapping[str, Any]) -> int | None:
    """The ranks per node another table gives ([topology], [nic], [throttle]), if a valid one does."""
    for table in ("topology", "nic", "throttle"):
        value = document.get(table, {}).get("ranks_per_node")
        if isinstance(value, int) and not isinstance(value, bool) and 1 <= value < 2**32:
            return value
    return None


def _node_model(document: Mapping[str, Any], where: Mapping[str, Where], places: dict[str, str]
                ) -> dict[str, Any] | None:
    """The engine's ``params["node"]`` from ``[nic]``, ``[throttle]`` and ``[cores]``; None without any.
    ``places`` receives where the engine's keys that are not the file's are written."""
    nic = nic_classes(document["nic"], where["nic"], places) if "nic" in document else None
    policy = policy_params(document["throttle"], where["throttle"], places) if "throttle" in document else None
    cores = cores_params(document["cores"], where["cores"]) if "cores" in document else None
    if nic is None and "throttle" not in document and cores is None:
        return None
    ranks_per_node = _ranks_per_node(document, where, places)
    if cores is not None and ranks_per_node == ALL_ON_ONE_NODE:
        # A host's cores: shared by every rank, whatever nodes a throttle or a run emulates on it (as
        # `one_host = true` says of a topology's nodes).
        cores["one_host"] = True
    return {"ranks_per_node": ranks_per_node, "nic": nic, "policy": policy, "cores": cores}


def _ranks_per_node(document: Mapping[str, Any], where: Mapping[str, Where], places: dict[str, str]) -> int:
    """Ranks per node: [topology]'s, else [nic]'s, [throttle]'s, [cores]'s; at least one must say."""
    for table in ("topology", "nic", "throttle", "cores"):
        value = document.get(table, {}).get("ranks_per_node")
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 2**32:
                raise UserError(f"{where[table]('ranks_per_node')}: expected an integer >= 1, got {value!r}")
            places["node.ranks_per_node"] = where[table]("ranks_per_node")
            return value
    if "topology" in document:
        return 1  # the topology's own default: its nodes hold a rank each
    if "nic" not in document and "throttle" not in document:
        return ALL_ON_ONE_NODE  # [cores] alone: the machine is one host, every rank on it
    table = "nic" if "nic" in document else "throttle"
    raise UserError(f"{where[table]()}: needs ranks_per_node (how many ranks share a node), here or in [topology]")


def _rendezvous_costs(loggops: Mapping[str, Any], base: Mapping[str, int], where: Where) -> dict[str, int] | None:
    """The ``[loggops.rendezvous]`` costs, completed from the base set; None when the table is absent."""
    if RENDEZVOUS not in loggops:
        return None
    written = loggops[RENDEZVOUS]
    if not isinstance(written, dict):
        raise UserError(f"{where(RENDEZVOUS)}: must be a table ([loggops.{RENDEZVOUS}] with keys "
                        f"{', '.join(COST_KEYS)}), got {written!r}")
    table = where.table(RENDEZVOUS)
    reject_unknown_keys(written, COST_KEYS, table)  # S is one threshold for both sets
    return {key: _parameter(key, written[key], lambda k=key: table(k)) if key in written else base[key]
            for key in COST_KEYS}


def loggops_params(machine: Machine | str | os.PathLike | None = None, **overrides: Any) -> dict[str, Any]:
    """The engine parameters: LogGOPSim's defaults, replaced by a machine's, replaced by ``overrides``.

    Overrides are strings with units (``L="3us"``, ``G="12.5GB/s"``) or numbers in ns (per byte for G
    and O; bytes for S); ``None`` means "not given". They replace the base set only; ``"rendezvous"``
    is the machine's set for messages larger than S (ints, ps and ps/byte), or None.

    >>> loggops_params(L="3us", G=6)
    {'L': 3000000, 'o': 1500000, 'g': 1000000, 'G': 6000, 'O': 0, 'S': 65535, 'rendezvous': None}
    """
    unknown = sorted(set(overrides) - set(PARAMETER_KEYS))
    if unknown:
        raise UserError(f"unknown LogGOPS parameter(s) {', '.join(unknown)}; known: {', '.join(PARAMETER_KEYS)}")
    machine = machine_of(machine)
    params: dict[str, Any] = dict(machine.params)
    for key, value in overrides.items():
        if value is not None:
            params[key] = _parameter(key, value, lambda k=key: f"parameter {k}")
    params[RENDEZVOUS] = dict(machine.rendezvous) if machine.rendezvous is not None else None
    if machine.network is not None:
        params["network"] = dict(machine.network)
    if machine.noise is not None:
        params["noise"] = machine.noise.engine_params()
    if machine.node is not None:
        params["node"] = dict(machine.node)
    if machine.memory is not None:
        params["memory"] = dict(machine.memory)
    return params


@contextmanager
def located_engine_errors(machine: Machine, replaced: Collection[str] = ()) -> Iterator[None]:
    """Errors the engine finds in what ``machine`` says point at the machine file's key: the
    engine's SpecError names it (``topology.routing``: the engine checks the routing, the shape and
    the placement of a job), or the table of a model that does not combine with another.
    ``replaced`` names what the caller gave instead of the file (``sharing``, ``noise``, ``memory``):
    errors about those are not the file's."""
    try:
        yield
    except ValueError as exc:
        key = getattr(exc, "key", None)
        if machine.where is None or not isinstance(exc, engine().SpecError):
            raise
        tables = {key.partition(".")[0], *([exc.combined_with] if exc.combined_with else [])}
        if key.rsplit(".", 1)[-1] in replaced or any(t in replaced or t not in machine.document for t in tables):
            raise
        location = machine.locate(key)
        if location is None:
            raise
        raise UserError(f"{location}: {exc.problem}") from None


def _parameter(key: str, value: Any, where) -> int:
    """One LogGOPS parameter as an engine integer; ``where()`` names it in error messages."""
    if isinstance(value, bool):
        raise UserError(f"{where()}: expected a number or a string with a unit, got {value!r}")
    if key == "S":
        if isinstance(value, str):  # the CLI's -S, which also takes units: 64KiB
            value = parse_bytes(value, where())
        if not isinstance(value, int) or not 0 <= value <= MAX_THRESHOLD:
            raise UserError(f"{where()}: expected an integer number of bytes in [0, 2^63), got {value!r}")
        return value
    return parse_quantity(value, where(), per_byte=key not in TIME_KEYS)


def _decode_error_message(origin: str, text: str, exc: Exception) -> str:
    """tomllib says "Invalid value (at line 3, column 5)"; we say "file:3:5: Invalid value"."""
    message = str(exc)
    match = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
    if match:
        return f"{origin}:{match.group(1)}:{match.group(2)}: {message[: match.start()]}"
    match = re.search(r"\s*\(at end of document\)$", message)
    if match:
        last = text.split("\n")[-1]
        return f"{origin}:{text.count(chr(10)) + 1}:{len(last) + 1}: {message[: match.start()]} at the end of the file"
    return f"{origin}: {message}"
