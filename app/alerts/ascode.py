"""Alerting as code: rules, contact points, SLOs, maintenance windows and silences in one
YAML file next to the targets file, imported all or nothing, exported so that it imports
back unchanged.

```yaml
contact_points:
  - {name: oncall-hook, channel: webhook, url: https://hooks.example/cw, secret: env:HOOK_KEY}
slos:
  - {name: sales-logons, selector: {targets: [sales-*]}, objective: 99.5, threshold_ms: 200}
rules:
  - {name: sales-logon-slow, kind: latency, threshold_ms: 200, contact_points: [oncall-hook]}
maintenance_windows:
  - {name: sunday-patching, schedule: {weekly: {days: [sun], at: "02:00"}}, duration: 2h,
     timezone: Europe/Paris}
silences:
  - {starts_at: 2026-12-01T00:00:00Z, ends_at: 2026-12-02T00:00:00Z, author: ann,
     comment: migration, selector: {targets: [hr]}}
```

Errors name the file, the entry and the field, e.g. ``alerts.yaml: rule #2
'sales-logon-slow': threshold_ms: a latency rule needs threshold_ms``; every error of the
file is reported and nothing is written unless the whole file is valid. Rules' contact
points and SLOs must exist in the file or in the store. Import is an upsert by name (a
silence, which has no name, is added unless an identical one exists); ``prune`` also
deletes named objects the file does not list.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.alerts.mute.maintenance import WindowSpec, delete_window, list_windows, upsert_window
from app.alerts.mute.silences import SilenceSpec, create_silence, list_silences
from app.alerts.rules import RuleSpec, delete_rule, list_rules, upsert_rule
from app.notify.contacts import (
    ContactPointSpec,
    delete_contact_point,
    export_spec,
    list_contact_points,
    upsert_contact_point,
)
from app.secrets import Vault
from app.slo.definitions import (
    SloSpec,
    delete_slo,
    list_slos,
    upsert_slo,
)
from app.slo.definitions import (
    export_spec as export_slo,
)

SECTIONS: dict[str, tuple[str, type[BaseModel]]] = {
    "contact_points": ("contact point", ContactPointSpec),
    "slos": ("SLO", SloSpec),
    "rules": ("rule", RuleSpec),
    "maintenance_windows": ("maintenance window", WindowSpec),
    "silences": ("silence", SilenceSpec),
}


class AlertsFileError(ValueError):
    """An alerts file is unusable; ``errors`` are ready-to-print lines (file, entry, field)."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


