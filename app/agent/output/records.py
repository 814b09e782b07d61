"""Samples as plain JSON values: for the spool (compact rows) and for "test now" results.

Neither form ever holds a password: a :class:`~app.samples.Sample` has none, and its
error message was sanitised by the runner.
"""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime, timedelta
from operator import attrgetter
from typing import Any

from app.samples import ErrorClass, Sample, SampleStatus

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Sample))
_TIME_FIELDS = ("scheduled_at", "started_at")


_GET = attrgetter(*FIELDS)
_EC = FIELDS.index("error_class")


def _us(at: datetime) -> int:
    d = at - _EPOCH  # aware datetimes subtract in UTC whatever their zone
    return (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds


def _from_us(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


def to_row(sample: Sample) -> list[Any]:
    """A compact JSON row: the Sample's fields in declaration order, times as epoch µs."""
    row: list[Any] = list(_GET(sample))
    row[1] = _us(row[1])
    row[2] = _us(row[2])
    row[3] = str(row[3])
    if row[_EC] is not None:
        row[_EC] = str(row[_EC])
    return row


def from_row(row: list[Any]) -> Sample:
    if len(row) != len(FIELDS):
        raise ValueError(f"a spooled sample has {len(row)} fields, expected {len(FIELDS)}")
    values = list(row)
    values[1] = _from_us(int(values[1]))
    values[2] = _from_us(int(values[2]))
    values[3] = SampleStatus(values[3])
    if values[_EC] is not None:
        values[_EC] = ErrorClass(values[_EC])
    if values[-1] is None:
        values[-1] = {}
    return Sample(*values)


def to_json(sample: Sample) -> dict[str, Any]:
    """A readable JSON document of one sample (the "test now" result).

    Every Sample field under its own name (timings in ns, instants in ISO 8601 UTC),
    plus ``phases_ms`` (each measured phase in milliseconds) and ``logon_phases_ms``
    (the logon's round-trip breakdown in milliseconds, when measured).
    """
    doc: dict[str, Any] = {}
    for name in FIELDS:
        value = getattr(sample, name)
        if name in _TIME_FIELDS:
            value = value.astimezone(UTC).isoformat()
        elif isinstance(value, SampleStatus | ErrorClass):
            value = str(value)
        doc[name] = value
    doc["phases_ms"] = {k: v / 1e6 for k, v in sample.timings().items()}
    if sample.total_ns is not None:
        doc["phases_ms"]["total"] = sample.total_ns / 1e6
    doc["logon_phases_ms"] = (
        {k: v / 1e6 for k, v in sample.logon_phases.items()} if sample.logon_phases else None
    )
    return doc
