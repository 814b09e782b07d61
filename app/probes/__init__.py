"""Probes: one module per kind on one interface, the explicit registry, runner and error classes."""
