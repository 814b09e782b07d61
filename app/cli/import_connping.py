"""``connwatch import-connping``: history from ad-hoc connping runs joins the store.

The samples land in the mode's ``connping`` series (the one at ``site``, or the only
one the mode has); if the mode has none, a disabled series at site ``import`` is
created for them, so no agent starts probing because of an import. Writing is
idempotent (the key is series + instant): importing a file twice stores it once.
The rollups pick the new samples up like any others.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.probes.adhoc.connping_csv import ConnpingCsvError, parse_connping_csv
from app.probes.adhoc.rwlformat import DEFAULT_UTCFORMAT
from app.store.write.ingest import write_samples


class ImportError_(ValueError):
    """The import cannot proceed; the message says what and where."""


@dataclass(frozen=True)
class ImportOutcome:
    series_id: int
    read: int
    new: int


def find_or_create_series(
    conn: Connection, target: str, mode: str, site: str | None, interval_ms: int
) -> int:
    mode_id = conn.execute(
        text(
            "select m.id from targets t join modes m on m.target_id = t.id "
            "where t.name = :t and m.name = :m"
        ),
        {"t": target, "m": mode},
    ).scalar()
    if mode_id is None:
        known = conn.execute(
            text(
                "select m.name from targets t join modes m on m.target_id = t.id "
                "where t.name = :t order by m.name"
            ),
            {"t": target},
        ).scalars()
        names = list(known)
        if not names:
            raise ImportError_(f"no target named {target!r} (see 'connwatch targets list')")
        raise ImportError_(f"target {target!r} has no mode {mode!r} (it has: {', '.join(names)})")
    rows = conn.execute(
        text("select id, site from series where mode_id = :m and probe = 'connping' order by id"),
        {"m": mode_id},
    ).all()
    if site is not None:
        for r in rows:
            if r.site == site:
                return int(r.id)
    elif len(rows) == 1:
        return int(rows[0].id)
    elif len(rows) > 1:
        sites = ", ".join(r.site for r in rows)
        raise ImportError_(
            f"{target}/{mode} has connping series at several sites ({sites}): give --site"
        )
    new_id = conn.execute(
        text(
            "insert into series (mode_id, probe, interval_ms, timeout_ms, enabled, site) "
            "values (:m, 'connping', :i, :i, false, :s) returning id"
        ),
        {"m": mode_id, "i": max(100, interval_ms), "s": site or "import"},
    ).scalar_one()
    return int(new_id)


def import_connping_file(
    conn: Connection,
    path: Path,
    *,
    target: str,
    mode: str,
    site: str | None = None,
    start: datetime | None = None,
    interval_s: float | None = None,
    utcformat: str | None = None,
    keep_days: int = 1826,
    now: datetime | None = None,
) -> ImportOutcome:
    """Parse ``path`` completely, then store it in one transaction (the caller's).

    Rows must be timed within the store's window: no older than ``keep_days`` (the
    longest retention, CONNWATCH_RETENTION_1H_DAYS: older history would be dropped at
    once) and no later than a day ahead of ``now`` (clock skew); each row's day gets a
    partition, so a typo'd epoch in the year 5138 must not create one.
    """
    now = now or datetime.now(UTC)
    window = (now - timedelta(days=keep_days), now + timedelta(days=1))
    try:
        with path.open(newline="") as fh:
            samples = parse_connping_csv(
                fh,
                start=start,
                interval=interval_s,
                utcformat=utcformat or DEFAULT_UTCFORMAT,
                window=window,
            )
    except OSError as exc:
        raise ImportError_(f"{path}: cannot read: {exc.strerror}") from None
    except ConnpingCsvError as exc:
        raise ImportError_(f"{path}: {exc}") from None
    if not samples:
        raise ImportError_(f"{path}: no samples in the file")
    series_id = find_or_create_series(conn, target, mode, site, round((interval_s or 1.0) * 1000))
    for s in samples:
        s.series_id = series_id
    new = write_samples(conn, samples)
    return ImportOutcome(series_id, len(samples), new)
