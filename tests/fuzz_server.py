"""Runs `contend` commands for tests/test_fuzz.py in forked children of one warmed process.

Starting `contend` costs about a second of imports; this process pays it once (contend.cli, every command
module and the libraries they load lazily) and then, per request, forks a child that runs
``contend.cli.main(argv)`` exactly as the console script would (``sys.exit(main())``, then the
interpreter's final flush of stdout). The parent waits with a timeout, kills the child's process group
on a hang and reports the wait status, so a signal is seen as one.

Protocol: one JSON request per line on stdin, one JSON answer per line on stdout.
Request: argv, cwd, stdout, stderr (paths), fsize (RLIMIT_FSIZE bytes or null), broken_stdout (stdout is a
pipe whose reader is gone, like `| head -c0`), unprivileged (run as nobody, so read-only places are
read-only for it), memory (RLIMIT_AS bytes), timeout (s). Answer: status (exit code, or -signal),
timed_out.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import sys
import time
import traceback

NOBODY = 65534


def warm() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import contend.cli
    import matplotlib.pyplot  # noqa: F401
    import numpy  # noqa: F401
    import pandas  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    import sklearn.datasets  # noqa: F401  (skops imports it on loading; as nobody it could not be read)
    import sklearn.ensemble  # noqa: F401
    import skops.io  # noqa: F401

    try:
        import otf2  # noqa: F401
    except ImportError:
        pass
    contend.cli.build_parser()  # imports every command module
    # Cases run as nobody cannot import what lies under /root (the interpreter's own library may): what
    # the commands import late is imported here, before the fork.
    import contend.analysis.nimc  # noqa: F401
    import contend.analysis.predict  # noqa: F401
    import contend.report.predict  # noqa: F401
    import contend.analysis.whatif  # noqa: F401
    import contend.parallel  # noqa: F401
    import contend.report.whatif  # noqa: F401


def child(request: dict, pipes: dict) -> None:
    """In the forked child: set up the places, run the command, exit with its code. Its stdout and stderr
    are pipes the parent copies to files, so a file size limit of the case does not cut them."""
    import contend.cli

    os.setpgid(0, 0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(pipes["stderr"][1], 2)
    if request.get("broken_stdout"):
        reader, writer = os.pipe()
        os.close(reader)
        os.dup2(writer, 1)
    else:
        os.dup2(pipes["stdout"][1], 1)
    for reader, writer in pipes.values():
        os.close(reader)
        os.close(writer)
    if request.get("memory"):
        resource.setrlimit(resource.RLIMIT_AS, (request["memory"], request["memory"]))
    if request.get("fsize") is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (request["fsize"], request["fsize"]))
    os.chdir(request["cwd"])
    if request.get("unprivileged"):
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)
    sys.argv = ["contend", *request["argv"]]
    code = 1
    try:
        code = contend.cli.main(request["argv"])
        code = 0 if code is None else code
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:  # what the interpreter would print for an uncaught exception
        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
    except BaseException as exc:  # the interpreter's message and code when its final flush fails
        print(f"Exception ignored on flushing sys.stdout:\n{type(exc).__name__}: {exc}", file=sys.stderr)
        code = 120
    try:
        sys.stderr.flush()
    except BaseException:
        pass
    os._exit(code & 0xFF)


def serve() -> None:
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # nothing the warm-up prints can mix with the answers
    warm()
    answers.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pipes = {"stdout": os.pipe(), "stderr": os.pipe()}
        pid = os.fork()
        if pid == 0:
            try:
                child(request, pipes)
            finally:
                os._exit(101)
        captured = {name: bytearray() for name in pipes}
        readers = {pipes[name][0]: name for name in pipes}
        for _, writer in pipes.values():
            os.close(writer)
        deadline = time.monotonic() + request["timeout"]
        timed_out = False
        status = None
        while readers or status is None:
            ready, _, _ = select.select(list(readers), [], [], 0.01)
            for fd in ready:
                data = os.read(fd, 1 << 16)
                if data:
                    captured[readers[fd]] += data
                else:
                    os.close(fd)
                    del readers[fd]
            if status is None:
                done, wait_status = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = wait_status
                    try:  # anything the command started and left running, which may hold the pipes
                        os.killpg(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
            if time.monotonic() > deadline:
                if status is None:
                    timed_out = True
                    os.killpg(pid, signal.SIGKILL)
                    _, status = os.waitpid(pid, 0)
                for fd in readers:
                    os.close(fd)
                readers = {}
        for name, data in captured.items():
            with open(request[name], "wb") as file:
                file.write(data)
        answers.write(json.dumps({"status": os.waitstatus_to_exitcode(status), "timed_out": timed_out}) + "\n")


if __name__ == "__main__":
    serve()
