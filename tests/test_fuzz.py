"""Fuzz every input kind and output place of the `contend` command line (issue 17, "Must show").

Each case mutates one input (GOAL text and .goal.gz, machine files, noise traces, records Parquet, trace rank
directories, OTF2 archives, NiMC models and samples, bench runs, throttle configurations, `contend map`'s
placement and hosts files), or the command line, or the place an output goes, runs the command, and holds it
to the promise every command makes:

- exit code 0, 2 or 3; never a signal, never a hang (CONTEND_FUZZ_TIMEOUT s, default 60);
- no "Traceback" on stderr; after a failure, stderr is one printable line;
- after a failure nothing is left in the output place (no new files or directories), and no `.*.tmp*`
  file is ever left; a character device given as an output is still one afterwards.

Seeded and bounded: CONTEND_FUZZ_SEED (default 1), CONTEND_FUZZ_CASES (total cases, default 150, spread
over the kinds), CONTEND_FUZZ_ONLY=N (run only case N, to reproduce one). Cases run in forked children of
one warmed process (tests/fuzz_server.py); every 25th case goes through the real `contend` console
script. A failing case keeps its directory (inputs, outputs, stderr) and the failure names it and the argv.
"""

from __future__ import annotations

import collections
import gzip
import importlib.util
import json
import os
import random
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from contend.native import mpi
from contend.native.trace import files as ctrace

HERE = Path(__file__).resolve().parent
SEED = int(os.environ.get("CONTEND_FUZZ_SEED", "1"))
CASES = int(os.environ.get("CONTEND_FUZZ_CASES", "150"))
ONLY = os.environ.get("CONTEND_FUZZ_ONLY")
TIMEOUT_S = float(os.environ.get("CONTEND_FUZZ_TIMEOUT", "60"))
REAL_EVERY = 25  # every REAL_EVERY-th case runs through the console script
MEMORY_LIMIT = 6 << 30  # RLIMIT_AS of a case: an unchecked huge count fails here instead of taking the machine
PRESETS = sorted((HERE.parent / "python" / "contend" / "machine" / "presets").glob("*.toml"))
IS_ROOT = os.geteuid() == 0

# --- values that break things -------------------------------------------------------------------------

BOUNDARY_INTS = [0, 1, -1, 2, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**53 + 1,
                 2**63 - 1, 2**63, 2**64, -2**31, -2**63, 10**10, 10**18]
BOUNDARY_TEXT = ["0", "-1", "-0", "2147483647", "2147483648", "4294967295", "4294967296",
                 "9223372036854775807", "9223372036854775808", "18446744073709551616", "-9223372036854775808",
                 "10000000000", "1e-300", "1e300", "1e400", "nan", "inf", "-inf", "0.5", "1.5", "0x10", "1_000",
                 "", " ", "2^63", "2^64", "2^-1", "9" * 40]
EVIL_ARGS = BOUNDARY_TEXT + [
    "1e-300Hz", "1e300Hz", "-5us", "0ns", "1e-300s", "1e300s", "1e-300ns", "12.5GB/s", "0GB/s", "1e-300GB/s",
    "1e300GB/s", "1,000", "1KiB", "1e30B", "-1B", "1PiB", "1EiB", "\x1b[31mred", "a\rb", "x\x07y", "\u202e",
    "é", "a" * 300, "periodic:1e-300Hz:1us", "periodic:1kHz:1e300s", "periodic:1Hz:2s", "random:1e300:1us",
    "random:1kHz:5-1us", "trace:/nonexistent.noise", "token:0", "token:4294967296", "rate:0", "rate:-1us",
    "proxy:0:0", "proxy:2147483648", "none", "2^20", "2^40",
]
WHATIF_AXES = ["network=0.1x,1x,10x", "cpu=0.5x,2x", "overhead=0,1x,g",
               "noise=none,periodic:1kHz:25us,random:1kHz:10us-40us,trace:NOISE", "noise-phase=independent,coscheduled",
               "ranks=4,16", "machine=loggopsim-default,bgp-torus", "placement=block,cyclic", "ranks-per-node=2,4", "nic=on,off",
               "throttle=none,token:4,rate:2us"]
CONTROL = [b"\x1b", b"\x00", b"\r", b"\x7f", b"\xff", b"\xc3\x28", b"\t", b"\x0b", b"\x1b[2J"]
JSON_VALUES = ['"4294967296"', "4294967296", "-1", "0", "null", "{}", "[]", '"x"', "1e400", "NaN", '"ps"',
               "9223372036854775807", '"\\u001b"', "true", "[1, 2]", '{"x": 1}']


def boundary_int(rng: random.Random) -> int:
    return rng.choice(BOUNDARY_INTS + [rng.randrange(-1000, 1000)])


# --- mutators -----------------------------------------------------------------------------------------

def flip_bytes(data: bytes, rng: random.Random) -> bytes:
    data = bytearray(data or b"\0")
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(data))
        choice = rng.random()
        if choice < 0.4:
            data[at] ^= 1 << rng.randrange(8)
        elif choice < 0.7:
            data[at] = rng.randrange(256)
        else:
            data[at:at] = rng.choice(CONTROL)
    return bytes(data)


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[:rng.randrange(len(data) + 1)] if data else data


def _lines_op(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    at = rng.randrange(len(lines))
    op = rng.choice(("duplicate", "delete", "swap", "move"))
    if op == "duplicate":
        lines.insert(at, lines[at])
    elif op == "delete":
        del lines[at]
    elif op == "swap":
        other = rng.randrange(len(lines))
        lines[at], lines[other] = lines[other], lines[at]
    else:
        lines.insert(rng.randrange(len(lines) + 1), lines.pop(at))
    return b"\n".join(lines)


_NUMBER = re.compile(rb"-?\d+(\.\d+)?([eE][-+]?\d+)?")
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_-]*")


def replace_number(data: bytes, rng: random.Random) -> bytes:
    found = list(_NUMBER.finditer(data))
    if not found:
        return flip_bytes(data, rng)
    match = rng.choice(found)
    value = rng.choice([str(boundary_int(rng))] + BOUNDARY_TEXT).encode()
    return data[:match.start()] + value + data[match.end():]


def misspell(data: bytes, rng: random.Random) -> bytes:
    found = list(_WORD.finditer(data))
    if not found:
        return flip_bytes(data, rng)
    match = rng.choice(found)
    word = bytearray(match.group())
    at = rng.randrange(len(word))
    op = rng.choice(("double", "drop", "swap", "case"))
    if op == "double":
        word.insert(at, word[at])
    elif op == "drop" and len(word) > 1:
        del word[at]
    elif op == "swap" and any(a != b for a, b in zip(word, word[1:])):
        at = rng.choice([i for i in range(len(word) - 1) if word[i] != word[i + 1]])  # a swap that changes it
        word[at], word[at + 1] = word[at + 1], word[at]
    elif bytes(word).swapcase() != bytes(word):
        word = bytearray(bytes(word).swapcase())
    else:  # nothing above would change it (digits, or letters all alike): a letter more
        word.insert(at, word[at])
    return data[:match.start()] + bytes(word) + data[match.end():]


