"""Experiments behind ``contend demo`` and ``contend reproduce``: one module per tour or paper."""
