"""Service level objectives: their definitions, and attainment, error budget and burn rates
computed from samples and rollups (what the SLO burn-rate alert rules and the weekly
report read).

Public API (docs/alerts.md, "SLOs"): :mod:`app.slo.definitions` (``SloSpec``,
``list_slos``, ``get_slo``, ``upsert_slo``), :mod:`app.slo.compute` (``good_counts``,
``slo_status``, ``burn_rates``).
"""
