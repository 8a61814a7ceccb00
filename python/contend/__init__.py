"""contend: measure, simulate, diagnose and avoid contention in parallel programs.

The package, grouped by what it does (each folder's ``__init__`` says more):

    contend/
      cli.py, commands/     the ``contend`` command: one module per verb, each importing what it needs when
                            it runs (``contend --help`` loads no heavy library: tests/test_startup.py)
      errors.py, atomic.py, cachedir.py, parallel.py, engine.py, lazy.py
                            shared by all: UserError, whole-or-nothing outputs, the cache, worker pools,
                            the loaded Rust engine (``_engine``, where maturin puts it), names loaded on use
      machine/              the machine file and its tables, read once and checked with file:line:
                            file.py (Machine, load_machine, presets/), tomlfile.py, quantities.py,
                            size_classes.py, topology.py [topology], nic.py [nic], admission.py [throttle]
                            (admission control in the simulated NIC), memory.py [memory] and
                            --memory-throttle
      noise/                OS noise: the [noise] table and --noise (settings), noise traces, measuring
      simulation/           one simulation and its results: simulate.py, result.py, records.py, links.py,
                            layout.py (the network's links and nodes as reports name them),
                            critical_path.py, chrome_trace.py
      native/               everything that runs native code (the checkout's native/): mpi.py (MPI
                            discovery, builds), fabric.py (emulated nodes), libthrottle.py
                            (libcontend-throttle.so, the real library), bench/ (microbenchmarks and
                            their fits), trace/ (traced runs, OTF2, replay to GOAL)
      analysis/             built on simulations and measurements: diagnose, whatif, tune, nimc, predict
      mapping/              placements of ranks on nodes
      report/               tables, plots, HTML, findings: plain data in, no simulation run
      experiments/          the demo tour and the reproductions

Who imports whom (no cycles between modules): machine/ imports the shared modules and noise.settings
(the [noise] table); simulation/ imports machine/, noise/ and report/'s formatting; native/ imports
machine/ (units) and report/ (tables, plots); analysis/, mapping/ and experiments/ build on those;
report/ imports no experiment; commands/ is imported by cli.py only, lazily.
"""

from __future__ import annotations

from contend.lazy import lazy_names

__version__ = "0.1.0"

# The public names, loaded on first use (PEP 562): every `contend` command imports this package, and
# must not pay for numpy before it needs it (tests/test_startup.py).
_PUBLIC = {
    "Machine": "contend.machine.file",
    "load_machine": "contend.machine.file",
    "preset_names": "contend.machine.file",
    "read_records": "contend.simulation.records",
    "SimulationResult": "contend.simulation.result",
    "simulate": "contend.simulation.simulate",
}

__all__ = sorted(_PUBLIC)

__getattr__ = lazy_names(__name__, _PUBLIC)
