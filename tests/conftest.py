"""Shared test machinery: tests marked ``fabric`` build emulated fabrics, in isolation.

A ``fabric`` test is skipped, with the reason, where the fabric cannot be built (not root, iproute2
missing). It runs under ``fabric.TEST_PREFIX``, so it never touches a fabric the user built, and
afterwards it must have left no namespace and no benchmark process behind.
"""

from __future__ import annotations

import os
import re

import pytest

from contend.native import fabric, mpi


def pytest_configure(config):
    config.addinivalue_line("markers", "fabric: builds an emulated fabric (needs root and iproute2)")


def pytest_collection_modifyitems(config, items):
    reason = fabric.missing_requirement()
    if reason:
        for item in items:
            if "fabric" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def built():
    """The MPI found here, with native/ built for it."""
    library = mpi.find_mpi()
    mpi.build_native(library)
    return library


@pytest.fixture
def isolated_fabric():
    """The prefix the test builds its fabric under (fabric.TEST_PREFIX); afterwards nothing is left."""
    yield fabric.TEST_PREFIX
    assert fabric.our_namespaces(fabric.TEST_PREFIX) == [], "a test left namespaces behind"
    assert mpi.running_benchmarks(os.getpid()) == [], "a test left benchmark processes behind"


@pytest.fixture
def fails_cleanly(capsys):
    """Runs the CLI in-process and asserts the promise for bad input: exit code 2 and exactly one line on
    stderr, matching ``pattern``, no traceback. Returns the line."""
    from contend.cli import main

    def run(args: list[str], pattern: str) -> str:
        code = main(args)
        out, err = capsys.readouterr()
        assert code == 2, (out, err)
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert re.search(pattern, err), err
        return err
    return run
