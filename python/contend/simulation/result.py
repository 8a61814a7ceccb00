"""The result of one simulation, in the schedule's time unit (ns), as Python users and ``--json`` see it.

The engine counts integer picoseconds; a GOAL schedule counts nanoseconds. Times are reported in ns:
an ``int`` when the value is a whole number of ns (always, when all parameters are whole ns), else a
``float``. Per-message records and timeline rows stay as the engine's exact integer-ps columns in
``record_columns`` / ``timeline_columns``; ``records`` / ``timeline`` are pandas views in float ns.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

PS_PER_NS = 1000


def ps_to_ns(value: int) -> int | float:
    """Picoseconds to the schedule's unit: an int when exact.

    >>> ps_to_ns(18_000_000), ps_to_ns(1500)
    (18000, 1.5)
    """
    whole, rest = divmod(int(value), PS_PER_NS)
    return whole if rest == 0 else value / PS_PER_NS


def ps_array_to_ns(values: np.ndarray) -> np.ndarray:
    """A picosecond array in ns: int64 when every value is a whole ns, else float64."""
    values = np.asarray(values)
    if values.size and np.any(values % PS_PER_NS):
        return values / PS_PER_NS
    return (values // PS_PER_NS).astype(np.int64)


@dataclass(frozen=True)
class Deadlock:
    """Why a schedule could not finish: blocked operations by rank and op index.

    ``count`` is the total number of blocked operations; the three lists hold at most 100 items each,
    dicts with rank, op (index in the rank's program), line (in the GOAL file, when known), kind,
    peer, tag, bytes.
    """

    count: int
    unmatched_recvs: tuple[Mapping[str, Any], ...]
    unmatched_sends: tuple[Mapping[str, Any], ...]
    never_started: tuple[Mapping[str, Any], ...]
    totals: Mapping[str, int] = field(default_factory=dict)  # per list, before the 100-item cap

    @classmethod
    def from_engine(cls, raw: Mapping[str, Any]) -> "Deadlock":
        count_keys = {"unmatched_recvs": "unmatched_recv_count", "unmatched_sends": "unmatched_send_count",
                      "never_started": "never_started_count"}
        lists = {name: tuple(raw.get(name, ())) for name in count_keys}
        totals = {name: int(raw.get(key, len(lists[name]))) for name, key in count_keys.items()}
        return cls(count=int(raw["count"]), totals=totals, **lists)

    def ranks(self) -> list[int]:
        """The ranks with a blocked operation (among the reported ones), sorted."""
        items = self.unmatched_recvs + self.unmatched_sends + self.never_started
        return sorted({int(item["rank"]) for item in items})

    def describe(self, limit: int = 10) -> list[str]:
        """Human-readable lines, one per blocked operation, at most ``limit`` per category."""
        lines = []
        for name, title in (
            ("unmatched_recvs", "receive never matched"),
            ("unmatched_sends", "send never matched"),
            ("never_started", "never started"),
        ):
            items = getattr(self, name)
            for item in items[:limit]:
                lines.append(f"rank {item['rank']} op {item['op']}{_label(item)}: {_operation(item)}: {title}")
            hidden = self.totals.get(name, len(items)) - min(len(items), limit)
            if hidden > 0:
                lines.append(f"... {hidden} more: {title}")
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "totals": dict(self.totals),
            "ranks": self.ranks(),
            "unmatched_recvs": [dict(i) for i in self.unmatched_recvs],
            "unmatched_sends": [dict(i) for i in self.unmatched_sends],
            "never_started": [dict(i) for i in self.never_started],
        }


def _label(item: Mapping[str, Any]) -> str:
    """The op's GOAL line, where the engine knows it."""
    return f" (line {item['line']})" if item.get("line") else ""


def _operation(item: Mapping[str, Any]) -> str:
    kind = item.get("kind", "op")
    if kind == "recv":
        peer = "any source" if item.get("peer") == -1 else f"from {item.get('peer')}"
        return f"recv {item.get('bytes')}b {peer} tag {item.get('tag')}"
    if kind == "send":
        return f"send {item.get('bytes')}b to {item.get('peer')} tag {item.get('tag')}"
    return str(kind)


@dataclass(frozen=True)
class SimulationResult:
    """What ``contend.simulate`` returns. Times are in ns (the GOAL time unit).

    Attributes: ``makespan`` (latest finish time of any rank), ``ranks`` (numpy array of each rank's
    finish time), ``num_ranks``, ``events`` (ops plus messages the engine processed), ``ops``,
    ``messages``, ``wall_seconds`` (engine time, not a model quantity), ``deadlock`` (``None`` or a
    ``Deadlock``), ``params`` (the parameters used, in ns like everything here: L, o, g in ns, G, O in
    ns per byte, S in bytes, see ``parameters_ns``), ``engine_params`` (the same in the engine's units,
    ps and ps per byte, for code that hands them back to the engine),
    ``workload`` (what was simulated), ``records`` / ``timeline`` (pandas DataFrames or ``None``),
    ``links`` (per-link statistics when a network was simulated, else ``None``), ``network``
    (its ``NetworkLayout``: link ends, node coordinates, placement), ``noise_charged`` (detour time
    the noise model added to CPU work, summed over all ranks; 0 without noise), ``windowed`` (the
    engine ran the events window by window, docs/models.md "Noise", Cost: same results, engine speed only),
    ``threads`` (how many threads shared those windows; 1 otherwise) and ``critical_path`` (a
    ``contend.simulation.critical_path.CriticalPath`` when asked for and the run finished, else ``None``).
    """

    makespan: int | float
    ranks: np.ndarray = field(repr=False)
    num_ranks: int
    events: int
    ops: int
    messages: int
    wall_seconds: float
    deadlock: Deadlock | None
    engine_params: Mapping[str, Any] = field(repr=False)
    workload: Mapping[str, Any]
    record_columns: Mapping[str, np.ndarray] | None = field(default=None, repr=False)
    timeline_columns: Mapping[str, np.ndarray] | None = field(default=None, repr=False)
    link_columns: Mapping[str, np.ndarray] | None = field(default=None, repr=False)
    noise_charged: int | float = 0
    admission_waits: int = 0
    admission_grants: int = 0
    admission_max_in_use: int = 0
    memory: Mapping[str, Any] | None = None
    windowed: bool = False
    threads: int = 1
    critical_path: Any = None

    @classmethod
    def from_engine(cls, raw: Mapping[str, Any], params: Mapping[str, Any], workload: Mapping[str, Any]):
        """Wrap the engine's result dict (integer ps, raw little-endian column buffers)."""
        from contend.simulation.critical_path import CriticalPath
        from contend.simulation.links import engine_link_columns

        dtypes = raw.get("dtypes") or {}

        def columns(name: str) -> dict[str, np.ndarray] | None:
            buffers = raw.get(name)
            if buffers is None:
                return None
            return {col: np.frombuffer(buf, dtype=dtypes[col]) for col, buf in buffers.items()}

        return cls(
            makespan=ps_to_ns(raw["makespan_ps"]),
            ranks=ps_array_to_ns(np.asarray(raw["ranks_ps"], dtype=np.uint64)),
            num_ranks=int(raw["num_ranks"]),
            events=int(raw["events"]),
            ops=int(raw["ops"]),
            messages=int(raw["messages"]),
            wall_seconds=float(raw["wall_seconds"]),
            deadlock=Deadlock.from_engine(raw["deadlock"]) if raw.get("deadlock") else None,
            engine_params=dict(params),
            workload=dict(workload),
            record_columns=columns("records"),
            timeline_columns=columns("timeline"),
            link_columns=engine_link_columns(raw),
            noise_charged=ps_to_ns(raw.get("noise_ps", 0)),
            admission_waits=int(raw.get("admission_waits", 0)),
            admission_grants=int(raw.get("admission_grants", 0)),
            admission_max_in_use=int(raw.get("admission_max_in_use", 0)),
            memory=_memory_stats(raw.get("memory")),
            windowed=bool(raw.get("windowed", False)),
            threads=int(raw.get("threads", 1)),
            critical_path=CriticalPath.from_engine(raw["critical_path"]) if raw.get("critical_path") else None,
        )

    @functools.cached_property
    def params(self) -> dict[str, Any]:
        """The parameters used, in ns (``parameters_ns`` of ``engine_params``)."""
        return parameters_ns(self.engine_params)

    @property
    def finished(self) -> bool:
        """False when the schedule deadlocked."""
        return self.deadlock is None

    @functools.cached_property
    def records(self):
        """Per-message records as a pandas DataFrame (times in float ns), or None if not requested."""
        from contend.simulation.records import records_frame

        return None if self.record_columns is None else records_frame(self.record_columns)

    @functools.cached_property
    def timeline(self):
        """CPU activity (rank, cpu, kind, start, end; times in float ns), or None if not requested."""
        from contend.simulation.records import timeline_frame

        return None if self.timeline_columns is None else timeline_frame(self.timeline_columns)

    @functools.cached_property
    def network(self):
        """The simulated network's ``NetworkLayout``, or None when the run had no topology."""
        from contend.simulation.layout import NetworkLayout

        return None if self.link_columns is None else NetworkLayout.of(self.engine_params, self.num_ranks)

    @functools.cached_property
    def links(self):
        """Per-link statistics as a DataFrame (link, class, from, to, bytes, busy_ns, peak_flows,
        utilisation = busy / makespan), or None when the run had no topology."""
        from contend.simulation.links import links_frame

        return None if self.link_columns is None else links_frame(self.link_columns, self.network, self.makespan)

    def busiest_link(self) -> dict[str, Any] | None:
        """The link that carried the most bytes (the columns of ``links`` as plain values), or None."""
        from contend.simulation.links import busiest_link

        return None if self.link_columns is None else busiest_link(self.link_columns, self.network, self.makespan)

    def to_dict(self, include_ranks: bool = True) -> dict[str, Any]:
        """The JSON summary of ``contend sim --json``: plain Python types, times in ns."""
        summary = {
            "makespan": self.makespan,
            "time_unit": "ns",
            "num_ranks": self.num_ranks,
            "events": self.events,
            "ops": self.ops,
            "messages": self.messages,
            "wall_seconds": self.wall_seconds,
            "windowed": self.windowed,
            "threads": self.threads,
            "deadlock": None if self.deadlock is None else self.deadlock.to_dict(),
            "params": self.params,
            "workload": dict(self.workload),
            "busiest_link": self.busiest_link(),
            "noise_charged": self.noise_charged,
            "admission_waits": self.admission_waits,
            "admission_grants": self.admission_grants,
            "admission_max_in_use": self.admission_max_in_use,
            "critical_path": None if self.critical_path is None else self.critical_path.to_dict(),
        }
        if self.memory is not None:
            summary["memory"] = dict(self.memory)
        if include_ranks:
            summary["ranks"] = self.ranks.tolist()
        return summary

    def to_json(self, indent: int | None = None) -> str:
        """``to_dict()`` as a JSON string."""
        return json.dumps(self.to_dict(), indent=indent)

    def rank_statistics(self) -> dict[str, int | float]:
        """Minimum, median and maximum of the per-rank finish times (ns)."""
        if self.ranks.size == 0:
            return {"min": 0, "median": 0, "max": 0}
        median = np.median(self.ranks)
        return {
            "min": self.ranks.min().item(),
            "median": int(median) if float(median).is_integer() else float(median),
            "max": self.ranks.max().item(),
        }


def _memory_stats(raw: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The memory model's totals in ns: bytes written into each node, NIC write time, calc delay."""
    if raw is None:
        return None
    return {"bytes_written": [int(b) for b in raw["bytes_written"]], "write_busy": ps_to_ns(raw["write_busy_ps"]),
            "calc_delay": ps_to_ns(raw["calc_delay_ps"])}


def parameters_ns(params: Mapping[str, Any]) -> dict[str, Any]:
    """Engine parameters in the schedule's unit: L, o, g in ns; G, O in ns per byte; S in bytes; the
    same for the nested ``rendezvous`` costs (messages larger than S), which may be None. A
    ``network`` (from a machine's ``[topology]``) keeps its values, with ``hop_latency`` in ns; a
    ``noise`` becomes its settings in ns and Hz; a ``node`` model keeps its values, a rate policy's
    gap and its cores' switch and quantum in ns; a ``memory`` model keeps its values (bandwidths in bytes/s), ``cpu_per_byte`` in ns;
    ``cpu_scale`` (a factor) stays as it is.

    >>> parameters_ns({"L": 3_000_000, "o": 1_500_000, "g": 1_000_000, "G": 80, "O": 0, "S": 65535})
    {'L': 3000, 'o': 1500, 'g': 1000, 'G': 0.08, 'O': 0, 'S': 65535}
    """
    from contend.noise.settings import NoiseSettings

    converted = {}
    for key, value in params.items():
        if key == "noise":
            converted[key] = NoiseSettings.from_engine(value).to_json()
        elif key == "rendezvous":
            converted[key] = None if value is None else parameters_ns(value)
        elif key == "network":
            converted[key] = {**value, "hop_latency": ps_to_ns(value["hop_latency"])}
        elif key == "memory":
            converted[key] = {**value, "cpu_per_byte": value["cpu_per_byte"] / PS_PER_NS} if "cpu_per_byte" in value else dict(value)
        elif key == "node":
            policy = value.get("policy")
            if policy is not None and "gap" in policy:
                policy = {**policy, "gap": ps_to_ns(policy["gap"])}
            cores = value.get("cores")
            if cores is not None:
                cores = {**cores, **{k: ps_to_ns(cores[k]) for k in ("switch", "quantum") if k in cores}}
            converted[key] = {**value, "policy": policy, "cores": cores}
        else:
            converted[key] = value if key in ("S", "cpu_scale") else ps_to_ns(value)
    return converted