TEXT_MUTATORS = (flip_bytes, truncate, _lines_op, replace_number, replace_number, misspell, misspell)


def mutate_text(data: bytes, rng: random.Random) -> tuple[bytes, list[str]]:
    applied = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        mutator = rng.choice(TEXT_MUTATORS)
        data = mutator(data, rng)
        applied.append(mutator.__name__.strip("_"))
    return data, applied


def mutate_parquet(source: Path, target: Path, rng: random.Random) -> list[str]:
    """One to three edits of a Parquet file: values, nulls, column types, names, rows, contend.* metadata,
    or its bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(source)
    meta = dict(table.schema.metadata or {})
    applied = []
    raw = False
    for _ in range(rng.choice((1, 1, 2, 3))):
        op = rng.choice(("value", "value", "null", "type", "drop", "rename", "rows", "meta", "meta", "meta",
                         "bytes"))
        names = table.column_names
        if op in ("value", "null", "type", "drop", "rename") and not names:
            op = "meta"
        if op == "value":  # ranks, peers and sizes index arrays: half the time one of them
            ids = [n for n in names if n in ("src", "dst", "rank", "peer", "bytes", "tag", "node", "run")]
            name = rng.choice(ids if ids and rng.random() < 0.5 else names)
            column = table.column(name).combine_chunks()
            values = column.to_pylist()
            if not values:
                continue
            if pa.types.is_floating(column.type):
                new = rng.choice([float("nan"), float("inf"), -float("inf"), 1e308, -0.0, -1.0, 1e-300])
            else:
                new = boundary_int(rng)
            rows = range(len(values)) if rng.random() < 0.3 else [rng.randrange(len(values))]
            for row in rows:
                values[row] = new
            try:
                array = pa.array(values, type=column.type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
                try:
                    array = pa.array(values)
                except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
                    array = pa.array([str(v) for v in values])
            table = table.set_column(names.index(name), name, array)
            applied.append(f"value {name}={new}")
        elif op == "null":
            name = rng.choice(names)
            values = table.column(name).to_pylist()
            if values:
                values[rng.randrange(len(values))] = None
                table = table.set_column(names.index(name), name, pa.array(values, type=table.column(name).type))
                applied.append(f"null {name}")
        elif op == "type":
            name = rng.choice(names)
            values = table.column(name).to_pylist()
            kind = rng.choice(("string", "float", "bool", "int32"))
            if kind == "string":
                array = pa.array([str(v) for v in values])
            elif kind == "float":
                array = pa.array([float(v) if isinstance(v, (int, float)) else float("nan") for v in values])
            elif kind == "bool":
                array = pa.array([bool(v) for v in values])
            else:
                array = pa.array([(hash(v) % 1000) if not isinstance(v, int) else v % 2**31 for v in values],
                                 type=pa.int32())
            table = table.set_column(names.index(name), name, array)
            applied.append(f"type {name}->{kind}")
        elif op == "drop":
            name = rng.choice(names)
            table = table.drop_columns([name])
            applied.append(f"drop {name}")
        elif op == "rename":
            name = rng.choice(names)
            new = misspell(name.encode(), rng).decode(errors="replace")
            table = table.rename_columns([new if n == name else n for n in names])
            applied.append(f"rename {name}->{new}")
        elif op == "rows":
            how = rng.choice(("empty", "one", "double", "reverse"))
            if how == "empty":
                table = table.slice(0, 0)
            elif how == "one":
                table = table.slice(0, 1)
            elif how == "double":
                table = pa.concat_tables([table, table])
            else:
                # typed indices: an empty table (emptied by an earlier mutation) has none to infer a type from
                table = table.take(pa.array(range(table.num_rows - 1, -1, -1), type=pa.int64()))
            applied.append(f"rows {how}")
        elif op == "meta":
            applied.append(mutate_metadata(meta, rng))
        else:
            raw = True
    table = table.replace_schema_metadata(meta)
    pq.write_table(table, target)
    if raw:
        data, how = mutate_text(target.read_bytes(), rng)
        target.write_bytes(data)
        applied.append(f"bytes {how}")
    return applied


def mutate_metadata(meta: dict, rng: random.Random) -> str:
    keys = [k for k in meta if k.startswith(b"contend.")] or list(meta)
    if not keys:
        meta[b"contend.ranks"] = rng.choice(JSON_VALUES).encode()
        return "meta add contend.ranks"
    key = rng.choice(keys)
    try:
        value = json.loads(meta[key])
    except ValueError:
        value = None
    op = rng.random()
    if op < 0.15:
        del meta[key]
        return f"meta del {key.decode()}"
    if isinstance(value, dict) and value and op < 0.75:
        inner = rng.choice(list(value))
        how = rng.choice(("del", "set", "misspell", "nested"))
        if how == "del":
            del value[inner]
        elif how == "set":
            value[inner] = json.loads(rng.choice(JSON_VALUES + [str(boundary_int(rng))]))
        elif how == "misspell":
            value[misspell(inner.encode(), rng).decode()] = value.pop(inner)
        elif isinstance(value[inner], dict) and value[inner]:
            deeper = rng.choice(list(value[inner]))
            if rng.random() < 0.5:
                del value[inner][deeper]
            else:
                value[inner][deeper] = json.loads(rng.choice(JSON_VALUES + [str(boundary_int(rng))]))
        else:
            value[inner] = boundary_int(rng)
        meta[key] = json.dumps(value).encode()
        return f"meta {key.decode()}.{inner} {how}"
    if isinstance(value, list) and value and op < 0.75:
        value = value[:rng.randrange(len(value))] if rng.random() < 0.5 else value + [value[-1]]
        meta[key] = json.dumps(value).encode()
        return f"meta {key.decode()} list"
    new = rng.choice(JSON_VALUES + [str(boundary_int(rng)), "{", "\x1b"])
    meta[key] = new.encode()
    return f"meta {key.decode()}={new}"


# --- seed inputs --------------------------------------------------------------------------------------

GOAL_TEXT = """num_ranks 3
// every statement kind, by hand
rank 0 {
a: calc 1000 mem 4096
b: send 64b to 1 tag 7
c: send 70000b to 2 tag 1 cpu 1
b requires a
c irequires a
}
rank 1 {
r: recv 64b from -1 tag -1
s: calc 500
s requires r
}
rank 2 {
/* a block
comment */ r: recv 70000b from 0 tag 1 cpu 1
}
"""
DEADLOCK_GOAL = "num_ranks 2\nrank 0 {\nr: recv 8b from 1 tag 0\ns: send 8b to 1 tag 0\ns requires r\n}\n" \
                "rank 1 {\nr: recv 8b from 0 tag 0\ns: send 8b to 0 tag 0\ns requires r\n}\n"
NOISE_TEXT = """contend-noise 1
# measured by hand, 2 rank(s)
resolution_ns 20
threshold_ns 200
duration_ns 5000000
rank 0
1234 2800
130000 3100.5
rank 1
4000000 1000
end 3
"""
MAP_TORUS = """[machine]
name = "map-torus"
[loggops]
L = "1us"
o = "1us"
g = "1us"
G = "425MB/s"
O = "0ns"
S = 1200
[topology]
kind = "torus"
dims = [4, 4, 2]
ranks_per_node = 2
placement = [0, 0, 1,  # another job's
  1]
