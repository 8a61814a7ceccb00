"""A placement (the node of each rank) as the machine file, MPICH, Open MPI and Slurm want it, and the
files a user hands back to contend (a placement file, a list of host names), read and checked
(docs/formats.md, "Mappings").

Nodes are the machine's node numbers (the engine's: ``contend.simulation.layout.NetworkLayout``). Host names come
from a hosts file, one per node in node order, or default to ``node<i>``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Sequence

import numpy as np

from contend.errors import UserError

# One host name: letters, digits, dots, dashes, underscores (a DNS name or an IPv4 address). ':' would
# be read as MPICH's count, '=' and spaces break the rankfile.
_HOST = re.compile(r"[A-Za-z0-9_.-]+")
_SEPARATORS = re.compile(r"[\s,\[\]]+")
_PREFIX = re.compile(r"^\s*placement\s*=")
_NODES_PER_LINE = 16  # placement lists in TOML: wrapped so that a line stays readable


# --- writers ------------------------------------------------------------------------------------------

def placement_toml(node_of_rank: np.ndarray) -> str:
    """``placement = [...]``, the key of a machine file's ``[topology]`` table (``contend.machine.topology``)."""
    nodes = [str(int(n)) for n in node_of_rank]
    rows = [", ".join(nodes[i:i + _NODES_PER_LINE]) for i in range(0, len(nodes), _NODES_PER_LINE)]
    return "placement = [\n" + "".join(f"  {row},\n" for row in rows) + "]\n"


def machine_with_placement(machine, node_of_rank: np.ndarray) -> str | None:
    """The text of ``machine``'s file (a ``contend.machine.file.Machine``) with its ``[topology]`` placement
    replaced by ``node_of_rank`` (comments and everything else kept), or None when the file has no
    ``[topology]`` section header to put it under (an inline or dotted table: paste the snippet by hand)."""
    from contend.machine.file import parse_machine
    from contend.machine.tomlfile import key_lines

    text = Path(machine.path).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    where = key_lines(text)
    header = where.get(("topology",))
    if header is None or not re.match(r"\s*\[\s*topology\s*\]", lines[header - 1]):
        return None
    new = placement_toml(node_of_rank).splitlines(keepends=True)
    if ("topology", "placement") in where:
        start = where[("topology", "placement")] - 1
        if not _PREFIX.match(lines[start]):
            return None  # written as a dotted key (topology.placement = ...)
        lines[start:_value_end(lines, start) + 1] = new
    else:
        lines[header:header] = new
    result = "".join(lines)
    # the copy must say what we meant: a machine file that the engine reads with exactly this placement
    placed = parse_machine(result, machine.path).network["placement"]
    assert placed == [int(n) for n in node_of_rank], "the machine file copy lost its placement"
    return result


def _value_end(lines: list[str], start: int) -> int:
    """The last line of the value of the ``placement = ...`` key on line ``start`` (a list of integers,
    which may span lines and hold comments, or a one-line string), in valid TOML."""
    depth = 0
    for index in range(start, len(lines)):
        text = lines[index].split("#", 1)[0]
        if index == start:
            text = text.split("=", 1)[1]
        depth += text.count("[") - text.count("]")
        if depth <= 0:
            return index
    return len(lines) - 1


def machinefile(node_of_rank: np.ndarray, hosts: Sequence[str]) -> str:
    """MPICH's ``mpiexec -f`` file: ``host:count`` lines in rank order, consecutive ranks on one host in one
    line. Hydra hands each line's count of consecutive ranks to its host, so the file reproduces the
    placement exactly when ``-n`` is the number of ranks."""
    lines = []
    for node, count in _runs(node_of_rank):
        lines.append(f"{hosts[node]}:{count}\n")
    return "".join(lines)


def rankfile(node_of_rank: np.ndarray, hosts: Sequence[str]) -> str:
    """Open MPI's ``--rankfile``: ``rank N=host slot=S``, S counting each host's ranks from 0 in rank order."""
    used: dict[int, int] = {}
    lines = []
    for rank, node in enumerate(int(n) for n in node_of_rank):
        slot = used.get(node, 0)
        used[node] = slot + 1
        lines.append(f"rank {rank}={hosts[node]} slot={slot}\n")
    return "".join(lines)


def slurm_hostfile(node_of_rank: np.ndarray, hosts: Sequence[str]) -> str:
    """``SLURM_HOSTFILE`` for ``srun --distribution=arbitrary``: one host per line, line r for rank r."""
    return "".join(f"{hosts[int(node)]}\n" for node in node_of_rank)


