"""Everything that runs native code (the C tools of the checkout's native/): ``mpi`` finds an MPI and
builds the tools, ``fabric`` emulates nodes with network namespaces, ``libthrottle`` preloads
libcontend-throttle.so (the real library; not the simulated ``[throttle]`` table of
``contend.machine.admission``), ``bench/`` runs and fits the microbenchmarks, ``trace/`` reads what the
tracer wrote and replays it."""