link_bandwidth = "425MB/s"
burst = "128KiB"
peak_bandwidth = "850MB/s"
"""
# A fabric as `contend fabric calibrate` writes one: token-bucket links, the host's cores pinned, its MPI
# library's collective entry.
FABRIC_HOST = """[machine]
name = "fabric-host"
[loggops]
L = "0ns"
o = "3.5us"
g = "6.9us"
G = "0.96Gbit/s"
O = "0ns"
S = 65535
[topology]
kind = "crossbar"
nodes = 8
ranks_per_node = 1
link_bandwidth = "0.96Gbit/s"
packet = 1
burst = 131072
peak_bandwidth = "1.9Gbit/s"
[cores]  # the host's
per_node = 2
switch = "3.6us"
quantum = "4ms"
one_host = true
placement = [0, 1, 0, 1, 1, 0, 1, 0]
[mpi]
collective_entry = "190ns"
"""
MACHINE_SEEDS = [preset.name for preset in PRESETS] + ["fabric-host.toml"]
MAP_PLACEMENT = "# bcast.goal's 8 ranks on map-torus\n0 0 1\n1, 5\n9\n31\n30\n"
MAP_HOSTS = "# one host per node\n" + "".join(f"n{i:02d}.cluster  # node {i}\n" for i in range(32))
THROTTLE_TEXTS = [
    "# contend throttle configuration\npolicy = token   # token | rate | none\ntokens = 8\n"
    "size_per_token = 65536\nstall_ms = 100\n",
    "policy = rate\ngap_ns = 2000\n",
    "policy = none\n",
    "policy = none\nmemory_throttle = 1000000000   # bytes/s into each node\nreserve_core = 0\n",
]


def write_ctrace_dir(directory: Path, ranks: int = 4) -> None:
    """A complete trace directory as native/trace writes it (docs/formats.md, "Trace files"): rank 0 sends
    64 bytes to each other rank, which receives them; rank 1 puts 4 KiB into rank 2 and flushes; then all
    meet in a barrier."""
    directory.mkdir(parents=True)
    names = b"/nonexistent/fuzz-program\0"
    for rank in range(ranks):
        rows = []  # posted, returned, completed, bytes, peer, tag, kind
        if rank == 0:
            rows += [(1000 + 10 * peer, 1100 + 10 * peer, 1100 + 10 * peer, 64, peer, 7, 0) for peer in range(1, ranks)]
        else:
            rows += [(900, 1500, 1500, 64, 0, 7, 4)]
        if rank == 1:
            rows += [(1600, 1650, 1900, 4096, 2, -1, 8), (1700, 1900, 1900, 0, 2, -1, 50)]
        rows.append((2000, 2500 + rank, 2500 + rank, 0, -1, -1, 32))
        records = np.zeros(len(rows), ctrace.RECORD)
        for i, (posted, returned, completed, size, peer, tag, kind) in enumerate(rows):
            records[i] = (posted, returned, completed, size, peer, tag, kind, 0, 1,
                          (0x401000 + 16 * kind, 0, 0, 0, 0, 0))
        frames = sorted({int(r["frames"][0]) for r in records})
        addresses = np.zeros(len(frames), ctrace.ADDRESS)
        for i, frame in enumerate(frames):
            addresses[i] = (frame, 0, 0, 0)
        header = np.zeros(1, ctrace.HEADER)
        header[0] = (ctrace.MAGIC, ctrace.VERSION, ctrace.HEADER.itemsize, ctrace.RECORD.itemsize, ctrace.FRAMES,
                     rank, ranks, 1, 4242 + rank, len(records), 0, 1024, 0,
                     (1000, 0, 0 if rank == 0 else 200), (10**6, 0, 0 if rank == 0 else 200),
                     len(addresses), len(names), b"fuzz-node", ctrace.CLOCK_NS, 0, (0, 0, 0, 0), 0, 0)
        data = header.tobytes() + records.tobytes() + addresses.tobytes() + names
        (directory / f"rank-{rank:05d}.ctrace").write_bytes(data)


def load_test_trace():
    """tests/test_trace.py's OTF2 writer (one owner of the hand-made archive)."""
    spec = importlib.util.spec_from_file_location("contend_fuzz_test_trace", HERE / "test_trace.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- running cases ------------------------------------------------------------------------------------

class Server:
    """The warmed process of tests/fuzz_server.py."""

    def __init__(self):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg",
               "COLUMNS": "80"}
        self.process = subprocess.Popen([sys.executable, str(HERE / "fuzz_server.py")], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env)
        ready = self.process.stdout.readline()
        assert json.loads(ready) == {"ready": True}, "the fuzz server did not start"

    def run(self, argv, cwd, stdout, stderr, *, fsize=None, broken_stdout=False, unprivileged=False):
        request = {"argv": [str(a) for a in argv], "cwd": str(cwd), "stdout": str(stdout), "stderr": str(stderr),
                   "fsize": fsize, "broken_stdout": broken_stdout, "unprivileged": unprivileged,
                   "memory": MEMORY_LIMIT, "timeout": TIMEOUT_S}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        assert answer, "the fuzz server died"
        return json.loads(answer)

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


def run_real(argv, cwd, stdout, stderr, *, fsize=None, broken_stdout=False, unprivileged=False):
    """The same through the console script (the entry point itself); its output comes through pipes, so a
    file size limit of the case does not cut it."""
    import resource

    assert not unprivileged, "cases as nobody run forked"

    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "MPLBACKEND": "Agg", "COLUMNS": "80"}
    closed = None
    if broken_stdout:
        reader, closed = os.pipe()
        os.close(reader)
    process = subprocess.Popen([shutil.which("contend"), *map(str, argv)], cwd=cwd, stdin=subprocess.DEVNULL,
                               stdout=closed if broken_stdout else subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env, start_new_session=True, preexec_fn=limits)
    if closed is not None:
        os.close(closed)
    timed_out = False
    try:
        out, err = process.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    Path(stdout).write_bytes(out or b"")
    Path(stderr).write_bytes(err or b"")
    return {"status": process.returncode, "timed_out": timed_out}


@dataclass
class Case:
    kind: str
    argv: list
    mutation: list = field(default_factory=list)
    watch: list = field(default_factory=list)  # directories where a failure must leave nothing new
    devices: list = field(default_factory=list)  # character devices given as outputs
    fsize: int | None = None
    broken_stdout: bool = False
    unprivileged: bool = False
    names_line: str | None = None  # an input whose errors must name it as FILE:LINE
    must_refuse: bool = False  # a typo that must not be accepted (exit 0)


def listing(directory: Path) -> dict:
    found = {}
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            path = Path(root, name)
            found[str(path.relative_to(directory))] = stat.S_IFMT(path.lstat().st_mode)
    return found


TMP_NAME = re.compile(r"^\..*\.tmp")
PYTHON_WARNING = re.compile(r"^\S+:\d+: RuntimeWarning: .*$", re.M)  # numpy overflow, invalid value
EXCEPTION_LINE = re.compile(r"^[A-Za-z_.]*(Error|Exception|Interrupt)\b")
KEY_LINE = re.compile(r"^\s*(?:\[+\s*(?:[\w-]+\.)*)?(?P<key>[A-Za-z_][\w-]*)\s*[=\].]")  # a key or table name


