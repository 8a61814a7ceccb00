"""Find an MPI, build ``native/`` with it, and launch runs under its ``mpiexec``.

The MPI is, in order: ``$CONTEND_MPICC`` (any MPI's compiler wrapper, e.g. a cluster's), the ``mpich``
wheel in the running Python's environment (``.venv/bin``), or the first ``mpicc`` on ``PATH``.
``mpiexec`` is taken from beside that ``mpicc`` (``$CONTEND_MPIEXEC`` overrides it). Each MPI gets its
own build directory, so binaries for MPICH and Open MPI live side by side.

Runs are launched in a new process group that is ended, by its id, if the run fails, times out or is
interrupted: nothing is left running.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from contend.errors import UserError

BENCH_PROGRAM = "contend-bench"
THROTTLE_LIBRARY = "libcontend-throttle.so"
TRACE_LIBRARY = "libcontend-trace.so"


@dataclass(frozen=True)
class MPI:
    """An MPI installation: its compiler wrapper, its launcher and which library it is."""

    mpicc: Path
    mpiexec: Path
    flavor: str  # "mpich", "openmpi" or "unknown": decides launcher flags
    origin: str  # how it was found, for messages: "CONTEND_MPICC", "venv", "PATH"

    @property
    def build_name(self) -> str:
        """A directory name unique to this MPI (flavor plus a hash of the wrapper's real path)."""
        digest = hashlib.sha1(str(self.mpicc.resolve()).encode()).hexdigest()[:8]
        return f"{self.flavor}-{digest}"


def _flavor(mpiexec: Path) -> str:
    try:
        banner = subprocess.run(
            [str(mpiexec), "--version"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if "HYDRA" in banner or "MPICH" in banner:
        return "mpich"
    if "Open MPI" in banner or "OpenRTE" in banner:
        return "openmpi"
    return "unknown"


def find_mpi(environ: Mapping[str, str] | None = None, venv_bin: Path | None = None) -> MPI:
    """The MPI to build and run with; a UserError saying how to get one if there is none."""
    env = os.environ if environ is None else environ
    venv_bin = Path(sys.prefix) / "bin" if venv_bin is None else venv_bin
    if env.get("CONTEND_MPICC"):
        mpicc, origin = Path(env["CONTEND_MPICC"]), "CONTEND_MPICC"
        if not (mpicc.is_file() and os.access(mpicc, os.X_OK)):
            raise UserError(f"CONTEND_MPICC={mpicc}: no such executable")
    elif (venv_bin / "mpicc").is_file():
        mpicc, origin = venv_bin / "mpicc", "venv"
    elif shutil.which("mpicc", path=env.get("PATH", "")):
        mpicc, origin = Path(shutil.which("mpicc", path=env.get("PATH", ""))), "PATH"
    else:
        raise UserError(
            "no MPI found: install the mpich wheel (pip install mpich) or set CONTEND_MPICC to an mpicc"
        )
    if env.get("CONTEND_MPIEXEC"):
        mpiexec = Path(env["CONTEND_MPIEXEC"])
    else:
        mpiexec = mpicc.parent / "mpiexec"
    if not (mpiexec.is_file() and os.access(mpiexec, os.X_OK)):
        raise UserError(f"no mpiexec beside {mpicc}: set CONTEND_MPIEXEC to the launcher of that MPI")
    return MPI(mpicc=mpicc, mpiexec=mpiexec, flavor=_flavor(mpiexec), origin=origin)


def native_dir() -> Path:
    """The ``native/`` source tree (``$CONTEND_NATIVE_DIR`` or the checkout this package lives in)."""
    if os.environ.get("CONTEND_NATIVE_DIR"):
        root = Path(os.environ["CONTEND_NATIVE_DIR"])
    else:
        root = Path(__file__).resolve().parents[3] / "native"
    if not (root / "Makefile").is_file():
        raise UserError(f"native sources not found at {root}: set CONTEND_NATIVE_DIR to contend's native/")
    return root


def build_dir(mpi: MPI) -> Path:
    """Where ``contend native build`` puts the native tools built with this MPI."""
    return native_dir() / "build" / mpi.build_name


def bench_binary(mpi: MPI) -> Path:
    """Where ``contend native build`` puts contend-bench for this MPI."""
    return build_dir(mpi) / BENCH_PROGRAM


def throttle_library(mpi: MPI) -> Path:
    """Where ``contend native build`` puts libcontend-throttle.so for this MPI."""
    return build_dir(mpi) / THROTTLE_LIBRARY


def throttle_checker(mpi: MPI) -> Path:
    """Where ``contend native build`` puts throttle-check, the library's own rules without MPI."""
    return build_dir(mpi) / "throttle-check"


def trace_library(mpi: MPI) -> Path:
    """Where ``contend native build`` puts libcontend-trace.so for this MPI."""
    return build_dir(mpi) / TRACE_LIBRARY


def build_native(mpi: MPI, *, force: bool = False) -> Path:
    """Compile ``native/`` with this MPI's wrapper (incrementally, by make): contend-bench, the throttle
    and trace libraries and their test programs, all in ``build_dir(mpi)``; returns contend-bench."""
    source = native_dir()
    build = Path("build") / mpi.build_name
    if force:
        shutil.rmtree(source / build, ignore_errors=True)
    if not shutil.which("make"):
        raise UserError("cannot build native/: `make` is not installed")
    done = subprocess.run(
        ["make", "-C", str(source), f"MPICC={mpi.mpicc}", f"BUILD={build}"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        tail = "; ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise UserError(f"building native/ with {mpi.mpicc} failed: {tail}")
    return source / build / BENCH_PROGRAM


LAUNCHER_MARK = "CONTEND_LAUNCHED_BY"  # set in every run's environment: whose run a process belongs to


def running_benchmarks(launched_by: int | None = None) -> list[int]:
    """Pids of contend-bench processes running on this host: all of them, or only those launched by
    the process ``launched_by`` (leftovers of its runs; other users' runs are not its business)."""
    mark = f"{LAUNCHER_MARK}={launched_by}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv0 = (entry / "cmdline").read_bytes().split(b"\0", 1)[0]
            if Path(argv0.decode(errors="replace")).name != BENCH_PROGRAM:
                continue
            if launched_by is not None and mark not in (entry / "environ").read_bytes().split(b"\0"):
                continue
        except OSError:  # the process ended while we looked
            continue
        pids.append(int(entry.name))
    return pids


@dataclass(frozen=True)
class Placement:
    """Where ranks run when not all on this host's shared memory: a wrapper that enters a rank's
    emulated node (see ``contend.native.fabric``) and the interface MPI must use there."""

    wrapper: Path
    device: str = "eth0"


def launch_command(
    mpi: MPI, ranks: int, program: Sequence[str], placement: Placement | None = None
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that start ``program`` on ``ranks`` ranks."""
    env = {**os.environ, LAUNCHER_MARK: str(os.getpid())}
    argv = [str(mpi.mpiexec)]
    if placement is not None:
        if mpi.flavor != "mpich":
            raise UserError(
                f"runs on the emulated fabric need MPICH (its fork launcher); {mpi.mpicc} is {mpi.flavor}"
            )
        # Ranks of one host in different namespaces: no shared memory, TCP on the node's interface.
        argv += ["-launcher", "fork", "-genv", "MPIR_CVAR_NOLOCAL", "1", "-genv", "UCX_TLS", "tcp",
                 "-genv", "UCX_NET_DEVICES", placement.device, "-n", str(ranks), str(placement.wrapper)]
    elif mpi.flavor == "openmpi":
        argv += ["--oversubscribe", "-n", str(ranks)]
        if os.geteuid() == 0:
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    else:
        argv += ["-n", str(ranks)]
    return argv + list(program), env


@dataclass
class Finished:
    """How a launched run ended."""

    returncode: int
    stderr: str
    elapsed_s: float
    timed_out: bool = False
    lines: list[str] = field(default_factory=list)


def _group_gone(process: subprocess.Popen, within_s: float) -> bool:
    """Whether the process group led by process is empty now or becomes so within within_s."""
    deadline = time.monotonic() + within_s
    while True:
        process.poll()  # reap the leader, or the group never looks empty
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _end_group(process: subprocess.Popen, grace_s: float = 2.0) -> None:
    """Stop the process group we started (its id is the leader's pid), politely then firmly."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        if _group_gone(process, grace_s):
            break
    process.wait()


def run_streaming(
    argv: Sequence[str],
    env: Mapping[str, str],
    on_line: Callable[[str], None],
    timeout_s: float,
) -> Finished:
    """Run argv, calling on_line for each stdout line as it arrives; never longer than timeout_s.

    Whatever happens (timeout, an exception in on_line, Ctrl-C) the whole process group is ended
    before this returns or raises.
    """
    start = time.monotonic()
    try:
        process = subprocess.Popen(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(env), text=True,
            start_new_session=True,
        )
    except OSError as exc:
        raise UserError(f"cannot start {argv[0]}: {exc.strerror}") from None
    stderr_chunks: list[str] = []
    drain = threading.Thread(target=lambda: stderr_chunks.append(process.stderr.read()), daemon=True)
    drain.start()
    timed_out = threading.Event()

    def expire() -> None:
        timed_out.set()
        _end_group(process)

    watchdog = threading.Timer(timeout_s, expire)
    watchdog.start()
    lines: list[str] = []
    try:
        for line in process.stdout:
            lines.append(line)
            on_line(line)
        process.wait()
    finally:
        watchdog.cancel()
        _end_group(process)
        drain.join(timeout=5)
        process.stdout.close()
        process.stderr.close()
    return Finished(
        returncode=process.returncode,
        stderr="".join(stderr_chunks),
        elapsed_s=time.monotonic() - start,
        timed_out=timed_out.is_set(),
        lines=lines,
    )


# Launcher options that take values, by flavor: to find where each rank's program starts in a user's
# `mpiexec ... prog args [: ... prog2 args]` (contend throttle puts `env LD_PRELOAD=...` there).
# Options are matched with one or two leading dashes; `-opt=value` carries its value.
_LAUNCHER_OPTIONS = {
    "mpich": {
        "values": {"n", "np", "f", "hostfile", "machinefile", "hosts", "host", "rankmap", "wdir", "genvlist",
                   "envlist", "launcher", "launcher-exec", "rmk", "topolib", "bind-to", "binding", "map-by",
                   "membind", "demux", "errfile-pattern", "outfile-pattern", "prepend-pattern",
                   "gpus-per-proc", "iface", "localhost", "nameserver", "order-nodes", "ppn", "usize",
                   "memory-alloc-kinds"},
        "pairs": {"genv", "env"},
        "flags": {"genvnone", "genvall", "envnone", "envall", "enable-x", "disable-x", "disable-auto-cleanup",
                  "disable-hostname-propagation", "hybrid-hosts", "pmi-port", "prepend-rank", "l",
                  "print-all-exitcodes", "profile", "skip-launch-node", "verbose", "v"},
        "files": {"configfile"},
    },
    "openmpi": {
        "values": {"n", "np", "c", "H", "host", "hostfile", "machinefile", "default-hostfile", "map-by",
                   "bind-to", "rank-by", "x", "prefix", "wdir", "path", "npernode", "N", "npersocket",
                   "output-filename", "tune", "timeout", "cpu-set", "cpus-per-proc", "cpus-per-rank",
                   "personality", "preload-files"},
        "pairs": {"mca", "gmca"},
        "flags": {"oversubscribe", "allow-run-as-root", "report-bindings", "display-map", "display-allocation",
                  "tag-output", "timestamp-output", "merge-stderr-to-stdout", "q", "quiet", "v", "verbose",
                  "use-hwthread-cpus", "nolocal", "noprefix", "enable-recovery", "disable-recovery",
                  "show-progress"},
        "files": {"app"},
    },
}


def program_starts(argv: Sequence[str], flavor: str) -> list[int]:
    """Where each program starts in a launch command ``mpiexec [opts] prog args [: [opts] prog args]``
    (one index per MPMD part). A UserError when that cannot be told for sure: an unknown option might
    take a value, and guessing wrong would run the ranks without what is inserted there."""
    table = _LAUNCHER_OPTIONS.get(flavor)
    if table is None:
        raise UserError(f"{argv[0]}: not an MPICH or Open MPI launcher; contend cannot tell where its programs "
                        "start (set CONTEND_MPICC to the mpicc of the MPI you launch with)")
    starts, i = [], 1
    while True:
        while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
            name = argv[i].lstrip("-")
            if "=" in name:
                i += 1
            elif name in table["files"]:
                raise UserError(f"{argv[0]} {argv[i]}: programs launched from a file are not supported here; "
                                "give them on the command line")
            elif name in table["pairs"]:
                i += 3
            elif name in table["values"]:
                i += 2
            elif name in table["flags"]:
                i += 1
            else:
                raise UserError(f"{argv[0]}: option {argv[i]} is not one contend knows, so it cannot tell "
                                "where the program starts; put it in the environment or leave it out")
        if i >= len(argv) or argv[i] == ":":
            raise UserError(f"{' '.join(argv)}: no program to run after the launcher's options")
        starts.append(i)
        if ":" not in argv[i:]:
            return starts
        i = argv.index(":", i) + 1


def launcher_mpi(launcher: str) -> MPI:
    """The MPI a launch command's first word belongs to: the one contend found (``find_mpi``) if the
    launcher sits beside its mpiexec, else the MPI whose mpicc sits beside the launcher."""
    found = find_mpi()
    where = shutil.which(launcher)
    if where is None:
        raise UserError(f"{launcher}: no such launcher (not found on PATH)")
    path = Path(where)
    if path.resolve() == found.mpiexec.resolve() or path.parent.resolve() == found.mpiexec.parent.resolve():
        return found
    mpicc = path.parent / "mpicc"
    if mpicc.is_file():
        return MPI(mpicc=mpicc, mpiexec=path, flavor=_flavor(path), origin="launcher")
    raise UserError(f"{launcher}: not the launcher of an MPI contend knows (no mpicc beside {path}); the "
                    "command must start with the mpiexec or mpirun of the program's MPI (set CONTEND_MPICC and "
                    "CONTEND_MPIEXEC to that MPI's)")
