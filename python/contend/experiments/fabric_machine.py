"""The machine file of the emulated fabric, calibrated from measurements that are not the compared cases.

Two calibration measurements, both between nodes 0 and 1 of the fabric, give every number:
- a single flow: the ``incast`` benchmark with one sender (the same harness code as the compared incasts,
  so it pays the same barriers and TCP ramp-up) gives the bandwidth of one link, TCP/IP headers and all;
- 1-byte round trips: the ``loggp`` benchmark (Netgauge's method) gives the endpoint costs o_s, o_r and
  the gap g, and the one-way latency, which, less the overheads, is spread over the links of the path as
  the hop latency.
Optionally a third: ping-pongs at two sizes within tbf's burst, whose one-way times differ by the bytes'
time at the rate a burst passes (what the host copies through the veth pairs while a link's bucket
holds tokens): the machine's links are then token buckets of the fabric's burst (``[topology] burst``,
``peak_bandwidth``; docs/models.md, "Links"), the one flow giving their sustained rate. The initiator
rests after each round trip until the buckets are full again (burst_pause_s): back to back, a
ping-pong empties them within a few round trips, and then each message waits for the tokens that came
in during the round trip before it, so its one-way time grows at twice the link's rate, not the burst's
(docs/measurements.md, "The fabric's burst rate, measured with full buckets").
Each is repeated; the machine file takes the medians and lists every run in ``[measured]``.
"""

from __future__ import annotations

import datetime
import subprocess
from dataclasses import dataclass
from statistics import median
from typing import Any, Mapping, Sequence

from contend.native.bench.loggp import netgauge_table
from contend.native.bench.results import RunResult
from contend.native.fabric import TBF_BURST_BYTES, Fabric

# Ping-pongs within tbf's 128 KiB burst: their slope is the rate a burst passes at (burst_rate).
BURST_SIZES = (16 * 1024, 64 * 1024)
# How much longer than a bucket's refill the initiator rests (noise in the sleep and the rate).
REFILL_MARGIN = 1.5


def burst_pause_s(fabric: Fabric) -> float:
    """The rest after each calibration round trip: long enough for an emptied bucket to fill again."""
    return REFILL_MARGIN * TBF_BURST_BYTES / fabric.link_Bps


# The engine's topology for each fabric shape, and the links between neighbouring nodes 0 and 1.
TOPOLOGY_KIND = {"line": "mesh", "ring": "torus", "star": "crossbar"}
NEIGHBOUR_LINKS = {"line": 3, "ring": 3, "star": 2}  # injection, (router to router,) ejection


@dataclass(frozen=True)
class LatencySample:
    """One ``loggp`` run at 1 byte (ns)."""

    o_s: float
    o_r: float
    gap: float
    one_way: float  # half the trimmed-mean round trip


def latency_sample(loggp_run: RunResult) -> LatencySample:
    row = netgauge_table(loggp_run).iloc[0]
    return LatencySample(float(row["o_s_ns"]), float(row["o_r_ns"]), float(row["gap_ns"]),
                         float(row["round_trip_ns"]) / 2)


def single_flow_Bps(incast_run: RunResult) -> float:
    """The one sender's bandwidth (bytes / median time per message)."""
    return float(incast_run.results["bandwidth_Bps"].iloc[0])


def burst_rate(pingpong_run: RunResult) -> float:
    """Bytes per second of the bytes between the run's smallest and largest ping-pong sizes: the slope
    of the one-way time, which leaves out what every message costs."""
    rows = pingpong_run.results.sort_values("bytes")
    small, large = rows.iloc[0], rows.iloc[-1]
    return float((large["bytes"] - small["bytes"]) * 1e9 / (large["t_p50_ns"] - small["t_p50_ns"]))


def link_mtu(fabric: Fabric) -> int:
    """The MTU of node 0's link: the largest packet a link forwards at once."""
    shown = subprocess.run(["ip", "-n", fabric.node_namespace(0), "-o", "link", "show", "eth0"],
                           capture_output=True, text=True, check=True).stdout.split()
    return int(shown[shown.index("mtu") + 1])