def check(case: Case, result: dict, before: dict, stderr: str) -> list[tuple[str, str]]:
    """The promise: every way this case broke it, as (class, detail)."""
    problems = []
    status = result["status"]
    if result["timed_out"]:
        problems.append(("hang", f"no exit within {TIMEOUT_S:g} s"))
    elif status < 0:
        problems.append((f"signal {signal.Signals(-status).name}", ""))
    elif status not in (0, 2, 3) and "Traceback" not in stderr:
        problems.append((f"exit code {status}", ""))
    if "Traceback" in stderr:
        lines = [line for line in stderr.splitlines() if line.strip()] or [""]
        raised = [line for line in lines if EXCEPTION_LINE.match(line)] or ["(its last line is cut)"]
        problems.append((f"traceback {raised[-1].split(':')[0][:60]}", f"exit {status}: {raised[-1][:200]}"))
    elif PYTHON_WARNING.search(stderr):  # a numpy overflow or the like: an answer computed from garbage
        problems.append(("RuntimeWarning on stderr", PYTHON_WARNING.search(stderr).group()[:200]))
    elif status != 0 and not result["timed_out"]:
        # warnings the run gave before it failed are lines of their own; the error is the one line after
        text = "\n".join(line for line in stderr.splitlines() if not line.startswith("contend: warning: "))
        if status == 2 and ("\n" in text or not text):
            first = text.splitlines()[0][:40] if text else ""
            problems.append(("stderr not one line" + (" (argparse usage)" if first.startswith("usage:") else ""),
                             f"{text.count(chr(10)) + 1 if text else 0} lines"))
        if not all(c.isprintable() or c == "\n" for c in stderr):
            problems.append(("unprintable stderr", repr(stderr[:200])))
    if case.must_refuse and status == 0:
        problems.append(("typo accepted", "a misspelt name was ignored and the run went on"))
    if case.names_line and status == 2 and "Traceback" not in stderr and " missing " not in stderr and \
            not re.search(re.escape(case.names_line) + r":\d+", stderr):  # what is missing has no line
        problems.append(("error without FILE:LINE", stderr.strip()[:200]))
    for directory in case.watch:
        after = listing(directory)
        left = sorted(name for name in after if TMP_NAME.match(Path(name).name))
        if left:
            problems.append(("temporary file left", f"in {directory.name}/: {left}"))
        # a deadlock (3) is a result: its outputs are written whole; so are files written before stdout broke
        if status not in (0, 3) and not case.broken_stdout:
            new = sorted(set(after) - set(before[directory]))
            changed = sorted(n for n in before[directory] if n in after and after[n] != before[directory][n])
            if new or changed:
                problems.append(("output left after a failure",
                                 f"exit {status}, in {directory.name}/: {new + changed}"))
    for device in case.devices:
        if not device.is_char_device():
            now = "directory" if device.is_dir() else "regular file" if device.exists() else "nothing"
            problems.append(("character device replaced", f"{device.name} is now a {now}"))
    return problems


# --- case generators, one per input kind ----------------------------------------------------------------

