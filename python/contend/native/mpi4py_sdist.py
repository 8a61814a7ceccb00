"""mpi4py's source distribution for the installed mpi4py, downloaded once into contend's cache: its own
test suite (``test/``) and OSU-style demos (``demo/osu_*.py``), which the tests and benchmarks run as real
MPI programs (docs/measure.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path

from contend.cachedir import cache_dir
from contend.errors import UserError

DOWNLOAD_TIMEOUT_S = 300


def mpi4py_sdist() -> Path:
    """The unpacked sdist (its test/ and demo/osu_* files); UserError when it cannot be downloaded."""
    version = metadata.version("mpi4py")
    root = cache_dir() / f"mpi4py-{version}"
    if (root / "test" / "main.py").exists() and (root / "demo" / "osu_bw.py").exists():
        return root
    download = cache_dir() / "downloads"
    download.mkdir(parents=True, exist_ok=True)
    archive = download / f"mpi4py-{version}.tar.gz"
    if not archive.exists():
        try:
            got = subprocess.run(
                [sys.executable, "-m", "pip", "download", f"mpi4py=={version}", "--no-binary", ":all:",
                 "--no-deps", "-q", "-d", str(download)],
                capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S)
            why = got.stderr.strip()[-300:] if got.returncode != 0 or not archive.exists() else ""
        except subprocess.TimeoutExpired:
            why = f"no answer within {DOWNLOAD_TIMEOUT_S} s"
        if why:
            raise UserError(f"cannot download the mpi4py {version} sdist (is the package registry reachable?): {why}")
    partial = cache_dir() / f".mpi4py-{version}.partial"
    shutil.rmtree(partial, ignore_errors=True)  # left by an interrupted run
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers()
                   if m.name.startswith((f"mpi4py-{version}/test/", f"mpi4py-{version}/demo/osu_"))]
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # nothing outside `partial`
        tar.extractall(partial, members=members, **safe)
    shutil.rmtree(root, ignore_errors=True)  # an older cache without the demos
    os.replace(partial / f"mpi4py-{version}", root)
    partial.rmdir()
    return root