def _runs(node_of_rank: np.ndarray) -> list[tuple[int, int]]:
    """(node, count) of each run of consecutive ranks on one node."""
    nodes = np.asarray(node_of_rank, dtype=np.int64)
    if len(nodes) == 0:
        return []
    starts = np.flatnonzero(np.r_[True, nodes[1:] != nodes[:-1]])
    counts = np.diff(np.r_[starts, len(nodes)])
    return [(int(nodes[s]), int(c)) for s, c in zip(starts, counts)]


def default_hosts(nodes: int) -> list[str]:
    return [f"node{i}" for i in range(nodes)]


# --- readers ------------------------------------------------------------------------------------------

def _text_lines(path: str | os.PathLike, what: str) -> list[str]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read {what} ({os.strerror(exc.errno) if exc.errno else exc})") from None
    try:
        return data.decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UserError(f"{path}:{line}: byte 0x{data[exc.start]:02x} is not UTF-8 text") from None


def _last_line(lines: list[str]) -> int:
    """Where an error about what a file lacks points: its last line with text."""
    return max((n for n, line in enumerate(lines, 1) if line.strip()), default=1)


def read_hosts(path: str | os.PathLike, nodes: int) -> list[str]:
    """The host of each node: one name per line in node order (``#`` comments and blank lines skipped),
    exactly one per node of the machine, no name twice."""
    hosts: list[str] = []
    seen: dict[str, int] = {}
    lines = _text_lines(path, "hosts file")
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) > 1 or not _HOST.fullmatch(words[0]):
            raise UserError(f"{path}:{number}: expected one host name (letters, digits, '.', '-', '_'), "
                            f"got {line.strip()!r}")
        name = words[0]
        if name in seen:
            raise UserError(f"{path}:{number}: host {name!r} is listed twice (also line {seen[name]}); "
                            "each node needs its own host")
        if len(hosts) == nodes:
            raise UserError(f"{path}:{number}: more hosts than the machine's {nodes} nodes; give one per node")
        seen[name] = number
        hosts.append(name)
    if len(hosts) < nodes:
        raise UserError(f"{path}:{_last_line(lines)}: lists {len(hosts)} hosts, but the machine has {nodes} nodes; give one per node "
                        "in node order")
    return hosts


def read_placement(path: str | os.PathLike, ranks: int, nodes: int, ranks_per_node: int) -> np.ndarray:
    """A placement file: the node of each rank in rank order, separated by spaces, commas or lines, ``#``
    comments allowed; ``placement.toml`` as ``contend map`` writes it (``placement = [...]``) reads too.
    Checked as the engine checks a placement list: one node per rank, nodes of the machine, at most
    ``ranks_per_node`` ranks on a node; each error names the file and the line."""
    values: list[int] = []
    lines: list[int] = []
    text_lines = _text_lines(path, "placement file")
    for number, line in enumerate(text_lines, 1):
        content = line.split("#", 1)[0]
        if not values and _PREFIX.match(content):
            content = _PREFIX.sub("", content, count=1)
        for word in _SEPARATORS.split(content):
            if not word:
                continue
            if not re.fullmatch(r"[+-]?\d+", word):
                raise UserError(f"{path}:{number}: expected a node number, got {word!r}")
            node = int(word)
            rank = len(values)
            if rank == ranks:
                raise UserError(f"{path}:{number}: more than {ranks} nodes for {ranks} ranks; give one node per rank")
            if not 0 <= node < nodes:
                raise UserError(f"{path}:{number}: rank {rank} on node {node}, but the machine has nodes "
                                f"0..{nodes - 1}")
            values.append(node)
            lines.append(number)
    if len(values) < ranks:
        raise UserError(f"{path}:{_last_line(text_lines)}: lists {len(values)} nodes for {ranks} ranks; give one node per rank")
    placement = np.asarray(values, dtype=np.int64)
    count = np.zeros(nodes, dtype=np.int64)
    for rank, node in enumerate(values):
        count[node] += 1
        if count[node] > ranks_per_node:
            others = np.flatnonzero(placement[:rank] == node)[:ranks_per_node]
            raise UserError(f"{path}:{lines[rank]}: rank {rank} is one rank too many on node {node} (ranks "
                            f"{', '.join(map(str, others))} are there); the machine holds {ranks_per_node} "
                            "per node")
    return placement


def write_text(path: str | os.PathLike, text: str) -> None:
    """One output file, whole or not at all."""
    from contend.atomic import atomic_path

    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
