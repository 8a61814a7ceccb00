"""Shared test machinery: tests marked ``fabric`` build emulated fabrics, in isolation.

A ``fabric`` test is skipped, with the reason, where the fabric cannot be built (not root, iproute2
missing). It runs under ``fabric.TEST_PREFIX``, so it never touches a fabric the user built, and
afterwards it must have left no namespace and no benchmark process behind.
"""

from __future__ import annotations

import os

import pytest

from contend import fabric, mpi


def pytest_configure(config):
    config.addinivalue_line("markers", "fabric: builds an emulated fabric (needs root and iproute2)")


def pytest_collection_modifyitems(config, items):
    reason = fabric.missing_requirement()
    if reason:
        for item in items:
            if "fabric" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def isolated_fabric(monkeypatch):
    monkeypatch.setenv("CONTEND_FABRIC_PREFIX", fabric.TEST_PREFIX)
    yield fabric.TEST_PREFIX
    assert fabric.our_namespaces(fabric.TEST_PREFIX) == [], "a test left namespaces behind"
    assert mpi.running_benchmarks(os.getpid()) == [], "a test left benchmark processes behind"
