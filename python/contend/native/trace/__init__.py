"""Real MPI traces: the files of ``native/trace`` (libcontend-trace.so) and OTF2 traces, turned into the
trace records that ``contend diagnose`` reads (docs/formats.md, "Trace files" and "Records from real
traces").

- ``files``: read and check the per-rank ``rank-NNNNN.ctrace`` files;
- ``clock``: put every rank's timestamps on rank 0's clock (offset and drift from the tracer's samples);
- ``symbols``: return addresses to ``function (file:line)`` with addr2line;
- ``convert``: one row per call, sends paired with their receives, written as ``records.parquet`` and
  ``regions.parquet``;
- ``otf2_import``: the same records from an OTF2 trace (Score-P);
- ``replay``: a trace of any of these formats to a GOAL schedule, by the engine's replay module.
"""
