"""The machine file and its tables (docs/formats.md, "Machine files"): read once, checked with file:line,
turned into the engine's parameters.

- ``file``: ``Machine``, ``load_machine``, the presets (``presets/*.toml``), the LogGOPS parameters;
- ``tomlfile``: TOML reading with line numbers, unknown-key checks; ``quantities``: "2GB/s", "100ns";
  ``size_classes``: message-size keys shared by ``[nic]`` and ``[throttle]``;
- one module per table: ``topology`` ([topology]), ``nic`` ([nic]), ``admission`` ([throttle]: admission
  control in the simulated NIC), ``memory`` ([memory], and --memory-throttle, its mitigations).
"""