class Cases:
    def __init__(self, seeds: Path, directory: Path, rng: random.Random):
        self.seeds, self.dir, self.rng = seeds, directory, rng
        self.input = directory / "in"
        self.out = directory / "out"
        self.input.mkdir(parents=True)
        self.out.mkdir()

    def put(self, name: str, data: bytes) -> Path:
        path = self.input / name
        path.write_bytes(data)
        return path

    def mutated(self, seed_name: str, name: str | None = None, compress: bool = False) -> tuple[Path, list]:
        data = (self.seeds / seed_name).read_bytes()
        data, applied = mutate_text(data, self.rng)
        if compress:
            data = gzip.compress(data) if self.rng.random() < 0.8 else flip_bytes(gzip.compress(data), self.rng)
        return self.put(name or seed_name, data), applied

    def case(self, kind, argv, mutation, **kw) -> Case:
        return Case(kind, argv, mutation, watch=[self.out], **kw)

    # each returns a Case
    def goal(self):
        rng = self.rng
        seed = rng.choice(("bcast.goal", "hand.goal", "deadlock.goal"))
        gz = rng.random() < 0.3
        path, applied = self.mutated(seed, seed + (".gz" if gz else ""), compress=gz)
        if rng.random() < 0.4:
                argv = ["goal", "check", path, *(["--json"] if rng.random() < 0.5 else [])]
        else:
            argv = ["sim", path, *rng.choice([[], ["--json"], ["--records", "r.parquet"], ["--timeline", "t.json"],
                                              ["--machine", "loggopsim-default"], ["--noise", "periodic:1kHz:25us"]])]
        return self.case("goal", argv, applied, names_line=None if gz else path.name)

    def machine(self):
        preset = self.seeds / self.rng.choice(MACHINE_SEEDS)
        typo = self.rng.random() < 0.3
        if typo:  # a misspelt key or table name: never silently dropped
            lines = preset.read_text().splitlines(keepends=True)
            keys = [i for i, line in enumerate(lines) if KEY_LINE.match(line)]
            at = self.rng.choice(keys)
            match = KEY_LINE.match(lines[at])
            word = misspell(match.group("key").encode(), self.rng).decode()
            lines[at] = lines[at][:match.start("key")] + word + lines[at][match.end("key"):]
            path = self.put("m.toml", "".join(lines).encode())
            applied = [f"typo line {at + 1}: {match.group('key')} -> {word}"]
        else:
            path, applied = self.mutated(preset.name, "m.toml")
        argv = self.rng.choice([
            ["sim", "--collective", "incast", "--ranks", "8", "--bytes", "4KiB", "--machine", path],
            ["sim", "--collective", "binomial-bcast", "--ranks", "16", "--bytes", "64KiB", "--machine", path, "--json"],
            ["sim", "--collective", "alltoall-pairwise", "--ranks", "8", "--bytes", "1KiB", "--machine", path,
             "--json"],
            ["diagnose", self.seeds / "incast.parquet", "--machine", path],
        ])
        return self.case("machine", argv, [preset.name, *applied], names_line="m.toml", must_refuse=typo)

    def noise(self):
        path, applied = self.mutated("hand.noise", "n.noise")
        argv = self.rng.choice([
            ["noise", "show", path], ["noise", "show", path, "--json"],
            ["sim", "--collective", "dissemination", "--ranks", "8", "--bytes", "8", "--noise", f"trace:{path}"],
        ])
        return self.case("noise", argv, applied, names_line="n.noise")

    def records(self):
        seed = self.rng.choice(("incast.parquet", "trace-records.parquet"))
        in_directory = seed == "trace-records.parquet" and self.rng.random() < 0.5  # as `contend trace` leaves it
        path = self.input / "trace" / "records.parquet" if in_directory else self.input / "r.parquet"
        path.parent.mkdir(exist_ok=True)
        applied = mutate_parquet(self.seeds / seed, path, self.rng)
        extra = self.rng.choice([[], ["--json", "d.json"], ["--top", "3", "--bins", "7"],
                                 ["--machine", "loggopsim-default"], ["--html", "report"]])
        return self.case("records", ["diagnose", path.parent if in_directory else path, *extra], [seed, *applied])

    def trace_dir(self):
        rng = self.rng
        directory = self.input / "trace"
        shutil.copytree(self.seeds / "trace", directory)
        files = sorted(directory.glob("rank-*.ctrace"))
        target = rng.choice(files)
        op = rng.choice(("header", "header", "record", "record", "address", "bytes", "truncate", "delete",
                         "extra"))
        data = bytearray(target.read_bytes())
        if op == "header":
            name = rng.choice([n for n in ctrace.HEADER.names if n not in ("magic",)] + ["magic"])
            header = np.frombuffer(bytes(data[:ctrace.HEADER.itemsize]), ctrace.HEADER).copy()
            set_field(header, name, rng)
            data[:ctrace.HEADER.itemsize] = header.tobytes()
            applied = [f"{target.name} header.{name}"]
        elif op in ("record", "address"):
            dtype = ctrace.RECORD if op == "record" else ctrace.ADDRESS
            header = np.frombuffer(bytes(data[:ctrace.HEADER.itemsize]), ctrace.HEADER)[0]
            start = ctrace.HEADER.itemsize + (0 if op == "record" else int(header["records"]) * ctrace.RECORD.itemsize)
            count = int(header["records"] if op == "record" else header["addresses"])
            row = rng.randrange(count)
            at = start + row * dtype.itemsize
            item = np.frombuffer(bytes(data[at:at + dtype.itemsize]), dtype).copy()
            name = rng.choice(dtype.names)
            set_field(item, name, rng)
            data[at:at + dtype.itemsize] = item.tobytes()
            applied = [f"{target.name} {op}[{row}].{name}"]
        elif op == "bytes":
            data = bytearray(flip_bytes(bytes(data), rng))
            applied = [f"{target.name} bytes"]
        elif op == "truncate":
            data = bytearray(truncate(bytes(data), rng))
            applied = [f"{target.name} truncate"]
        elif op == "delete":
            target.unlink()
            data = None
            applied = [f"{target.name} deleted"]
        else:
            target = directory / rng.choice(("rank-00002.ctrace", "rank-99999.ctrace", "rank-00000.ctrace.tmp"))
            data = bytearray(files[0].read_bytes())
            applied = [f"extra {target.name}"]
        if data is not None:
            target.write_bytes(bytes(data))
        machine = ["--machine", "loggopsim-default"] if rng.random() < 0.5 else []
        draw = rng.random()
        if draw < 0.4:
            return Case("trace_dir", ["trace", *machine, "convert", directory], applied, watch=[self.out, directory])
        if draw < 0.6:
            return self.case("trace_dir", ["goal", "convert", directory, "-o", "app.goal"], applied)
        if draw < 0.75:
            return self.case("trace_dir", ["predict", "--machine", "loggopsim-default", "--trace", directory,
                                           "--json", "p.json"], applied)
        return self.case("trace_dir", ["diagnose", directory, *machine], applied)

    def otf2(self):
        archive = self.input / "otf2"
        shutil.copytree(self.seeds / "otf2", archive)
        files = sorted(p for p in archive.rglob("*") if p.is_file())
        target = self.rng.choice(files)
        op = self.rng.choice(("bytes", "truncate", "delete"))
        if op == "delete":
            target.unlink()
        else:
            data = target.read_bytes()
            target.write_bytes(flip_bytes(data, self.rng) if op == "bytes" else truncate(data, self.rng))
        argv = self.rng.choice([["trace", "import", archive / "traces.otf2", "-o", "r.parquet"],
                                ["goal", "convert", archive / "traces.otf2", "-o", "app.goal"]])
        return self.case("otf2", argv, [f"{target.relative_to(archive)} {op}"])

    def nimc_model(self):
        path = self.input / "m.model"
        applied = mutate_model(self.seeds / "nimc.model", path, self.rng)
        extra = self.rng.choice([[], ["--json"], ["-o", "p.parquet"]])
        return self.case("nimc_model", ["nimc", "detect", path, self.seeds / "nimc.parquet", *extra], applied)

    def nimc_data(self):
        path = self.input / "samples.parquet"
        applied = mutate_parquet(self.seeds / "nimc.parquet", path, self.rng)
        if self.rng.random() < 0.6:
            argv = ["nimc", "detect", self.seeds / "nimc.model", path, *self.rng.choice([[], ["--json"]])]
        else:
            argv = ["nimc", "train", path, "-o", "m.model", "--trees", "10", "--seed", "2"]
        return self.case("nimc_data", argv, applied)

    def bench(self):
        path = self.input / "run.parquet"
        seed = self.rng.choice(("pingpong.parquet", "pingpong.parquet", "pingpong.parquet", "incast.parquet",
                                "nimc.parquet"))
        if seed == "pingpong.parquet" or self.rng.random() < 0.5:
            applied = mutate_parquet(self.seeds / seed, path, self.rng)
        else:  # another kind of Parquet file, whole
            shutil.copy(self.seeds / seed, path)
            applied = []
        extra = ["--plot", "p.png"] if self.rng.random() < 0.3 else []
        return self.case("bench", ["bench", "show", path, *extra], [seed, *applied])

    def cli(self):
        rng = self.rng
        s = self.seeds
        templates = [
            ["sim", "--collective", "incast", "--ranks", "8", "--bytes", "1KiB", "--seed", "1", "--root", "0"],
            ["sim", "--collective", "binomial-bcast", "--ranks", "16", "--bytes", "8", "-L", "2500", "-o", "1500",
             "-g", "1000", "-G", "6", "-O", "0", "-S", "65535"],
            ["sim", "--collective", "dissemination", "--ranks", "8", "--bytes", "8", "--noise",
             "periodic:1kHz:25us", "--noise-seed", "3", "--noise-phase", "coscheduled"],
            ["sim", "--collective", "alltoall-pairwise", "--ranks", "8", "--bytes", "4KiB", "--machine",
             "ib-congestion", "--throttle", "token:4", "--ranks-per-node", "4", "--threads", "2"],
            ["sim", "--collective", "incast", "--ranks", "8", "--bytes", "64KiB", "--machine",
             "sandybridge-onload", "--memory-throttle", "1GB/s", "--reserve-core"],
            ["sim", "--collective", "dissemination", "--ranks", "8", "--bytes", "8", "--cores", "2:3.8us:4ms",
             "--ranks-per-node", "4"],
            ["sim", s / "hand.goal", "--sharing", "packet", "--heatmap-metric", "bytes"],
            ["goal", "write", "--collective", "binomial-bcast", "--ranks", "8", "--bytes", "8", "--root", "0",
             "--seed", "0", "-o", "g.goal"],
            ["goal", "check", s / "hand.goal", "--json"],
            ["goal", "convert", s / "trace", "-o", "c.goal", "--collective-entry", "190ns", "--copy-time", "0.1ns",
             "--nbc-prepost", "1us", "--cpu-scale", "0.5", "--algorithms", "mpich-shm"],
            ["diagnose", s / "incast.parquet", "--top", "5", "--bins", "10"],
            ["diagnose", s / "trace-records.parquet", "--top", "5", "--bins", "10", "--json", "d.json"],
            ["trace", "-o", "t", "--records", "100", "--depth", "2", "--clock", "monotonic", "--timeout", "20",
             "--", "true"],
            ["trace", "import", s / "otf2" / "traces.otf2", "-o", "r.parquet"],
            ["predict", "--machine", "loggopsim-default", "--runs", "1", "--timeout", "20", "--", "true"],
            ["noise", "show", s / "hand.noise", "--json"],
            ["bench", "show", s / "pingpong.parquet"],
            ["bench", "list"],
            ["bench", "run", "pingpong", "--np", "2", "--sizes", "8", "--iters", "1", "--warmup", "0", "--timeout",
             "30", "-o", "r.parquet", "--plot", "r.png"],
            ["bench", "run", "collective", "--np", "2", "--sizes", "8", "--iters", "1", "--warmup", "0", "--timeout",
             "30", "-o", "c.parquet"],
            ["noise", "measure", "--seconds", "0.05", "--threshold", "1000", "-n", "1", "-o", "n.noise", "--timeout",
             "30"],
            ["tune", "--machine", "ib-congestion", "--quick", "--workers", "1", "--tolerance", "0.05",
             "--ranks-per-node", "4", "-o", "tuned"],
            ["native", "info"],
            ["whatif", "--collective", "dissemination", "--ranks", "8", "--bytes", "8", "--machine", "loggopsim-default",
             "--vary", "network=0.1x,1x,10x", "--vary", "noise=none,periodic:1kHz:25us", "--workers", "1", "-o", "w"],
            ["whatif", s / "hand.goal", "--vary", "overhead=0,1x,g", "--vary", "cpu=0.5x,2x", "--workers", "2",
             "-o", "w"],
            ["nimc", "detect", s / "nimc.model", s / "nimc.parquet", "--json"],
            ["map", "--collective", "alltoall-pairwise", "--ranks", "16", "--bytes", "1KiB", "--root", "0",
             "--machine", s / "map-torus.toml", "--method", "block,topo", "--seed", "1", "-o", "m"],
            ["map", s / "incast.parquet", "--machine", s / "map-torus.toml", "--method", "cyclic", "--hosts", s / "map.hosts",
             "-o", "m", "--json"],
            ["nimc", "train", s / "nimc.parquet", "-o", "m.model", "--trees", "10", "--test-fraction", "0.3",
             "--seed", "1"],
        ]
        argv = list(rng.choice(templates))
        applied = []
        for _ in range(rng.choice((1, 1, 2))):
            options = [i for i, a in enumerate(argv) if isinstance(a, str) and a.startswith("-") and a != "--"
                       and i + 1 < len(argv) and not str(argv[i + 1]).startswith("-")]
            op = rng.random()
            if options and op < 0.7:
                at = rng.choice(options) + 1
                argv[at] = rng.choice(EVIL_ARGS)
                applied.append(f"{argv[at - 1]} {argv[at]!r}")
            elif op < 0.8 and len(argv) > 2:
                at = rng.randrange(2, len(argv))
                applied.append(f"delete {argv[at]!r}")
                del argv[at]
            elif op < 0.9:
                flag = rng.choice(["--bogus", "--ranks", "--json", "-o", "--machine", "--top"])
                value = rng.choice(EVIL_ARGS)
                argv[2:2] = [flag, value]
                applied.append(f"insert {flag} {value!r}")
            else:
                at = rng.randrange(1, len(argv))
                argv[at] = str(argv[at]) + rng.choice(["\x1b", "\r", "\x7f", " "])
                applied.append(f"control byte after {argv[at]!r}")
        return self.case("cli", argv, applied)

    def places(self):
        """An output given a place that is not a new regular file in a writable directory."""
        rng = self.rng
        s = self.seeds
        commands = [  # (argv before the output, output option, is a directory)
            (["sim", "--collective", "incast", "--ranks", "8", "--bytes", "4KiB"], "--records", False),
            (["sim", "--collective", "incast", "--ranks", "8", "--bytes", "4KiB"], "--timeline", False),
            (["sim", "--collective", "alltoall-pairwise", "--ranks", "8", "--bytes", "1KiB", "--machine",
              "qdr-ib-fattree"],
             "--links", False),
            (["sim", "--collective", "alltoall-pairwise", "--ranks", "8", "--bytes", "1KiB", "--machine",
              "qdr-ib-fattree"],
             "--heatmap", False),
            (["diagnose", s / "incast.parquet"], "--json", False),
            (["diagnose", s / "incast.parquet"], "--html", True),
            (["predict", "--machine", "loggopsim-default", "--trace", s / "trace"], "--html", True),
            (["goal", "write", "--collective", "ring", "--ranks", "4", "--bytes", "8"], "-o", False),
            (["trace", "import", s / "otf2" / "traces.otf2"], "-o", False),
            (["nimc", "detect", s / "nimc.model", s / "nimc.parquet"], "-o", False),
            (["nimc", "train", s / "nimc.parquet", "--trees", "10"], "-o", False),
            (["noise", "show", s / "hand.noise"], "--plot", False),
            (["bench", "show", s / "pingpong.parquet"], "--plot", False),
            (["trace", "convert"], None, True),
            (["map", s / "bcast.goal", "--machine", s / "map-torus.toml", "--method", "block,topo"], "-o", True),
            (["whatif", "--collective", "incast", "--ranks", "8", "--bytes", "4KiB", "--vary", "network=1x,2x",
              "--workers", "1"], "-o", True),
        ]
        argv, option, is_dir = rng.choice(commands)
        argv = list(argv)
        place = rng.choice(["chardev", "readonly", "file_for_dir", "dir_for_file", "long_name", "disk_full",
                            "disk_full", "broken_stdout", "control_name"])
        case = self.case("places", argv, [place])
        suffix = {"--timeline": ".json", "--json": ".json", "--heatmap": ".png", "--plot": ".png"}
        name = "output" + ("" if is_dir else suffix.get(option, ".parquet"))
        target = self.out / name
        if option is None:  # trace convert writes into its trace directory
            directory = self.input / "trace"
            shutil.copytree(s / "trace", directory)
            case.argv.append(directory)
            case.watch.append(directory)
            if place == "readonly":
                os.chmod(directory, 0o555)
                case.unprivileged = True
            elif place in ("chardev", "dir_for_file", "file_for_dir"):
                records = directory / "records.parquet"
                if place == "chardev" and IS_ROOT:
                    os.mknod(records, stat.S_IFCHR | 0o666, os.makedev(1, 3))
                    case.devices.append(records)
                else:
                    records.mkdir()
            elif place == "disk_full":
                case.fsize = rng.choice([0, 1024, 4096, 20000])
            elif place == "broken_stdout":
                case.broken_stdout = True
            return case
        if place == "chardev" and IS_ROOT:
            os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 3))
            case.devices.append(target)
        elif place == "readonly":
            ro = self.out / "ro"
            ro.mkdir()
            target = ro / name
            os.chmod(ro, 0o555)
            case.unprivileged = True
        elif place == "file_for_dir":
            (self.out / "file").write_text("x")
            target = self.out / "file" if is_dir else self.out / "file" / name
        elif place == "dir_for_file":
            target.mkdir()
            if is_dir:
                (target / "index.html").mkdir()
        elif place == "long_name":
            target = self.out / ("n" * 300 + ".parquet")
        elif place == "disk_full":
            case.fsize = rng.choice([0, 1024, 4096, 20000])
        elif place == "broken_stdout":
            case.broken_stdout = True
        elif place == "control_name":
            target = self.out / ("x\x1b[31m\r" + name)
        case.argv += [option, target]
        return case

    def whatif(self):
        """contend whatif with one to three axes, one of them mutated (never to huge rank counts: a
        collective of 2^31 ranks is a memory limit of its own, not an axis')."""
        rng = self.rng
        machine = rng.choice(("loggopsim-default", "ib-congestion", "bgp-torus"))
        specs = rng.sample(WHATIF_AXES, rng.choice((1, 2, 3)))
        specs = [spec.replace("NOISE", str(self.seeds / "hand.noise")) for spec in specs]
        at = rng.randrange(len(specs))
        mutators = (flip_bytes, truncate, misspell, misspell) + (() if specs[at].startswith("ranks") else
                                                                  (replace_number, replace_number))
        mutator = rng.choice(mutators)
        specs[at] = mutator(specs[at].encode(), rng).decode("utf-8", "replace")
        workload = (["--collective", "dissemination", "--ranks", "8", "--bytes", "64"] if rng.random() < 0.7
                    else [self.seeds / "hand.goal"])
        argv = ["whatif", *workload, "--machine", machine, "--workers", rng.choice(("1", "2")), "-o", "w",
                *(["--critical-path"] if rng.random() < 0.5 else [])]
        for spec in specs:
            argv += ["--vary", spec]
        return self.case("whatif", argv, [machine, f"{mutator.__name__.strip('_')} {specs[at]!r}"])

    def map(self):
        """contend map with one of its inputs mutated: the placement file, the hosts file, the machine or the
        schedule; or one of its arguments."""
        rng = self.rng
        s = self.seeds
        argv = ["map", s / "bcast.goal", "--machine", s / "map-torus.toml", "--method",
                rng.choice(("block,topo", "metis", "all", "random,sfc,cyclic")), "--seed", str(rng.randrange(4)),
                "-o", "m", *rng.choice(([], ["--json"], ["--apply"], ["--no-simulate"]))]
        what = rng.choice(("placement", "placement", "hosts", "hosts", "machine", "goal", "argument"))
        if what == "placement":
            path, applied = self.mutated("map.placement", "p.txt")
            return self.case("map", argv + ["--placement", path], applied, names_line="p.txt")
        if what == "hosts":
            path, applied = self.mutated("map.hosts", "hosts")
            return self.case("map", argv + ["--hosts", path], applied, names_line="hosts")
        if what == "machine":
            path, applied = self.mutated("map-torus.toml", "m.toml")
            argv[argv.index(s / "map-torus.toml")] = path
            return self.case("map", argv, applied)
        if what == "goal":
            path, applied = self.mutated("bcast.goal", "app.goal")
            argv[1] = path
            return self.case("map", argv, applied)
        at = rng.choice([i for i, a in enumerate(argv) if str(a) in ("--method", "--seed", "--machine")]) + 1
        argv[at] = rng.choice(EVIL_ARGS + ["topo,topo", "block,", ",", "al", "scotch,metis"])
        return self.case("map", argv, [f"{argv[at - 1]} {argv[at]!r}"])

    def throttle(self):
        seed = self.rng.randrange(len(THROTTLE_TEXTS))
        path, applied = self.mutated(f"throttle-{seed}.conf", "throttle.conf")
        return self.case("throttle", ["throttle-config", path], [f"throttle-{seed}.conf", *applied])