@dataclass(slots=True)
class AlertsDoc:
    contact_points: list[ContactPointSpec]
    slos: list[SloSpec]
    rules: list[RuleSpec]
    maintenance_windows: list[WindowSpec]
    silences: list[SilenceSpec]


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def parse_alerts(raw_text: str, source: str) -> AlertsDoc:
    try:
        raw = yaml.safe_load(raw_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        raise AlertsFileError(
            [f"{source}{where}: not valid YAML: {getattr(exc, 'problem', exc)}"]
        ) from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise AlertsFileError([f"{source}: expected a mapping with {', '.join(SECTIONS)}"])
    errors: list[str] = []
    unknown = sorted(set(raw) - set(SECTIONS))
    if unknown:
        errors.append(
            f"{source}: unknown section(s) {', '.join(map(str, unknown))} "
            f"(expected {', '.join(SECTIONS)})"
        )
    parsed: dict[str, list[Any]] = {}
    for section, (what, model) in SECTIONS.items():
        entries = raw.get(section) or []
        if not isinstance(entries, list):
            errors.append(f"{source}: {section}: expected a list")
            continue
        parsed[section] = []
        names: set[str] = set()
        for i, entry in enumerate(entries):
            label = f"{what} #{i + 1}"
            if isinstance(entry, dict) and entry.get("name"):
                label += f" {entry['name']!r}"
            try:
                item = model.model_validate(entry)
            except ValidationError as exc:
                for err in exc.errors():
                    loc = _loc(tuple(p for p in err["loc"] if p != "__root__"))
                    msg = str(err["msg"]).removeprefix("Value error, ")
                    errors.append(f"{source}: {label}: {loc + ': ' if loc else ''}{msg}")
                continue
            name = getattr(item, "name", None)
            if name is not None:
                if name in names:
                    errors.append(f"{source}: {label}: name: {what} {name!r} listed twice")
                names.add(name)
            parsed[section].append(item)
    if errors:
        raise AlertsFileError(errors)
    return AlertsDoc(**parsed)


def parse_entry(section: str, raw_text: str, source: str = "form") -> Any:
    """One entry of ``section`` typed as YAML (the web editors); AlertsFileError lists
    every problem like a file import does."""
    what, model = SECTIONS[section]
    try:
        raw = yaml.safe_load(raw_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise AlertsFileError(
            [f"{source}:{where} not valid YAML: {getattr(exc, 'problem', exc)}"]
        ) from None
    if not isinstance(raw, dict):
        raise AlertsFileError(
            [f"{source}: expected one {what} as a mapping (name: ..., kind: ...)"]
        )
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        errors = []
        for err in exc.errors():
            loc = _loc(tuple(p for p in err["loc"] if p != "__root__"))
            msg = str(err["msg"]).removeprefix("Value error, ")
            errors.append(f"{loc + ': ' if loc else ''}{msg}")
        raise AlertsFileError(errors) from None


def load_alerts_file(path: Path) -> AlertsDoc:
    try:
        raw_text = path.read_text()
    except OSError as exc:
        raise AlertsFileError([f"{path}: cannot read: {exc.strerror}"]) from None
    return parse_alerts(raw_text, str(path))


def check_references(conn: Connection, doc: AlertsDoc, source: str) -> None:
    """Rules' contact points and SLOs exist in the file or the store."""
    cps = {c.name for c in doc.contact_points} | {c.name for c in list_contact_points(conn)}
    slos = {s.name for s in doc.slos} | {s.spec.name for s in list_slos(conn)}
    errors = []
    for i, r in enumerate(doc.rules):
        for cp in r.contact_points:
            if cp not in cps:
                errors.append(
                    f"{source}: rule #{i + 1} {r.name!r}: contact_points: no contact point {cp!r}"
                )
        if r.slo is not None and r.slo not in slos:
            errors.append(f"{source}: rule #{i + 1} {r.name!r}: slo: no SLO {r.slo!r}")
    if errors:
        raise AlertsFileError(errors)


@dataclass(slots=True)
class ImportResult:
    created: int = 0
    updated: int = 0
    removed: int = 0


def import_alerts(
    conn: Connection,
    doc: AlertsDoc,
    vault: Vault,
    *,
    source: str,
    prune: bool = False,
    author: str | None = None,
) -> ImportResult:
    """Apply ``doc`` in the caller's transaction (validate first: nothing half-written)."""
    check_references(conn, doc, source)
    res = ImportResult()

    def count(created: bool) -> None:
        if created:
            res.created += 1
        else:
            res.updated += 1

    for cp in doc.contact_points:
        count(upsert_contact_point(conn, cp, vault)[1])
    for slo in doc.slos:
        count(upsert_slo(conn, slo)[1])
    for rule in doc.rules:
        count(upsert_rule(conn, rule, author=author)[1])
    for w in doc.maintenance_windows:
        count(upsert_window(conn, w)[1])
    for s in doc.silences:
        exists = conn.execute(
            text(
                "select 1 from alert_silences where starts_at = :a and ends_at = :b "
                "and comment = :c and author = :u"
            ),
            {"a": s.starts_at, "b": s.ends_at, "c": s.comment, "u": s.author},
        ).first()
        if exists is None:
            create_silence(conn, s)
            res.created += 1
    if prune:
        keep_rules = {r.name for r in doc.rules}
        for r in list_rules(conn):
            if r.spec.name not in keep_rules and delete_rule(conn, r.spec.name):
                res.removed += 1
        keep_w = {w.name for w in doc.maintenance_windows}
        for stored_w in list_windows(conn):
            if stored_w.spec.name not in keep_w and delete_window(conn, stored_w.spec.name):
                res.removed += 1
        keep_slo = {s.name for s in doc.slos}
        for stored_slo in list_slos(conn):
            if stored_slo.spec.name not in keep_slo and delete_slo(conn, stored_slo.spec.name):
                res.removed += 1
        keep_cp = {c.name for c in doc.contact_points}
        for stored_cp in list_contact_points(conn):
            if stored_cp.name not in keep_cp and delete_contact_point(conn, stored_cp.name):
                res.removed += 1
    return res


def export_alerts(conn: Connection, *, include_secrets: bool, now: Any) -> dict[str, Any]:
    """Everything as one YAML-ready document (secrets as tokens or references only)."""
    silences = [s for s in list_silences(conn, now=now) if s.state(now) != "expired"]
    return {
        "contact_points": [
            export_spec(c, conn, include_secrets=include_secrets) for c in list_contact_points(conn)
        ],
        "slos": [export_slo(s.spec) for s in list_slos(conn)],
        "rules": [r.spec.export() for r in list_rules(conn)],
        "maintenance_windows": [w.spec.export() for w in list_windows(conn)],
        "silences": [
            {
                **s.spec.model_dump(mode="json", exclude={"selector"}),
                **({"selector": s.spec.selector.doc()} if s.spec.selector.doc() else {}),
            }
            for s in silences
        ],
    }


def dump_yaml(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
