"""Experiments behind ``contend demo`` (and, in later issues, ``contend reproduce``): one module per tour or paper."""