@dataclass(frozen=True)
class Calibration:
    """Medians of the calibration runs and what follows from them (ns, bytes per second)."""

    fabric: Fabric
    flows_Bps: tuple[float, ...]
    latencies: tuple[LatencySample, ...]
    mtu: int
    bursts_Bps: tuple[float, ...] = ()  # burst_rate of each ping-pong run; (): links of one rate

    @property
    def link_Bps(self) -> float:
        return median(self.flows_Bps)

    @property
    def peak_Bps(self) -> float:
        """The rate a burst passes at; never below the sustained rate (the engine's bound: a noisy
        slope below it says the bucket made no difference)."""
        return max(median(self.bursts_Bps), self.link_Bps)

    @property
    def overheads_exceed_latency(self) -> bool:
        """On TCP the measured o_s + o_r exceed the 1-byte one-way time: they overlap with it."""
        return median((s.o_s + s.o_r) for s in self.latencies) > self.one_way

    @property
    def o(self) -> float:
        """(o_s + o_r) / 2; where that exceeds half the one-way time, half the one-way time (as
        ``contend bench fit`` does), so the model's 1-byte one-way time stays the measured one."""
        measured = median((s.o_s + s.o_r) / 2 for s in self.latencies)
        return min(measured, self.one_way / 2)

    @property
    def gap(self) -> float:
        """The median gap; never negative: a gap below the round trips' noise reads as a negative
        difference of two PRTTs, and the model's g is then 0."""
        return max(0.0, median(s.gap for s in self.latencies))

    @property
    def one_way(self) -> float:
        return median(s.one_way for s in self.latencies)

    @property
    def hop_latency(self) -> float:
        """What the engine's one-way time of 1 byte between neighbours, 2o + 1/B + links x (hop + 1/B),
        leaves for each link; never negative."""
        links = NEIGHBOUR_LINKS[self.fabric.topology]
        byte = 1e9 / self.link_Bps
        return max(0.0, (self.one_way - 2 * self.o - (links + 1) * byte) / links)


def calibrate(fabric: Fabric, flow_runs: Sequence[RunResult], loggp_runs: Sequence[RunResult],
              burst_runs: Sequence[RunResult] = ()) -> Calibration:
    return Calibration(fabric, tuple(single_flow_Bps(r) for r in flow_runs),
                       tuple(latency_sample(r) for r in loggp_runs), link_mtu(fabric),
                       tuple(burst_rate(r) for r in burst_runs))


def _list(values: Sequence[float], scale: float = 1.0, digits: int = 1) -> str:
    return "[" + ", ".join(f"{v * scale:.{digits}f}" for v in values) + "]"


