"""Where the time goes: the critical path of a simulated run and the makespan split along it.

The engine walks back from the rank that finished last through what determined each start time
(docs/models.md, "Where the time goes") and splits the makespan into the parts below, which sum
to it exactly (in ps). This module owns their JSON form (``contend sim --json``, the records'
metadata), the terminal table and the bar of the split in HTML reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from contend.simulation.result import ps_to_ns

#: The parts of the split, in the order they are shown.
PARTS = ("computation", "overhead", "wire", "late_partner", "contention", "cores", "noise")
#: How each part reads in tables and plots.
LABELS = {"computation": "computation", "overhead": "CPU/NIC overhead", "wire": "wire",
          "late_partner": "waiting on a late partner", "contention": "contention",
          "cores": "waiting for a shared core", "noise": "noise"}


@dataclass(frozen=True)
class CriticalPath:
    """The split of the makespan along the critical path (``split_ps``: exact integer ps per part),
    the path's length in operations and in steps, and its first steps in time order (each a dict:
    rank, op, activity, start, end in ns, and the nonzero parts of its split in ns)."""

    split_ps: Mapping[str, int]
    ops: int
    steps: int
    first_steps: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_engine(cls, raw: Mapping[str, Any]) -> CriticalPath:
        first = [{"rank": s["rank"], "op": s["op"], "activity": s["activity"], "start": ps_to_ns(s["start_ps"]),
                  "end": ps_to_ns(s["end_ps"]),
                  "split": {k: ps_to_ns(v) for k, v in s["split_ps"].items() if v}} for s in raw["steps"]]
        return cls(split_ps={k: int(raw["split_ps"][k]) for k in PARTS}, ops=int(raw["ops"]),
                   steps=int(raw["steps_total"]), first_steps=first)

    @property
    def length_ps(self) -> int:
        """The makespan: the parts' sum."""
        return sum(self.split_ps.values())

    @property
    def split(self) -> dict[str, int | float]:
        """Each part in ns."""
        return {k: ps_to_ns(v) for k, v in self.split_ps.items()}

    @property
    def shares(self) -> dict[str, float]:
        """Each part as a fraction of the makespan (0 for an empty run)."""
        total = self.length_ps
        return {k: (v / total if total else 0.0) for k, v in self.split_ps.items()}

    def to_dict(self) -> dict[str, Any]:
        """The ``critical_path`` object of ``contend sim --json`` (docs/formats.md)."""
        return {"split": self.split, "shares": self.shares, "ops": self.ops, "steps": self.steps,
                "first_steps": self.first_steps}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CriticalPath:
        """Back from ``to_dict`` (e.g. a records file's metadata); ns to exact ps."""
        # (records written before the cores part have no "cores": none waited for one)
        return cls(split_ps={k: round(data["split"].get(k, 0) * 1000) for k in PARTS}, ops=int(data["ops"]),
                   steps=int(data["steps"]), first_steps=list(data.get("first_steps", [])))

    def table(self, title: str = "where the time goes (critical path)"):
        """The split as a terminal table: each part in ns and as a share of the makespan."""
        from contend.report.tables import format_time
        from contend.report.terminal import Table

        table = Table(title=title, title_justify="left")
        table.add_column("part")
        table.add_column("time", justify="right")
        table.add_column("share", justify="right")
        for key in PARTS:
            table.add_row(LABELS[key], format_time(self.split[key]), f"{self.shares[key]:.1%}")
        table.add_row("on the path", f"{self.ops:,} ops", f"{self.steps:,} steps")
        return table

    def bar(self, path, title: str) -> None:
        """One horizontal bar of the split (PNG, atomically), a segment per part, in us."""
        from contend.report.plots import pyplot, save_figure

        plt = pyplot()
        figure, axes = plt.subplots(figsize=(8, 3.0), dpi=110)
        left = 0.0
        for key in PARTS:
            width = self.split_ps[key] / 1e6
            axes.barh([0], [width], left=left, label=f"{LABELS[key]} {self.shares[key]:.1%}")
            left += width
        axes.set_yticks([])
        axes.set_xlabel("time along the critical path (us)")
        axes.set_title(title)
        axes.legend(fontsize="small", ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.35))
        save_figure(figure, path)
