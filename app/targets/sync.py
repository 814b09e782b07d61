"""Targets into and out of the store: all-or-nothing import (upsert, optional prune), export, list.

Import is an upsert by name (targets), by name within a target (modes) and by
(probe, site) within a mode (series); ``prune`` also removes what the file does
not name. Everything is validated before anything is written (``app.targets.schema``),
and the whole import is one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml
from sqlalchemy import delete, func, select, update
from sqlalchemy.engine import Connection

from app.models import modes, series, targets
from app.secrets import Vault
from app.targets.durations import format_duration_ms
from app.targets.policy import (
    WritePolicy,
    check_entry,
    check_series_cap,
    default_policy,
    store_secret,
    stored,
)
from app.targets.schema import ModeEntry, TargetsFile


@dataclass
class ImportResult:
    created: int = 0
    updated: int = 0  # targets of which something (the target, a mode, a series) changed
    removed: int = 0
    unchanged: int = 0  # targets the file describes exactly as they are stored


def _differs(row: Any, values: dict[str, Any]) -> bool:
    """True when a stored row's columns differ from ``values`` (jsonb compared as data)."""
    return any(getattr(row, k) != v for k, v in values.items())


def import_targets(
    conn: Connection,
    doc: TargetsFile,
    vault: Vault,
    *,
    prune: bool = False,
    policy: WritePolicy | None = None,
) -> ImportResult:
    """Upsert every target, mode and series of ``doc`` (caller owns the transaction).

    Only what differs is written: a target the file describes exactly as stored counts
    as ``unchanged`` and keeps its ``updated_at`` (and its series theirs); a target whose
    own columns, password, modes or series changed counts as ``updated``.

    ``policy`` (app.targets.policy) says what this writer may store; None is the policy of
    the settings with an admin's rights (the CLI). A :class:`PolicyError` leaves the
    caller's transaction to roll back: nothing is stored half.
    """
    policy = policy if policy is not None else default_policy()
    result = ImportResult()
    for entry in doc.targets:
        before = stored(conn, entry.name)
        check_entry(entry, before, policy)
        values: dict[str, Any] = {
            "name": entry.name,
            "kind": entry.kind,
            "dsn": entry.dsn,
            "username": entry.username,
            "description": entry.description,
            "enabled": entry.enabled,
            "labels": entry.labels,
            "params": entry.params,
        }
        if before is None:
            values.update({"password_enc": None, "password_ref": None})
            target_id = conn.execute(targets.insert().values(**values).returning(targets.c.id))
            tid = int(target_id.scalar_one())
            _sync_modes(conn, tid, entry.modes, prune=prune)
            store_secret(conn, tid, entry, None, vault)
            check_series_cap(conn, tid, entry.name, policy)
            result.created += 1
            continue
        tid = before.id
        existing = conn.execute(select(targets).where(targets.c.id == tid)).one()
        changed = _differs(existing, values)
        if changed:
            conn.execute(
                update(targets).where(targets.c.id == tid).values(**values, updated_at=func.now())
            )
        if _sync_modes(conn, tid, entry.modes, prune=prune):
            changed = True
        if store_secret(conn, tid, entry, before, vault):
            changed = True
        check_series_cap(conn, tid, entry.name, policy)
        if changed:
            result.updated += 1
        else:
            result.unchanged += 1
    if prune:
        names = [t.name for t in doc.targets]
        res = conn.execute(delete(targets).where(targets.c.name.not_in(names)))
        result.removed = res.rowcount or 0
    return result


def _sync_modes(conn: Connection, target_id: int, entries: list[ModeEntry], *, prune: bool) -> bool:
    """Insert or update the modes of one target and their series; True if anything
    changed (a mode or series added, altered or, with ``prune``, removed)."""
    changed = False
    stored = {r.name: r for r in conn.execute(select(modes).where(modes.c.target_id == target_id))}
    for m in entries:
        values = {
            "kind": m.kind,
            "transport": m.transport,
            "params": m.params,
            "enabled": m.enabled,
        }
        row = stored.get(m.name)
        if row is None:
            mode_id = int(
                conn.execute(
                    modes.insert()
                    .values(target_id=target_id, name=m.name, **values)
                    .returning(modes.c.id)
                ).scalar_one()
            )
            changed = True
        else:
            mode_id = int(row.id)
            if _differs(row, values):
                conn.execute(update(modes).where(modes.c.id == mode_id).values(**values))
                changed = True
        if _sync_series(conn, mode_id, m, prune=prune):
            changed = True
    if prune:
        res = conn.execute(
            delete(modes).where(
                modes.c.target_id == target_id, modes.c.name.not_in([m.name for m in entries])
            )
        )
        changed = changed or bool(res.rowcount)
    return changed


