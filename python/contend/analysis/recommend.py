"""Concrete advice from a ``Diagnosis``, each item with the numbers that support it (docs/models.md,
"Diagnosis", Recommendations). The rules are few and explicit, so a reader can check each against the
tables it cites."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contend.analysis.trace_ops import GETS

NEGLIGIBLE = 0.01  # t_contention below 1% of ranks x run time: nothing to fix
DOMINANT = 0.6  # one class (initiator / target) holding at least 60% of the contention
MOVING = 3  # a hot target that is the hottest in at least 3 different time bins moves


@dataclass(frozen=True)
class Recommendation:
    advice: str
    evidence: str

    def to_dict(self) -> dict[str, str]:
        return {"advice": self.advice, "evidence": self.evidence}


def recommend(diagnosis) -> list[Recommendation]:
    """The advice for a diagnosis, most important first."""
    out: list[Recommendation] = []
    share = diagnosis.share(diagnosis.contention_time)
    if share < NEGLIGIBLE:
        out.append(Recommendation(
            "Contention is negligible: nothing to gain from spreading data or throttling.",
            f"t_contention is {share:.2%} of ranks x run time ({diagnosis.contention:,.0f} ns over "
            f"{len(diagnosis.messages)} operations)."))
    else:
        split = diagnosis.split()
        if split["target"] >= DOMINANT * diagnosis.contention:
            out.append(_target_advice(diagnosis, split["target"]))
        elif split["initiator"] >= DOMINANT * diagnosis.contention:
            out.append(_initiator_advice(diagnosis, split["initiator"]))
        else:
            out.append(Recommendation(
                "Contention is split between initiators and targets: look at the top call site's two "
                "columns and treat each end (spread hot data, throttle busy initiators).",
                f"initiator {split['initiator'] / diagnosis.contention:.0%}, target "
                f"{split['target'] / diagnosis.contention:.0%} of {diagnosis.contention:,.0f} ns "
                f"({share:.1%} of ranks x run time)."))
    sync_share = diagnosis.share(diagnosis.sync)
    if sync_share >= 0.1 and diagnosis.sync > diagnosis.contention:
        out.append(Recommendation(
            "Synchronisation costs more than contention: look for load imbalance before the collective "
            "regions / receives that wait (not a network problem).",
            f"t_sync {sync_share:.1%} of ranks x run time ({diagnosis.sync:,.0f} ns) against t_contention "
            f"{share:.1%}."))
    return out


def _target_advice(diagnosis, target_total: float) -> Recommendation:
    frame = diagnosis.messages
    at_target = frame[frame["class"] == "target"]
    by_site = at_target.groupby("call_site")["contention"].sum().sort_values(ascending=False)
    site, site_total = str(by_site.index[0]), float(by_site.iloc[0])
    kinds = set(at_target[at_target["call_site"] == site]["kind"])
    by_dst = at_target.groupby("dst")["contention"].sum().sort_values(ascending=False)
    grid = diagnosis.hot_targets()
    busy = [int(np.argmax(column)) for column in grid.T if column.max() > 0]
    hottest = list(dict.fromkeys(busy))  # in time order, each once
    evidence = (f"{target_total / diagnosis.contention:.0%} of the contention ({diagnosis.contention:,.0f} ns, "
                f"t_contention {diagnosis.share(diagnosis.contention_time):.1%} of ranks x run time) is at targets; call site "
                f"{site} causes {site_total / target_total:.0%} of it")
    if len(hottest) >= MOVING:
        shown = ", ".join(map(str, hottest[:6])) + (", ..." if len(hottest) > 6 else "")
        evidence += f"; the hottest target moves over the run through {len(hottest)} ranks ({shown})."
        if kinds & GETS:
            return Recommendation(
                f"A moving hot spot read by {site}: spread the array it reads over all ranks (a block-cyclic "
                "distribution instead of blocked), so the ranks sweeping the same region read from different "
                "owners.", evidence)
        return Recommendation(
            f"A moving hot spot written to by {site}: spread the data it targets (block-cyclic "
            "distribution) or stagger the ranks so they do not reach the same owner together.", evidence)
    top, top_total = int(by_dst.index[0]), float(by_dst.iloc[0])
    evidence += f"; rank {top} alone receives {top_total / target_total:.0%} of the target contention."
    return Recommendation(
        f"Rank {top} is a fixed hot target (an incast at {site}): spread what it receives (a tree or "
        "a distributed owner), stagger the senders, or throttle them to one operation in flight per node: "
        f"{throttle_command(diagnosis, 1)}.", evidence)


def throttle_command(diagnosis, tokens: int) -> str:
    """The command that runs the traced program (./app: the records do not name it) on as many ranks
    under libcontend-throttle.so with this many tokens per node, quoted."""
    return f"`contend throttle --policy token --tokens {tokens} -- mpiexec -n {diagnosis.num_ranks} ./app`"


def _initiator_advice(diagnosis, initiator_total: float) -> Recommendation:
    frame = diagnosis.messages
    contended = (frame["class"] == "initiator") & (frame["contention"] > 0)
    at_initiator = frame[contended]
    by_src = at_initiator.groupby("src")["contention"].sum().sort_values(ascending=False)
    by_site = at_initiator.groupby("call_site")["contention"].sum().sort_values(ascending=False)
    outstanding = float(np.median(diagnosis.outstanding()[contended.to_numpy()]))
    # Half the operations the contended initiators kept in flight: enough to keep the link busy, few
    # enough that they stop queueing behind each other (a starting point for contend tune).
    tokens = max(1, int(outstanding // 2))
    return Recommendation(
        f"Initiator contention: throttle outstanding operations at the busiest initiators to {tokens} "
        f"token(s) ({throttle_command(diagnosis, tokens)}; in the engine --throttle token:{tokens}), or keep "
        f"fewer operations in flight at {by_site.index[0]}.",
        f"{initiator_total / diagnosis.contention:.0%} of the contention ({diagnosis.contention:,.0f} ns) is at "
        f"initiators (t_contention {diagnosis.share(diagnosis.contention_time):.1%} of ranks x run time); rank {int(by_src.index[0])} has {float(by_src.iloc[0]) / initiator_total:.0%} of it; the "
        f"contended operations had a median of {outstanding:.1f} outstanding at their initiator.")
