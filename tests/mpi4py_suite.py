"""Run mpi4py's own test suite (its sdist's test/main.py) and record each test's outcome per rank,
for tests/test_real_clients.py.

    mpiexec -n 4 python mpi4py_suite.py SDIST_TEST_DIR OUTPUT_DIR [main.py options, e.g. -i test_p2p]

mpi4py's runner prints its verbose lines from every rank into one stream, where they interleave; so this
runs the same runner (its options, loader and skips) with a result class that keeps each test's outcome,
and each rank writes OUTPUT_DIR/rank-<r>.json: {"rank": r, "size": n, "tests": {id: outcome}}, outcome one
of ok, fail, error, skip, xfail, xpass. A subtest is its own entry (id plus its parameters). The exit code
is mpi4py's (0 when all passed).
"""

from __future__ import annotations

import json
import os
import sys
import unittest


class Runner(unittest.TextTestRunner):
    """unittest's text runner that keeps the result it made."""

    def run(self, test):
        self.result = super().run(test)
        return self.result


class Recording(unittest.TextTestResult):
    """unittest's text result that also keeps each test's (or subtest's) outcome."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcomes: dict[str, str] = {}

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcomes.setdefault(test.id(), "ok")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.outcomes[test.id()] = "fail"

    def addError(self, test, err):
        super().addError(test, err)
        self.outcomes[test.id()] = "error"

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcomes[test.id()] = "skip"

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.outcomes[test.id()] = "xfail"

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.outcomes[test.id()] = "xpass"

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is None:
            outcome = "ok"
        elif issubclass(err[0], test.failureException):
            outcome = "fail"
        elif issubclass(err[0], unittest.SkipTest):
            outcome = "skip"
        else:
            outcome = "error"
        self.outcomes[subtest.id()] = outcome


def main() -> int:
    testdir, outdir, options = sys.argv[1], sys.argv[2], sys.argv[3:]
    sys.dont_write_bytecode = True
    sys.path.insert(0, testdir)
    import main as mpi4py_main  # the sdist's runner

    runner = Runner(stream=sys.stderr, verbosity=0, resultclass=Recording)
    try:  # its runTests ends in sys.exit
        mpi4py_main.TestProgram(module=None, argv=["main.py", *options], testRunner=runner)
    except SystemExit:
        pass
    result = runner.result
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    path = os.path.join(outdir, f"rank-{rank}.json")
    with open(path + ".tmp", "w") as out:
        json.dump({"rank": rank, "size": comm.Get_size(), "tests": result.outcomes}, out)
    os.replace(path + ".tmp", path)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
