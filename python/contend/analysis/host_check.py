"""Whether a machine file still describes the host: the 1-byte round trip it was fitted with, measured
again with the same benchmark just before and just after `contend predict`'s runs.

A shared host changes speed from one hour to the next (its neighbours, the hypervisor): on 2026-11-27 this
host's 1-byte ping-pong took 1.52 us at 08:02 and 2.2 us from 08:07 on, and the mpi4py programs predicted
with the 08:02 fit missed by 20-23% (docs/measurements.md, "The host moved under its fit"). A
prediction is only as good as the machine file is true of the host during the runs, so `contend predict`
measures that and says when it no longer is. Like with like: the probe is the benchmark, size,
repetitions and statistic the file's own record came from.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from contend.errors import UserError

if TYPE_CHECKING:
    from contend.machine.file import Machine

TOLERANCE_PCT = 10.0  # beyond this the host has left the file's state (runs in one state spread by a few %)
PROBE_RUNS = 3  # each probe is the median of this many runs (a few ms each, plus the launch)


@dataclass(frozen=True)
class Probe:
    """The measurement a machine file's record of the host's 1-byte round trip came from."""

    pattern: str  # contend-bench pattern
    size: int  # bytes
    iters: int
    warmup: int | None  # None: the harness's default
    recorded_ns: float  # the round trip the file records
    statistic: str  # what the record holds and the probe takes: the ping-pong's median, loggp's trimmed mean
    record: str  # where the file keeps it, for messages

    def round_trip(self, run) -> float:
        """This probe's statistic of one run (ns)."""
        if self.pattern == "pingpong":
            from contend.native.bench.loggp import measured_round_trips

            return float(measured_round_trips(run)["median_ns"].iloc[0])
        from contend.experiments.fabric_machine import latency_sample

        return 2 * latency_sample(run).one_way


def probe_of(machine: Machine) -> Probe | None:
    """The probe of a machine file's records: `contend bench fit`'s ping-pong check at its smallest size
    (``[fit]``), or a fabric calibration's 1-byte loggp runs (``[measured]``); None when the file records
    neither (a preset, a hand-written file). Records that are not what those commands write raise a
    UserError naming the file and the key."""
    try:
        return _probe(machine.document)
    except UserError as exc:
        raise UserError(f"{machine.path or machine.name}: {exc}") from None


def _probe(document: Mapping[str, Any]) -> Probe | None:
    from contend.native.bench.registry import FIT_ITERS

    fit, measured = document.get("fit"), document.get("measured")
    if isinstance(fit, Mapping) and "pingpong_bytes" in fit:
        sizes, times = _numbers(fit, "pingpong_bytes", "fit"), _numbers(fit, "pingpong_median_ns", "fit")
        if len(sizes) != len(times) or not sizes:
            raise UserError("[fit] pingpong_bytes and pingpong_median_ns: not one time per size")
        if not sizes[0].is_integer():
            raise UserError(f"[fit] pingpong_bytes: sizes are whole bytes, not {sizes[0]!r}")
        iters = fit.get("iters", FIT_ITERS)
        if not isinstance(iters, int) or isinstance(iters, bool) or iters < 1:
            raise UserError(f"[fit] iters: a positive whole number of round trips, not {iters!r}")
        return Probe("pingpong", int(sizes[0]), iters, None, float(times[0]), "median",
                     "[fit] pingpong_median_ns")
    if isinstance(measured, Mapping) and "one_way_1B_ns" in measured:
        from contend.experiments.fabric_check import Settings

        one_way = _numbers(measured, "one_way_1B_ns", "measured")
        if not one_way:
            raise UserError("[measured] one_way_1B_ns: no runs")
        settings = Settings()
        return Probe("loggp", 1, settings.latency_iters, settings.warmup, 2 * statistics.median(one_way),
                     "trimmed mean", "[measured] one_way_1B_ns")
    return None


def _numbers(table: Mapping[str, Any], key: str, name: str) -> list[float]:
    values = table.get(key)
    if not isinstance(values, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in values):
        raise UserError(f"[{name}] {key}: a list of positive numbers, as contend writes it, not {values!r}")
    return [float(v) for v in values]


def measure(probe: Probe, fabric=None, timeout_s: float = 120) -> float:
    """The host's round trip now: the median of ``PROBE_RUNS`` runs of ``probe`` (ns), on ``fabric`` if
    given, else on this host's shared memory."""
    from contend.native.bench.runner import run_benchmark

    return statistics.median(
        probe.round_trip(run_benchmark(probe.pattern, ranks=2, sizes=[probe.size], iters=probe.iters,
                                       warmup=probe.warmup, fabric=fabric, timeout_s=timeout_s))
        for _ in range(PROBE_RUNS))


@dataclass
class HostCheck:
    """The probe's round trip before and after the runs against the machine file's record."""

    probe: Probe
    before_ns: float
    after_ns: float | None = None

    def changes_pct(self) -> list[float]:
        return [100 * (t / self.probe.recorded_ns - 1) for t in (self.before_ns, self.after_ns) if t is not None]

    def change_pct(self) -> float:
        """The larger change, with its sign."""
        return max(self.changes_pct(), key=abs)

    def holds(self) -> bool:
        return abs(self.change_pct()) <= TOLERANCE_PCT

    def summary(self) -> dict[str, Any]:
        p = self.probe
        return {"pattern": p.pattern, "bytes": p.size, "statistic": p.statistic, "record": p.record,
                "recorded_ns": p.recorded_ns, "before_ns": self.before_ns, "after_ns": self.after_ns,
                "change_pct": self.change_pct(), "tolerance_pct": TOLERANCE_PCT, "holds": self.holds()}

    def _times(self, before: str, after: str) -> str:
        return " and ".join(f"{t:,.0f} ns {when}" for t, when in ((self.before_ns, before), (self.after_ns, after))
                            if t is not None)

    def describe(self, machine: str) -> str:
        """One line for the terminal: the probe now and in the file."""
        return (f"host check: {self.probe.size}-byte round trip ({self.probe.pattern}, {self.probe.statistic} of "
                f"{self.probe.iters}) {self._times('before', 'after')} the runs; {machine} records "
                f"{self.probe.recorded_ns:,.0f} ns ({self.change_pct():+.1f}%, tolerance {TOLERANCE_PCT:.0f}%)")

    def warning(self, machine: str) -> str | None:
        """One line when the host is no longer the machine file's, else None."""
        if self.holds():
            return None
        return (f"predict: this host's {self.probe.size}-byte round trip ({self.probe.pattern}) took "
                f"{self._times('before the runs', 'after them')}, against {self.probe.recorded_ns:,.0f} ns in "
                f"{machine} ({self.change_pct():+.0f}%): the machine file no longer describes the host; fit it "
                "again (contend bench fit) just before predicting")