def set_field(item: np.ndarray, name: str, rng: random.Random) -> None:
    """A boundary value into one field of a one-element structured array (wrapped to its width)."""
    dtype = item.dtype[name]
    if dtype.names:  # a nested record (the clock samples): one of its fields
        set_field(item[name], rng.choice(dtype.names), rng)
        return
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        values = item[name][0].reshape(-1)
        values[rng.randrange(len(values))] = base.type(wrap(boundary_int(rng), base))
        return
    if dtype.kind == "S":
        item[name] = rng.choice([b"", b"\x1b[31m\r\n", b"x" * dtype.itemsize, b"CTRACE2\0", b"\xff\xfe"])
        return
    item[name] = dtype.type(wrap(boundary_int(rng), dtype))


def wrap(value: int, dtype: np.dtype) -> int:
    bits = dtype.itemsize * 8
    value %= 1 << bits
    if dtype.kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def mutate_model(source: Path, target: Path, rng: random.Random) -> list[str]:
    """A NiMC model with corrupt contents: tree arrays, features, format fields, or its bytes."""
    import skops.io

    from contend.analysis.nimc import _TRUSTED

    try:
        model = skops.io.load(source, trusted=_TRUSTED)  # our own model, made by the fixture
    except Exception:
        model = None
    op = rng.choice(("tree", "tree", "tree", "schema", "bytes"))
    if not isinstance(model, dict) or op == "bytes":
        data, applied = mutate_text(source.read_bytes(), rng)
        target.write_bytes(data)
        return [f"bytes {applied}"]
    if op == "tree":
        forest = model[rng.choice(("classifier", "regressor"))]
        estimator = rng.choice(forest.estimators_)
        state = estimator.tree_.__getstate__()
        nodes = state["nodes"].copy()
        name = rng.choice(("left_child", "right_child", "feature", "threshold", "n_node_samples"))
        row = rng.randrange(len(nodes))
        if nodes.dtype[name].kind == "f":
            nodes[name][row] = rng.choice([float("nan"), float("inf"), -1e308])
        else:
            nodes[name][row] = nodes.dtype[name].type(wrap(boundary_int(rng), nodes.dtype[name]))
        state["nodes"] = nodes
        if rng.random() < 0.2:
            state["values"] = state["values"][: max(0, len(state["values"]) - 1)]
            name += "+values cut"
        try:
            estimator.tree_.__setstate__(state)
        except Exception as exc:  # sklearn refused it: corrupt the bytes instead
            data, applied = mutate_text(source.read_bytes(), rng)
            target.write_bytes(data)
            return [f"tree refused ({type(exc).__name__}), bytes {applied}"]
        applied = [f"tree {name}[{row}]"]
    else:
        key = rng.choice(list(model))
        how = rng.choice(("delete", "value", "features"))
        if how == "delete":
            del model[key]
        elif how == "features" and isinstance(model.get("features"), list) and model["features"]:
            features = model["features"]
            model["features"] = rng.choice([features[:-1], features + features[:1], features[::-1],
                                            [misspell(f.encode(), rng).decode() for f in features], []])
            key = "features"
        else:
            model[key] = rng.choice([None, 0, -1, 2**63 - 1, "x", [], {}, "contend-nimc-model", 2])
        applied = [f"schema {key} {how}"]
    skops.io.dump(model, target)
    return applied


