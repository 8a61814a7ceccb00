"""One simulation and its results: ``simulate`` (the public ``contend.simulate``), ``result``
(``SimulationResult``), per-message ``records``, per-link ``links`` named by the network's ``layout``,
the ``critical_path`` and the ``chrome_trace`` export."""
