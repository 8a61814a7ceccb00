"""Analyses built on simulations and measurements: NIC sweeps and threshold tuning."""
