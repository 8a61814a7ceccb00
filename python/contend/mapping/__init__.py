"""Topology-aware mapping: where each rank should run so that its messages cross fewer links.

- ``graph``: the communication graph (bytes and messages between each pair of ranks), from a schedule,
  records, a trace or a generated collective.
- ``objective``: what a placement costs under a machine's routing (hop-bytes, link loads, makespan).
- ``methods``: the placements (baselines, graph partitioning, topology-aware bisection and refinement).
- ``formats``: a placement as the machine file, MPICH, Open MPI and Slurm want it.
"""
