"""One global clock for all ranks (docs/formats.md, "Trace files"; docs/measure.md, "Tracing").

The tracer measures, at MPI_Init and again at MPI_Finalize, each rank's offset to rank 0's clock with
ping-pongs, keeping the sample of shortest round trip (its error is at most half that round trip).
Between the two samples the offset is interpolated linearly (a constant drift); a rank that never
finalized keeps its first offset. Times become picoseconds since rank 0's first sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contend.native.trace.files import RankTrace


@dataclass(frozen=True)
class Correction:
    """global_ns = local + offset + drift * (local - at)"""

    rank: int
    offset_ns: int
    drift: float  # ns per ns
    at_ns: int
    error_ns: float  # half the best round trip (the larger of the two samples)

    def to_global_ns(self, local: np.ndarray) -> np.ndarray:
        local = np.asarray(local, dtype=np.int64)
        drift = np.rint(self.drift * (local - self.at_ns).astype(np.float64)).astype(np.int64)
        return local + self.offset_ns + drift

    def as_dict(self) -> dict:
        return {"rank": self.rank, "offset_ns": self.offset_ns, "drift_ppm": self.drift * 1e6,
                "error_ns": self.error_ns}


def correction(trace: RankTrace) -> Correction:
    first, last = trace.header["at_init"], trace.header["at_finalize"]
    offset, at = int(first["offset_ns"]), int(first["local_ns"])
    drift = 0.0
    errors = [float(first["rtt_ns"]) / 2]
    if int(last["rtt_ns"]) >= 0 and int(last["local_ns"]) > at:
        drift = (int(last["offset_ns"]) - offset) / (int(last["local_ns"]) - at)
        errors.append(float(last["rtt_ns"]) / 2)
    return Correction(rank=trace.rank, offset_ns=offset, drift=drift, at_ns=at, error_ns=max(errors))


def run_origin_ns(traces: list[RankTrace]) -> int:
    """Time zero of the records: rank 0's clock at its first sample."""
    return int(traces[0].header["at_init"]["local_ns"])