KINDS = {  # kind: share of the cases
    "goal": 3, "machine": 3, "noise": 2, "records": 3, "trace_dir": 3, "otf2": 1, "nimc_model": 2,
    "nimc_data": 2, "bench": 2, "throttle": 1, "cli": 5, "places": 4, "whatif": 2, "map": 3,
}


def case_indices(kind: str) -> list[int]:
    """The global case numbers that belong to KIND: cases are dealt out in proportion to the shares."""
    deck = [k for k, share in KINDS.items() for _ in range(share)]
    indices = [i for i in range(CASES) if deck[i % len(deck)] == kind]
    if ONLY is not None:
        indices = [i for i in indices if i == int(ONLY)]
    return indices


# --- fixtures -----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def work():
    directory = Path(tempfile.mkdtemp(prefix="contend-fuzz-"))
    os.chmod(directory, 0o755)  # the cases run as nobody must reach their files
    yield directory
    if not any((directory / "cases").glob("*")):
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def server():
    server = Server()
    yield server
    server.close()


@pytest.fixture(scope="module")
def seeds(work, server):
    directory = work / "seeds"
    directory.mkdir()

    def make(argv):
        result = server.run(argv, directory, directory / "make.out", directory / "make.err")
        assert result["status"] == 0, (argv, (directory / "make.err").read_text())

    make(["goal", "write", "--collective", "binomial-bcast", "--ranks", "8", "--bytes", "1KiB", "-o",
          directory / "bcast.goal"])
    (directory / "hand.goal").write_text(GOAL_TEXT)
    (directory / "deadlock.goal").write_text(DEADLOCK_GOAL)
    (directory / "hand.noise").write_text(NOISE_TEXT)
    (directory / "map-torus.toml").write_text(MAP_TORUS)
    (directory / "fabric-host.toml").write_text(FABRIC_HOST)
    (directory / "map.placement").write_text(MAP_PLACEMENT)
    (directory / "map.hosts").write_text(MAP_HOSTS)
    for preset in PRESETS:
        shutil.copy(preset, directory / preset.name)
    for i, text in enumerate(THROTTLE_TEXTS):
        (directory / f"throttle-{i}.conf").write_text(text)
    make(["sim", "--collective", "incast", "--ranks", "8", "--bytes", "4KiB", "--records",
          directory / "incast.parquet"])
    write_ctrace_dir(directory / "trace")
    make(["trace", "--machine", "loggopsim-default", "convert", directory / "trace"])
    shutil.move(directory / "trace" / "records.parquet", directory / "trace-records.parquet")
    for extra in (directory / "trace").glob("*.parquet"):
        extra.unlink()
    load_test_trace().write_otf2(directory / "otf2")
    shutil.copy(HERE / "data" / "nimc_samples.parquet", directory / "nimc.parquet")
    make(["nimc", "train", directory / "nimc.parquet", "-o", directory / "nimc.model", "--trees", "10"])
    mpi.build_native(mpi.find_mpi())
    make(["bench", "run", "pingpong", "--np", "2", "--sizes", "1,64,4KiB", "--iters", "5", "--warmup", "1",
          "--timeout", "120", "-o", directory / "pingpong.parquet"])
    for path in directory.rglob("*"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return directory


@pytest.fixture(scope="module")
def throttle_runner():
    """How a throttle configuration is checked: `contend throttle --config` (its own check by the
    library's rules, then the library in one run of its stress program, which needs 2 ranks)."""
    library = mpi.find_mpi()
    mpi.build_native(library)
    program = [str(mpi.build_dir(library) / "throttle-stress"), "--messages", "1", "--ops", "1"]
    return lambda config: ["throttle", "--config", config, "--", str(library.mpiexec), "-n", "2", *program]


# --- the test -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", list(KINDS))
def test_fuzz(kind, work, server, seeds, throttle_runner, capsys):
    indices = case_indices(kind)
    if not indices:
        pytest.skip(f"no {kind} cases among CONTEND_FUZZ_CASES={CASES}" + (f", ONLY={ONLY}" if ONLY else ""))
    failures = collections.defaultdict(list)
    ran = 0
    for index in indices:
        rng = random.Random(f"{SEED}:{index}")
        directory = work / "cases" / f"{index:05d}-{kind}"
        cases = Cases(seeds, directory, rng)
        case = getattr(cases, kind)()
        stdout, stderr_path = directory / "stdout", directory / "stderr"
        before = {d: listing(d) for d in case.watch}
        # as nobody only forked: the interpreter may lie where nobody cannot exec it (a home directory)
        # (an argument with a NUL byte cannot reach a real process: exec refuses it, so it runs forked)
        real = index % REAL_EVERY == 0 and not case.unprivileged and not any("\0" in str(a) for a in case.argv)
        if kind == "throttle":
            case.argv = throttle_runner(case.argv[1])
            result = server.run(case.argv, cases.out, stdout, stderr_path)
            stderr = stderr_path.read_text(errors="replace")
            problems = check(case, result, before, stderr)
            how = "forked"
        else:
            runner = run_real if real else server.run
            result = runner(case.argv, cases.out, stdout, stderr_path, fsize=case.fsize,
                            broken_stdout=case.broken_stdout, unprivileged=case.unprivileged)
            stderr = stderr_path.read_text(errors="replace")
            problems = check(case, result, before, stderr)
            how = "console script" if real else "forked"
        ran += 1
        for root, dirs, _ in os.walk(directory):  # undo read-only places so the case can be removed
            for name in dirs:
                path = Path(root, name)
                if not path.is_symlink():
                    os.chmod(path, 0o755)
        if problems:
            command = " ".join(shlex.quote(str(a)) for a in case.argv)
            limits = (f" (RLIMIT_FSIZE={case.fsize})" if case.fsize is not None else "") + \
                (" (stdout closed)" if case.broken_stdout else "") + (" (as nobody)" if case.unprivileged else "")
            words = [str(a) for a in case.argv[:2] if re.fullmatch(r"[a-z]+", str(a))]
            for label, detail in problems:
                failures[f"{' '.join(words)}: {label}"].append(
                    f"case {index} [{how}] {label}: {detail}\n    mutation: {case.mutation}\n"
                    f"    reproduce: cd {cases.out} && {'' if how == 'direct' else 'contend '}{command}{limits}\n"
                    f"    or: CONTEND_FUZZ_SEED={SEED} CONTEND_FUZZ_CASES={CASES} CONTEND_FUZZ_ONLY={index} "
                    f"python -m pytest -q tests/test_fuzz.py -k {kind}\n"
                    f"    stderr: {stderr.strip()[-300:]!r}")
        else:
            shutil.rmtree(directory, ignore_errors=True)
    summary = f"fuzz {kind}: {ran} cases (seed {SEED}), " + (
        "no failures" if not failures else
        f"{sum(map(len, failures.values()))} failures in {len(failures)} classes: " +
        ", ".join(f"{label} x{len(items)}" for label, items in failures.items()))
    with capsys.disabled():
        print("\n" + summary)
    report = "\n".join(f"== {label} ({len(items)})\n" + "\n".join(items[:5]) for label, items in failures.items())
    assert not failures, summary + "\n" + report
