"""The store: raw samples, rollups that keep percentiles, retention, and the read queries.

Design and every function's contract: ``docs/store.md``. Writing:
:func:`app.store.write.ingest.write_samples`; upkeep: :func:`app.store.write.maintenance.maintain`;
reads: :mod:`~app.store.read.timeseries`, :mod:`~app.store.read.compare`,
:mod:`~app.store.read.heatmap`, :mod:`~app.store.read.incidents`,
:mod:`~app.store.read.availability`, :mod:`~app.store.read.weekly`,
:func:`app.store.read.samples.read_samples` / :func:`~app.store.read.samples.export_csv`.
"""
