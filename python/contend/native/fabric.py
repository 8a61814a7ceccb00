"""An emulated cluster on one host: network namespaces as nodes, veth pairs as links, tbf as link speed.

Topologies:
- ``star``: every node's ``eth0`` is cabled to a bridge in a switch namespace (one shaped link per node).
- ``line`` / ``ring``: a router namespace per node; node i hangs off router i, routers are cabled in a line
  (or a ring), and static routes send traffic the shortest way, so a message between nodes n apart
  crosses n router-to-router links and can meet other traffic there (Bhatele's Benchmark III).
Every veth end gets ``tbf rate <link> burst 128kb latency <queue>`` (10ms unless told), so each
direction of each link is shaped; tbf holds at most rate x queue + burst bytes and drops the rest, so
a small queue makes links drop under incast as shallow switch buffers do. Addresses are private (10.77.0.0/16 nodes, 10.78.0.0/16 router links) and exist only inside
the namespaces: the host's own network is never touched.

All names start with a prefix (``prefix``, ``ctd-`` unless told): ``<p>n<i>`` nodes, ``<p>sw``
the switch, ``<p>r<i>`` routers; nodes call themselves ``<p>node<i>``. A state file under /run/contend
describes the fabric that is up. Building is all or nothing: if a step fails, everything built is
removed before the error is reported. ``down`` removes every namespace with the prefix.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator, Sequence

from contend.errors import UserError

TOPOLOGIES = ("star", "line", "ring")
MAX_NODES = 64  # bounded: every node is a namespace, a veth pair and two shaped queues
MAX_PPN = 64
STATE_DIR = Path("/run/contend")
TBF_BURST = "128kb"  # enough for line rate at 1 Gbit/s with 1500-byte frames, small enough to shape
TBF_BURST_BYTES = 128 * 1024  # tc's "kb" is KiB
TBF_LATENCY = "10ms"
_RATE = re.compile(r"^(\d+(?:\.\d+)?)(bit|kbit|mbit|gbit)$")
_QUEUE = re.compile(r"^(\d+(?:\.\d+)?)(us|ms)$")
_RATE_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}


DEFAULT_PREFIX = "ctd-"
# contend's own tests build their fabrics under this prefix, never under a user's (ctd-).
TEST_PREFIX = "ctdt-"


def parse_link_rate(text: str) -> float:
    """Bits per second of a tc rate such as ``1gbit`` or ``100mbit``.

    >>> parse_link_rate("1gbit"), parse_link_rate("250mbit")
    (1000000000.0, 250000000.0)
    """
    match = _RATE.match(str(text).strip().lower())
    if not match:
        raise UserError(f"--link: expected a rate like 1gbit, 500mbit or 100kbit, got {text!r}")
    bits = float(match.group(1)) * _RATE_UNITS[match.group(2)]
    if not 8e3 <= bits <= 1e10:
        raise UserError(f"--link: {text} is outside 8kbit..10gbit (unshaped veth is CPU-bound near 14 Gbit/s)")
    return bits


def parse_queue(text: str) -> float:
    """Seconds of a tbf latency such as ``10ms`` or ``500us`` (how long a packet may wait in a link's queue).

    >>> parse_queue("10ms"), parse_queue("500us")
    (0.01, 0.0005)
    """
    match = _QUEUE.match(str(text).strip().lower())
    if not match:
        raise UserError(f"--queue: expected a time like 10ms or 500us, got {text!r}")
    seconds = float(match.group(1)) * (1e-3 if match.group(2) == "ms" else 1e-6)
    if not 50e-6 <= seconds <= 1:
        raise UserError(f"--queue: {text} is outside 50us..1000ms")
    return seconds


@dataclass(frozen=True)
class Fabric:
    """A fabric that is up (or about to be built)."""

    prefix: str
    nodes: int
    ppn: int
    link: str
    topology: str
    queue: str = TBF_LATENCY  # tbf latency: a link queues at most link rate x queue + burst bytes

    @property
    def link_Bps(self) -> float:
        return parse_link_rate(self.link) / 8

    @property
    def queue_bytes(self) -> int:
        """What a link's tbf holds before it drops: rate x latency + burst."""
        return int(self.link_Bps * parse_queue(self.queue)) + TBF_BURST_BYTES

    @property
    def host_prefix(self) -> str:
        return f"{self.prefix}node"

    def node_namespace(self, i: int) -> str:
        return f"{self.prefix}n{i}"

    def host_name(self, i: int) -> str:
        return f"{self.host_prefix}{i}"

    def node_address(self, i: int) -> str:
        return f"10.77.{i}.2" if self.topology != "star" else f"10.77.0.{i + 1}"

    def describe(self) -> dict:
        """What a benchmark run records about where it ran."""
        return {**asdict(self), "link_Bps": self.link_Bps, "burst_bytes": TBF_BURST_BYTES,
                "queue_bytes": self.queue_bytes, "host_prefix": self.host_prefix}


def _state_file(prefix: str) -> Path:
    return STATE_DIR / f"{prefix}fabric.json"


def missing_requirement() -> str | None:
    """Why the fabric cannot be built here (not root, a tool missing), or None when it can."""
    if os.geteuid() != 0:
        return "the emulated fabric needs root (it creates network namespaces); run as root"
    for tool in ("ip", "tc", "unshare"):
        if not shutil.which(tool):
            return f"the emulated fabric needs `{tool}` (Debian: apt-get install iproute2 util-linux)"
    return None


def _require_tools() -> None:
    reason = missing_requirement()
    if reason:
        raise UserError(reason)


def _run(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, argv, done.stdout, done.stderr)


def our_namespaces(prefix: str) -> list[str]:
    """Network namespaces whose name starts with prefix (ours by construction)."""
    if not shutil.which("ip"):
        return []
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    names = [line.split()[0] for line in listing.splitlines() if line.strip()]
    return sorted(name for name in names if name.startswith(prefix))


def current(prefix: str = DEFAULT_PREFIX) -> Fabric | None:
    """The fabric that is up under this prefix, or None."""
    path = _state_file(prefix)
    if not path.is_file():
        return None
    fabric = Fabric(**json.loads(path.read_text()))
    if fabric.node_namespace(0) not in our_namespaces(prefix):
        return None  # namespaces removed behind our back: the state file is stale
    return fabric


def require(prefix: str, what: str) -> Fabric:
    """The fabric that is up under ``prefix``; a UserError naming the option ``what`` if none is."""
    built = current(prefix)
    if built is None:
        raise UserError(f"{what}: no fabric is up (under {prefix}): run `contend fabric up --nodes N --ppn K "
                        "--link 1gbit` first")
    return built


class _Builder:
    """The commands that cable one fabric, each name recorded so a failure can undo them."""

    def __init__(self, fabric: Fabric):
        self.f = fabric
        self.rate = fabric.link

    def namespace(self, name: str) -> None:
        _run("ip", "netns", "add", name)
        _run("ip", "-n", name, "link", "set", "lo", "up")

    def shape(self, namespace: str, device: str) -> None:
        _run("ip", "netns", "exec", namespace, "tc", "qdisc", "add", "dev", device, "root", "tbf",
             "rate", self.rate, "burst", TBF_BURST, "latency", self.f.queue)

    def cable(self, ns_a: str, dev_a: str, ns_b: str, dev_b: str) -> None:
        """A shaped veth pair between two namespaces, both ends up."""
        _run("ip", "link", "add", dev_a, "netns", ns_a, "type", "veth", "peer", "name", dev_b, "netns", ns_b)
        for ns, dev in ((ns_a, dev_a), (ns_b, dev_b)):
            _run("ip", "-n", ns, "link", "set", dev, "up")
            self.shape(ns, dev)

    def address(self, ns: str, dev: str, cidr: str) -> None:
        _run("ip", "-n", ns, "addr", "add", cidr, "dev", dev)

    def build(self) -> None:
        f = self.f
        for i in range(f.nodes):
            self.namespace(f.node_namespace(i))
        if f.topology == "star":
            self.star()
        else:
            self.routers()

    def star(self) -> None:
        f, switch = self.f, f"{self.f.prefix}sw"
        self.namespace(switch)
        _run("ip", "-n", switch, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", switch, "link", "set", "br0", "up")
        for i in range(f.nodes):
            self.cable(f.node_namespace(i), "eth0", switch, f"p{i}")
            _run("ip", "-n", switch, "link", "set", f"p{i}", "master", "br0")
            self.address(f.node_namespace(i), "eth0", f"{f.node_address(i)}/24")

    def routers(self) -> None:
        f = self.f
        router = [f"{f.prefix}r{i}" for i in range(f.nodes)]
        for i in range(f.nodes):
            self.namespace(router[i])
            for key in ("net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0",
                        "net.ipv4.conf.default.rp_filter=0"):
                _run("ip", "netns", "exec", router[i], "sysctl", "-q", "-w", key)
            self.cable(f.node_namespace(i), "eth0", router[i], "node")
            self.address(f.node_namespace(i), "eth0", f"10.77.{i}.2/24")
            self.address(router[i], "node", f"10.77.{i}.1/24")
            _run("ip", "-n", f.node_namespace(i), "route", "add", "default", "via", f"10.77.{i}.1")
        links = f.nodes - 1 if f.topology == "line" or f.nodes <= 2 else f.nodes
        for k in range(links):  # link k: router k (east, .1) to router k+1 (west, .2)
            east, west = router[k], router[(k + 1) % f.nodes]
            self.cable(east, "east", west, "west")
            self.address(east, "east", f"10.78.{k}.1/30")
            self.address(west, "west", f"10.78.{k}.2/30")
        for i in range(f.nodes):
            for j in range(f.nodes):
                if i == j:
                    continue
                if self.goes_east(i, j, links):
                    via = f"10.78.{i}.2"  # the west end of link i
                else:
                    via = f"10.78.{(i - 1) % f.nodes}.1"  # the east end of the link before
                _run("ip", "-n", router[i], "route", "add", f"10.77.{j}.0/24", "via", via)

    def goes_east(self, i: int, j: int, links: int) -> bool:
        """Shortest way from router i to router j (ties go east, i.e. to higher indices)."""
        if links < self.f.nodes:  # a line
            return j > i
        return (j - i) % self.f.nodes <= self.f.nodes // 2


def up(nodes: int, ppn: int, link: str, topology: str = "star", prefix: str = DEFAULT_PREFIX,
       queue: str = TBF_LATENCY) -> Fabric:
    """Build the fabric; all or nothing. A UserError if one is already up or the input is bad."""
    if topology not in TOPOLOGIES:
        raise UserError(f"--topology: expected one of {', '.join(TOPOLOGIES)}, got {topology!r}")
    if not 2 <= nodes <= MAX_NODES:
        raise UserError(f"--nodes: expected 2..{MAX_NODES}, got {nodes}")
    if not 1 <= ppn <= MAX_PPN:
        raise UserError(f"--ppn: expected 1..{MAX_PPN}, got {ppn}")
    parse_link_rate(link)
    parse_queue(queue)
    _require_tools()
    existing = our_namespaces(prefix)
    if existing or _state_file(prefix).exists():
        raise UserError(
            f"a fabric is already up ({len(existing)} namespaces named {prefix}*); run `contend fabric down` first"
        )
    fabric = Fabric(prefix=prefix, nodes=nodes, ppn=ppn, link=link.lower(), topology=topology,
                    queue=queue.strip().lower())
    try:
        _Builder(fabric).build()
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        _state_file(prefix).write_text(json.dumps(asdict(fabric)))
    except BaseException as exc:
        down(prefix)
        if isinstance(exc, subprocess.CalledProcessError):
            reason = (exc.stderr or "").strip().splitlines()[-1:] or [f"exit {exc.returncode}"]
            raise UserError(f"building the fabric failed at `{' '.join(exc.cmd)}`: {reason[0]}") from None
        raise
    return fabric


@contextlib.contextmanager
def session(nodes: int, ppn: int, link: str, topology: str = "star", prefix: str = DEFAULT_PREFIX,
            queue: str = TBF_LATENCY) -> Iterator[Fabric]:
    """A fabric for the length of a with-block: built on entry, removed on exit, also on errors."""
    fabric = up(nodes, ppn, link, topology, prefix, queue)
    try:
        yield fabric
    finally:
        down(fabric.prefix)


def _pids_in(namespace: str) -> list[int]:
    listing = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True).stdout
    return [int(pid) for pid in listing.split() if pid.isdigit()]


def down(prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Remove every namespace with the prefix (ending the processes contend started inside them, by
    pid) and the state file. Returns the namespaces removed; safe to call when nothing is up."""
    if os.geteuid() != 0:
        raise UserError("removing the emulated fabric needs root; run as root")
    names = our_namespaces(prefix)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = [pid for name in names for pid in _pids_in(name)]
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 2
        while pids and time.monotonic() < deadline and any(_pids_in(n) for n in names):
            time.sleep(0.05)
    for name in names:
        subprocess.run(["ip", "netns", "delete", name], capture_output=True)
    _state_file(prefix).unlink(missing_ok=True)
    left = our_namespaces(prefix)
    if left:
        raise UserError(f"could not remove namespaces {', '.join(left)}")
    return names


_DROPPED = re.compile(r"\(dropped (\d+),")


def dropped_packets(fabric: Fabric) -> int:
    """Packets the fabric's shaped queues have dropped since it was built (tbf counters, all links)."""
    total = 0
    for namespace in our_namespaces(fabric.prefix):
        shown = subprocess.run(["ip", "netns", "exec", namespace, "tc", "-s", "qdisc", "show"],
                               capture_output=True, text=True).stdout
        total += sum(int(n) for n in _DROPPED.findall(shown))
    return total


def check_placement(fabric: Fabric, node_of_rank: Sequence[int]) -> list[int]:
    """A placement of ranks on the fabric's nodes as ints; a UserError naming the first rank on a node
    the fabric does not have, or the first node given more than ppn ranks."""
    nodes = [int(n) for n in node_of_rank]
    held: dict[int, list[int]] = {}
    for rank, node in enumerate(nodes):
        if not 0 <= node < fabric.nodes:
            raise UserError(f"placement puts rank {rank} on node {node}, but the fabric has nodes 0..{fabric.nodes - 1}")
        held.setdefault(node, []).append(rank)
        if len(held[node]) > fabric.ppn:
            raise UserError(f"placement puts ranks {', '.join(map(str, held[node]))} on node {node}, more than "
                            f"the fabric's {fabric.ppn} per node")
    return nodes


def write_rank_wrapper(fabric: Fabric, directory: Path, node_of_rank: Sequence[int] | None = None) -> Path:
    """A launcher wrapper: put MPI rank $PMI_RANK in its node's namespace, with the node's host name.

    Rank r runs on node r // ppn, or on ``node_of_rank[r]`` when a placement is given (checked by
    ``check_placement``); a rank beyond them has no node and exits 2. A private UTS namespace gives the rank its
    node's host name, so gethostname() and MPI_Get_processor_name() tell nodes apart as on a real cluster.
    """
    if node_of_rank is None:
        node_of_rank = [rank // fabric.ppn for rank in range(fabric.nodes * fabric.ppn)]
    cases = "".join(f"  {rank}) node={node} ;;\n" for rank, node in enumerate(check_placement(fabric, node_of_rank)))
    path = Path(directory) / "contend-fabric-rank"
    path.write_text(
        "#!/bin/sh\n"
        "# Written by contend: run one MPI rank inside its emulated node.\n"
        'rank="${PMI_RANK:?not started by an MPICH launcher}"\n'
        f'case "$rank" in\n{cases}  *) echo "rank $rank has no node" >&2; exit 2 ;;\nesac\n'
        f'exec ip netns exec "{fabric.prefix}n$node" unshare --uts '
        f"sh -c 'hostname \"$0\" && exec \"$@\"' \"{fabric.host_prefix}$node\" \"$@\"\n"
    )
    path.chmod(0o755)
    return path
