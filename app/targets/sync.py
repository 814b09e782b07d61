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
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.engine import Connection

from app.credentials import Vault, is_reference
from app.models import modes, series, targets
from app.targets.durations import format_duration_ms
from app.targets.schema import ModeEntry, TargetEntry, TargetsFile


@dataclass
class ImportResult:
    created: int = 0
    updated: int = 0
    removed: int = 0


def _secret_columns(entry: TargetEntry, vault: Vault) -> dict[str, str | None] | None:
    """Columns for the password, or None to keep what is stored."""
    if entry.password_encrypted is not None:
        vault.decrypt(entry.password_encrypted)  # must be readable with our key
        return {"password_enc": entry.password_encrypted, "password_ref": None}
    if entry.password is None:
        return None
    if is_reference(entry.password):
        return {"password_enc": None, "password_ref": entry.password}
    return {"password_enc": vault.encrypt(entry.password), "password_ref": None}


def import_targets(
    conn: Connection, doc: TargetsFile, vault: Vault, *, prune: bool = False
) -> ImportResult:
    """Upsert every target, mode and series of ``doc`` (caller owns the transaction)."""
    result = ImportResult()
    for entry in doc.targets:
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
        secret = _secret_columns(entry, vault)
        existing = conn.execute(select(targets.c.id).where(targets.c.name == entry.name)).first()
        if existing is None:
            values.update(secret or {"password_enc": None, "password_ref": None})
            target_id = conn.execute(targets.insert().values(**values).returning(targets.c.id))
            tid = int(target_id.scalar_one())
            result.created += 1
        else:
            tid = int(existing.id)
            if secret is not None:
                values.update(secret)
            conn.execute(
                update(targets).where(targets.c.id == tid).values(**values, updated_at=func.now())
            )
            result.updated += 1
        _sync_modes(conn, tid, entry.modes, prune=prune)
    if prune:
        names = [t.name for t in doc.targets]
        res = conn.execute(delete(targets).where(targets.c.name.not_in(names)))
        result.removed = res.rowcount or 0
    return result


def _sync_modes(conn: Connection, target_id: int, entries: list[ModeEntry], *, prune: bool) -> None:
    for m in entries:
        stmt = insert(modes).values(
            target_id=target_id,
            name=m.name,
            kind=m.kind,
            transport=m.transport,
            params=m.params,
            enabled=m.enabled,
        )
        upsert = stmt.on_conflict_do_update(
            constraint="uq_modes_target_name",
            set_={
                "kind": stmt.excluded.kind,
                "transport": stmt.excluded.transport,
                "params": stmt.excluded.params,
                "enabled": stmt.excluded.enabled,
            },
        ).returning(modes.c.id)
        mode_id = int(conn.execute(upsert).scalar_one())
        for p in m.probes:
            assert p.timeout is not None
            s = insert(series).values(
                mode_id=mode_id,
                probe=p.probe,
                interval_ms=p.interval,
                timeout_ms=p.timeout,
                params=p.params,
                enabled=p.enabled,
                site=p.site,
            )
            s = s.on_conflict_do_update(
                constraint="uq_series_mode_probe_site",
                set_={
                    "interval_ms": s.excluded.interval_ms,
                    "timeout_ms": s.excluded.timeout_ms,
                    "params": s.excluded.params,
                    "enabled": s.excluded.enabled,
                    "updated_at": func.now(),
                },
            )
            conn.execute(s)
        if prune:
            keep = [(p.probe, p.site) for p in m.probes]
            rows = conn.execute(
                select(series.c.id, series.c.probe, series.c.site).where(
                    series.c.mode_id == mode_id
                )
            ).all()
            drop = [r.id for r in rows if (r.probe, r.site) not in keep]
            if drop:
                conn.execute(delete(series).where(series.c.id.in_(drop)))
    if prune:
        conn.execute(
            delete(modes).where(
                modes.c.target_id == target_id, modes.c.name.not_in([m.name for m in entries])
            )
        )


def export_targets(conn: Connection, *, include_secrets: bool = True) -> dict[str, Any]:
    """The stored targets as a document that :func:`import_targets` reads back unchanged.

    Passwords are exported only as references or as the Fernet token (usable only with
    this installation's key); never in plain text. ``include_secrets=False`` omits them.
    """
    out: list[dict[str, Any]] = []
    trows = conn.execute(select(targets).order_by(targets.c.name)).mappings().all()
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
