"""Sub-commands of the ``contend`` CLI, one module per verb (see ``contend.cli``)."""
