"""The tracer's per-rank files (``native/trace``, docs/formats.md "Trace files"): a fixed header, fixed
96-byte records, a table of the distinct return addresses with their object and load bias, the
objects' paths, and the communicators the collectives ran on. Every problem is a ``UserError`` naming
the file: never a half-read trace."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contend.errors import UserError

MAGIC = b"CTRACE1\0"
VERSION = 2
FRAMES = 6

_CLOCK = [("local_ns", "<i8"), ("offset_ns", "<i8"), ("rtt_ns", "<i8")]
HEADER = np.dtype([
    ("magic", "S8"), ("version", "<u4"), ("header_bytes", "<u4"), ("record_bytes", "<u4"), ("frames", "<u4"),
    ("rank", "<i4"), ("ranks", "<i4"), ("depth", "<i4"), ("pid", "<i4"),
    ("records", "<u8"), ("dropped", "<u8"), ("capacity", "<u8"), ("untracked", "<u8"),
    ("at_init", _CLOCK), ("at_finalize", _CLOCK),
    ("addresses", "<u8"), ("names_bytes", "<u8"), ("host", "S64"),
    ("clock_kind", "<i4"), ("reserved", "<i4"), ("calibration", "<i8", (4,)),
    ("comm_words", "<u8"), ("size_words", "<u8"),
])
CLOCK_NS, CLOCK_TSC = 0, 1
RECORD = np.dtype([
    ("posted", "<i8"), ("returned", "<i8"), ("completed", "<i8"), ("bytes", "<i8"),
    ("peer", "<i4"), ("tag", "<i4"), ("kind", "<u2"), ("flags", "<u2"), ("depth", "<u4"),
    ("frames", "<u8", (FRAMES,)),
])
ADDRESS = np.dtype([("address", "<u8"), ("bias", "<u8"), ("name", "<u4"), ("unused", "<u4")])
NO_NAME = 0xFFFFFFFF

# native/trace/trace.h, enum of kinds: the numbers are the file format.
KINDS = {
    0: "send", 1: "isend", 2: "ssend", 3: "issend", 4: "recv", 5: "irecv",
    8: "put", 9: "get", 10: "accumulate", 11: "get_accumulate", 12: "rput", 13: "rget", 14: "raccumulate",
    15: "rget_accumulate",
    16: "ibarrier", 17: "ibcast", 18: "iallreduce", 19: "ireduce", 20: "ialltoall", 21: "iallgather",
    22: "igather", 23: "iscatter", 24: "ialltoallv", 25: "iallgatherv", 26: "ireduce_scatter",
    27: "ireduce_scatter_block", 28: "iscan", 29: "iexscan", 30: "igatherv", 31: "iscatterv",
    32: "barrier", 33: "bcast", 34: "allreduce", 35: "reduce", 36: "alltoall", 37: "allgather",
    38: "gather", 39: "scatter", 40: "alltoallv", 41: "allgatherv", 42: "reduce_scatter",
    43: "reduce_scatter_block", 44: "scan", 45: "exscan", 46: "gatherv", 47: "scatterv",
    48: "wait", 49: "fence", 50: "win_flush", 51: "win_flush_all", 52: "win_flush_local",
    53: "win_flush_local_all", 54: "win_lock", 55: "win_unlock", 56: "win_lock_all", 57: "win_unlock_all",
    58: "test", 59: "comm_create", 60: "init", 61: "finalize", 62: "win_create", 63: "win_free",
    64: "fetch_and_op", 65: "compare_and_swap", 66: "win_post", 67: "win_start", 68: "win_complete", 69: "win_wait",
    70: "unconverted",  # a call the converter has no algorithm for (Alltoallw, neighborhood, persistent)
}
FIRST_REGION = 32
# Nonblocking collectives: operations completed by a Wait/Test, with no peer of their own.
NONBLOCKING_COLLECTIVES = range(16, 32)
# One-sided operations; fetch_and_op and compare_and_swap came later than the regions' numbers.
ONE_SIDED = (*range(8, 16), 64, 65)
# Calls that complete earlier operations: an operation's `completed` equals exactly one of these
# records' `returned` (the tracer makes these stamps unique per rank).
COMPLETERS = (48, 49, 50, 51, 52, 53, 55, 57, 58, 68)


def is_region(kinds: np.ndarray) -> np.ndarray:
    """Which kind codes are regions (a call's time, no message of its own): the collectives, blocking
    or not, and the synchronisation calls."""
    kinds = np.asarray(kinds)
    return ((kinds >= FIRST_REGION) & ~np.isin(kinds, ONE_SIDED)) | np.isin(kinds, NONBLOCKING_COLLECTIVES)


FLAG_LARGE_COUNT, FLAG_FREED, FLAG_UNTRACKED = 1, 2, 4
_NAME = re.compile(r"^rank-(\d+)\.ctrace$")


@dataclass
class RankTrace:
    """One rank's file: its header (a numpy record), records and address table."""

    path: Path
    header: np.void
    records: np.ndarray  # RECORD
    addresses: np.ndarray  # ADDRESS, sorted by address
    names: bytes
    communicators: dict  # id -> world ranks in communicator-rank order (0, MPI_COMM_WORLD, implied)

    @property
    def rank(self) -> int:
        return int(self.header["rank"])

    def to_ns(self, stamps: np.ndarray) -> np.ndarray:
        """Record timestamps as this rank's CLOCK_MONOTONIC ns (time-stamp counter ticks are mapped
        linearly through the two calibration pairs)."""
        stamps = np.asarray(stamps, dtype=np.int64)
        if int(self.header["clock_kind"]) == CLOCK_NS:
            return stamps
        tick0, ns0, tick1, ns1 = (int(v) for v in self.header["calibration"])
        scale = (ns1 - ns0) / (tick1 - tick0)
        return ns0 + np.rint((stamps - tick0).astype(np.float64) * scale).astype(np.int64)

    def object_name(self, offset: int) -> str | None:
        if offset == NO_NAME or offset >= len(self.names):
            return None
        end = self.names.find(b"\0", offset)
        if end < 0:
            raise UserError(f"{self.path}: the name at offset {offset} of its names table has no end (a damaged file)")
        return self.names[offset:end].decode(errors="replace")


def read_rank(path: str | os.PathLike) -> RankTrace:
    """Read and check one ``rank-NNNNN.ctrace`` file."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    if len(data) < HEADER.itemsize:
        raise UserError(f"{path}: truncated: {len(data)} bytes, shorter than the {HEADER.itemsize}-byte header")
    header = np.frombuffer(data, HEADER, count=1)[0]
    if bytes(header["magic"]).ljust(8, b"\0") != MAGIC:
        raise UserError(f"{path}: not a contend trace file (bad magic)")
    if header["version"] != VERSION:
        raise UserError(f"{path}: trace format version {header['version']}, this contend reads {VERSION}")
    if (header["header_bytes"], header["record_bytes"], header["frames"]) != \
            (HEADER.itemsize, RECORD.itemsize, FRAMES):
        raise UserError(f"{path}: header says {header['header_bytes']}-byte header and "
                        f"{header['record_bytes']}-byte records with {header['frames']} frames; expected "
                        f"{HEADER.itemsize}, {RECORD.itemsize}, {FRAMES}")
    records, addresses = int(header["records"]), int(header["addresses"])
    expected = HEADER.itemsize + records * RECORD.itemsize + addresses * ADDRESS.itemsize + \
        int(header["names_bytes"]) + 4 * int(header["comm_words"]) + 8 * int(header["size_words"])
    if len(data) != expected:
        raise UserError(f"{path}: truncated or corrupt: {len(data)} bytes, the header promises {expected} "
                        f"({records} records, {addresses} addresses)")
    start = HEADER.itemsize
    rows = np.frombuffer(data, RECORD, count=records, offset=start)
    start += records * RECORD.itemsize
    table = np.frombuffer(data, ADDRESS, count=addresses, offset=start)
    start += addresses * ADDRESS.itemsize
    names = data[start:start + int(header["names_bytes"])]
    start += len(names)
    communicators = _communicators(path, np.frombuffer(data, "<i4", count=int(header["comm_words"]), offset=start),
                                   int(header["ranks"]))
    if int(header["clock_kind"]) not in (CLOCK_NS, CLOCK_TSC):
        raise UserError(f"{path}: unknown clock kind {int(header['clock_kind'])}")
    if int(header["clock_kind"]) == CLOCK_TSC:
        tick0, ns0, tick1, ns1 = (int(v) for v in header["calibration"])
        if tick1 <= tick0 or ns1 <= ns0:
            raise UserError(f"{path}: the time-stamp counter calibration is unusable (ticks {tick0}..{tick1}, "
                            f"ns {ns0}..{ns1})")
    unknown = sorted(set(np.unique(rows["kind"]).tolist()) - set(KINDS))
    if unknown:
        raise UserError(f"{path}: unknown record kind(s) {unknown}")
    return RankTrace(path=path, header=header, records=rows, addresses=table, names=names,
                     communicators=communicators)


def _communicators(path: Path, words: np.ndarray, ranks: int) -> dict:
    """The communicator table: [id, size, world ranks...] per communicator."""
    table, at = {}, 0
    while at < len(words):
        if at + 2 > len(words) or words[at + 1] < 0 or at + 2 + int(words[at + 1]) > len(words):
            raise UserError(f"{path}: truncated or corrupt communicator table at word {at}")
        ident, size = int(words[at]), int(words[at + 1])
        members = words[at + 2:at + 2 + size]
        if ident <= 0 or ident in table or ((members < 0) | (members >= ranks)).any():
            raise UserError(f"{path}: communicator table at word {at}: bad id {ident} or a member outside the "
                            f"{ranks} ranks")
        table[ident] = tuple(int(m) for m in members)
        at += 2 + size
    return table


def host_names(directory: str | os.PathLike) -> set[bytes]:
    """The host names of a trace directory's rank files, from their headers alone (a file too short or
    unreadable is left out: reading the directory whole says what is wrong with it)."""
    names = set()
    for entry in Path(directory).iterdir():
        if not _NAME.match(entry.name):
            continue
        try:
            with open(entry, "rb") as f:
                head = f.read(HEADER.itemsize)
        except OSError:
            continue
        if len(head) == HEADER.itemsize:
            names.add(bytes(np.frombuffer(head, HEADER, count=1)[0]["host"]))
    return names


def read_directory(directory: str | os.PathLike) -> list[RankTrace]:
    """Every rank's file of a trace directory, checked to be one complete run: the same rank count in
    every file, and a file for each rank."""
    directory = Path(directory)
    if not directory.is_dir():
        raise UserError(f"{directory}: no such trace directory")
    found = {}
    for entry in sorted(directory.iterdir()):
        match = _NAME.match(entry.name)
        if match:
            found[int(match.group(1))] = entry
    if not found:
        raise UserError(f"{directory}: no rank-NNNNN.ctrace files (was the program run under `contend trace`, "
                        "and did it call MPI_Init?)")
    traces = [read_rank(found[rank]) for rank in sorted(found)]
    counts = {int(t.header["ranks"]) for t in traces}
    if len(counts) != 1:
        detail = ", ".join(f"{t.path.name}: {int(t.header['ranks'])}" for t in traces)
        raise UserError(f"{directory}: mismatched rank counts in the rank files ({detail}); files of "
                        "different runs are mixed")
    ranks = counts.pop()
    for rank, trace in zip(sorted(found), traces):
        if trace.rank != rank:
            raise UserError(f"{trace.path}: holds rank {trace.rank}, not {rank} as its name says")
    missing = sorted(set(range(ranks)) - set(found))
    if missing:
        shown = ", ".join(f"rank-{r:05d}.ctrace" for r in missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise UserError(f"{directory}: {len(missing)} of {ranks} rank files missing ({shown}); did those "
                        "ranks crash before MPI_Finalize and exit?")
    extra = sorted(set(found) - set(range(ranks)))
    if extra:
        raise UserError(f"{directory}: rank-{extra[0]:05d}.ctrace is beyond the {ranks} ranks of the run")
    return traces