def machine_toml(cal: Calibration, how: str, host: HostTables | None = None) -> str:
    """The machine file; ``how`` says which runs measured it (benchmark settings), for the comments.
    ``host``: this host's tables (``host_tables``); the fabric's nodes are namespaces of this host, so
    every rank shares its cores (one_host) and its MPI library."""
    f = cal.fabric
    kind = TOPOLOGY_KIND[f.topology]
    size = f"nodes = {f.nodes}" if kind == "crossbar" else f"dims = [{f.nodes}]"
    bandwidth = f"{cal.link_Bps * 8 / 1e9:.4f}Gbit/s"
    runs = len(cal.flows_Bps)
    today = datetime.date.today().isoformat()
    hop_note = "; 0 here: 2o already is the whole one-way time" if cal.hop_latency == 0 else ""
    o_how = ("(o_s + o_r) / 2 at 1 byte (loggp: o_s from PRTT(n,d), o_r a timed MPI_Recv of an arrived message)"
             if not cal.overheads_exceed_latency else
             "half the 1-byte one-way time (loggp), because o_s + o_r (see [measured]) exceed it: on TCP they "
             "overlap with the latency; contend bench fit does the same")
    return f"""\
[machine]
name = "fabric-{f.topology}-{f.nodes}"
description = "contend's emulated fabric: {f.nodes} network namespaces as nodes ({f.topology}), tbf {f.link} on every link end, {f.ppn} rank per node, MPICH over TCP"
source = "measured {today} from calibration runs only (one flow; 1-byte round trips{'; ping-pongs within the burst' if cal.bursts_Bps else ''}), medians of {runs} runs; {how}"

# Between nodes the [topology] links replace L and G; o, g and O are paid at the endpoints.
[loggops]
L = "{max(0.0, cal.one_way - 2 * cal.o):.1f}ns"  # measured: 1-byte one-way time less 2o (loggp); used only within a node, and every rank has its own node here
o = "{cal.o:.1f}ns"  # measured: {o_how}
g = "{cal.gap:.1f}ns"  # measured: gap of back-to-back 1-byte messages, (PRTT(n,0) - PRTT(1,0)) / (n-1) (loggp)
G = "{bandwidth}"  # measured: the single flow (replaced by the links between nodes)
O = "0ns"  # not charged: TCP copies each segment as it arrives, overlapped with the transfer, and the single flow's bandwidth already includes that copy
S = 65535  # LogGOPSim's default, not measured: here every receive is posted before its message arrives, so eager and rendezvous sends complete at the same moments

[topology]
kind = "{kind}"  # the fabric's {f.topology} of routers
{size}
ranks_per_node = {f.ppn}
link_bandwidth = "{bandwidth}"  # measured: one flow from node 1 to node 0 (incast with 1 sender), TCP/IP headers excluded
injection_bandwidth = "{bandwidth}"  # node links carry the same tbf rate as router links
hop_latency = "{cal.hop_latency:.1f}ns"  # measured: (1-byte one-way time - 2o - the bytes' link times) / the {NEIGHBOUR_LINKS[f.topology]} links between neighbours{hop_note}
packet = 1  # not the MTU ({cal.mtu} B, [measured]): a veth pair hands a packet on at once and tbf releases it whole, so no link holds a message's first packet for its serialization; the bytes stream end to end
{_bucket_lines(cal)}
# The calibration runs themselves (ns, Gbit/s), one value per run.
[measured]
single_flow_Gbit_s = {_list(cal.flows_Bps, 8 / 1e9, 4)}
o_s_ns = {_list([s.o_s for s in cal.latencies])}
o_r_ns = {_list([s.o_r for s in cal.latencies])}
gap_ns = {_list([s.gap for s in cal.latencies])}
one_way_1B_ns = {_list([s.one_way for s in cal.latencies])}
mtu = {cal.mtu}
{f"burst_Gbit_s = {_list(cal.bursts_Bps, 8 / 1e9, 4)}" if cal.bursts_Bps else ""}{_host_lines(host)}"""


@dataclass(frozen=True)
class HostTables:
    """What a fabric of this host's namespaces takes from the host's machine file (``source``, written
    by ``contend bench fit``): its ``[cores]``, which every namespace's ranks share, and its ``[mpi]``
    (the MPI library's costs, the same library in every namespace; empty if the file has none)."""

    source: str
    cores: Mapping[str, Any]
    mpi: Mapping[str, Any]


def host_tables(machine: str) -> HostTables | None:
    """``machine``'s tables as written, for ``machine_toml``; None if it has no ``[cores]``."""
    from contend.machine.file import load_machine

    document = load_machine(machine).document
    return HostTables(machine, document["cores"], document.get("mpi", {})) if document.get("cores") else None


def _host_lines(host: HostTables | None) -> str:
    """The host's [cores], shared by every rank whatever namespace it runs in, and its [mpi]."""
    if host is None:
        return ""
    keys = "".join(f"{key} = {_toml_value(host.cores[key])}\n" for key in ("per_node", "switch", "quantum")
                   if key in host.cores)
    text = (f"\n\n[cores]  # this host's cores, as measured in {host.source} (contend bench fit): the nodes are "
            f"its namespaces, so all their ranks share them\n{keys}one_host = true\n")
    if host.mpi:
        keys = "".join(f"{key} = {_toml_value(value)}\n" for key, value in host.mpi.items())
        text += f"\n[mpi]  # this host's MPI library, as measured in {host.source}: the same in every namespace\n{keys}"
    return text


def _toml_value(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def _bucket_lines(cal: Calibration) -> str:
    """The [topology] keys of token-bucket links, when the calibration measured bursts."""
    if not cal.bursts_Bps:
        return ""
    return (f'burst = {TBF_BURST_BYTES}  # the fabric\'s tbf burst (bytes), as it was built\n'
            f'peak_bandwidth = "{cal.peak_Bps * 8 / 1e9:.4f}Gbit/s"  # measured: the slope of ping-pongs within '
            f'the burst (one-way time against size), each after a rest that refills the buckets\n')
