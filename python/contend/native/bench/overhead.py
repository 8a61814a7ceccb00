"""Overhead of an interposed library, measured against the noise of the machine (benchmarks/
throttle_overhead.py, benchmarks/trace_overhead.py; docs/measure.md).

Variants of the same run are interleaved: each repetition runs every variant once, in an order rotated
from one repetition to the next, so the machine's drift hits every variant alike. The baseline runs
twice ("none" and "none-again"): the second's "overhead" is pure noise, the resolution of the
measurement at that moment. A variant's overhead is the median of its runs over the baseline's median,
minus one, with a 95% bootstrap interval (runs resampled within each variant, 4000 times).
"""

from __future__ import annotations

import statistics
import sys
from typing import Callable, Mapping, Sequence

import numpy as np

BASELINE, NOISE = "none", "none-again"


def interleaved(variants: Mapping[str, Callable[[], dict[str, float]]], repeats: int,
                label: Callable[[dict[str, float]], str]) -> dict[str, list[dict[str, float]]]:
    """Run every variant ``repeats`` times, interleaved and rotated; progress on stderr."""
    names = list(variants)
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for repeat in range(repeats):
        order = names[repeat % len(names):] + names[:repeat % len(names)]
        for name in order:
            samples[name].append(variants[name]())
        print(f"repetition {repeat + 1}/{repeats}: " + ", ".join(f"{n} {label(samples[n][-1])}" for n in names),
              file=sys.stderr)
    return samples


def overhead(variant: Sequence[float], base: Sequence[float], rng: np.random.Generator) -> tuple[float, float, float]:
    """Median over median minus one, and its 95% bootstrap interval."""
    v, b = np.asarray(variant), np.asarray(base)
    draws = [np.median(rng.choice(v, v.size)) / np.median(rng.choice(b, b.size)) - 1 for _ in range(4000)]
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(np.median(v) / np.median(b) - 1), float(low), float(high)


def overhead_table(values: Mapping[str, Sequence[float]], unit: str, rng: np.random.Generator) -> dict[str, dict]:
    """Print a Markdown table of each variant against the baseline; return the figures."""
    print(f"| variant | {unit}: median (quartiles) | overhead vs {BASELINE} | 95% interval |")
    print("|---|---|---|---|")
    summary: dict[str, dict] = {}
    for name, runs in values.items():
        q1, q2, q3 = statistics.quantiles(runs, n=4, method="inclusive")
        row = summary[name] = {"median": q2, "q1": q1, "q3": q3}
        if name == BASELINE:
            print(f"| {name} | {q2:.1f} ({q1:.1f} .. {q3:.1f}) | (baseline) | |")
            continue
        mid, low, high = overhead(runs, values[BASELINE], rng)
        row.update(overhead=mid, overhead_low=low, overhead_high=high)
        print(f"| {name} | {q2:.1f} ({q1:.1f} .. {q3:.1f}) | {100 * mid:+.2f}% | {100 * low:+.2f}% .. {100 * high:+.2f}% |")
    return summary