def _sync_series(conn: Connection, mode_id: int, m: ModeEntry, *, prune: bool) -> bool:
    """The series of one mode, by (probe, site); True if any was added, altered or removed.
    ``updated_at`` moves only for a series whose settings changed."""
    changed = False
    stored = {
        (r.probe, r.site): r
        for r in conn.execute(select(series).where(series.c.mode_id == mode_id))
    }
    for p in m.probes:
        assert p.timeout is not None
        values = {
            "interval_ms": p.interval,
            "timeout_ms": p.timeout,
            "params": p.params,
            "enabled": p.enabled,
        }
        row = stored.get((p.probe, p.site))
        if row is None:
            conn.execute(
                series.insert().values(mode_id=mode_id, probe=p.probe, site=p.site, **values)
            )
            changed = True
        elif _differs(row, values):
            conn.execute(
                update(series).where(series.c.id == row.id).values(**values, updated_at=func.now())
            )
            changed = True
    if prune:
        keep = {(p.probe, p.site) for p in m.probes}
        drop = [r.id for key, r in stored.items() if key not in keep]
        if drop:
            conn.execute(delete(series).where(series.c.id.in_(drop)))
            changed = True
    return changed


def export_targets(
    conn: Connection, *, include_secrets: bool = True, names: list[str] | None = None
) -> dict[str, Any]:
    """The stored targets as a document that :func:`import_targets` reads back unchanged.

    Passwords are exported only as references or as the Fernet token (usable only with
    this installation's key); never in plain text. ``include_secrets=False`` omits them.
    """
    out: list[dict[str, Any]] = []
    q = select(targets).order_by(targets.c.name)
    if names is not None:
        q = q.where(targets.c.name.in_(names))
    trows = conn.execute(q).mappings().all()
    for t in trows:
        entry: dict[str, Any] = {
            "name": t["name"],
            "kind": t["kind"],
            "dsn": t["dsn"],
            "username": t["username"],
        }
        if include_secrets and t["password_ref"] is not None:
            entry["password"] = t["password_ref"]
        elif include_secrets and t["password_enc"] is not None:
            entry["password_encrypted"] = t["password_enc"]
        if t["description"]:
            entry["description"] = t["description"]
        if not t["enabled"]:
            entry["enabled"] = False
        if t["labels"]:
            entry["labels"] = dict(t["labels"])
        if t["params"]:
            entry["params"] = dict(t["params"])
        entry["modes"] = _export_modes(conn, int(t["id"]))
        out.append(entry)
    return {"targets": out}


def _export_modes(conn: Connection, target_id: int) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = []
    mrows = conn.execute(
        select(modes).where(modes.c.target_id == target_id).order_by(modes.c.id)
    ).mappings()
    for m in mrows.all():
        mode: dict[str, Any] = {"name": m["name"]}
        if m["kind"] != m["name"]:
            mode["kind"] = m["kind"]
        if m["transport"] != "tcp":
            mode["transport"] = m["transport"]
        if not m["enabled"]:
            mode["enabled"] = False
        if m["params"]:
            mode["params"] = dict(m["params"])
        probes = []
        srows = conn.execute(
            select(series).where(series.c.mode_id == m["id"]).order_by(series.c.id)
        ).mappings()
        for s in srows.all():
            probe: dict[str, Any] = {
                "probe": s["probe"],
                "interval": format_duration_ms(s["interval_ms"]),
                "timeout": format_duration_ms(s["timeout_ms"]),
            }
            if s["site"] != "default":
                probe["site"] = s["site"]
            if not s["enabled"]:
                probe["enabled"] = False
            if s["params"]:
                probe["params"] = dict(s["params"])
            probes.append(probe)
        mode["probes"] = probes
        result.append(mode)
    return result


def snapshot(conn: Connection, name: str) -> dict[str, Any] | None:
    """One target as its export entry (for the audit log's before/after), or None."""
    found = export_targets(conn, names=[name])["targets"]
    return found[0] if found else None


def dump_yaml(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True)


@dataclass(frozen=True)
class TargetRow:
    name: str
    kind: str
    dsn: str
    modes: str
    series: int
    enabled: bool


def list_targets(conn: Connection) -> Iterable[TargetRow]:
    q = (
        select(
            targets.c.name,
            targets.c.kind,
            targets.c.dsn,
            targets.c.enabled,
            func.string_agg(func.distinct(modes.c.name), ",").label("modes"),
            func.count(series.c.id).label("series"),
        )
        .select_from(targets.outerjoin(modes).outerjoin(series))
        .group_by(targets.c.id)
        .order_by(targets.c.name)
    )
    for r in conn.execute(q):
        yield TargetRow(r.name, r.kind, r.dsn, r.modes or "", int(r.series), bool(r.enabled))
