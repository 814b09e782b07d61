"""The store: raw samples, rollups that keep percentiles, retention, and the read queries.

Design and every function's contract: ``docs/store.md``. Writing:
:func:`app.store.ingest.write_samples`; upkeep: :func:`app.store.maintenance.maintain`;
reads: :mod:`~app.store.timeseries`, :mod:`~app.store.compare`, :mod:`~app.store.heatmap`,
:mod:`~app.store.incidents`, :mod:`~app.store.availability`, :mod:`~app.store.weekly`,
:func:`app.store.samples.read_samples` / :func:`~app.store.samples.export_csv`.
"""
