"""Targets as code: the YAML schema, its validation, and import / export / list.

The file format (``targets.example.yaml`` shows every field)::

    targets:
      - name: sales-prod            # unique
        kind: oracle                # oracle | postgres
        dsn: dbhost:1521/SALES      # Easy Connect (no :mode suffix) or a tnsnames alias
        username: connwatch
        password: env:SALES_PW      # env:NAME | file:PATH | a literal (encrypted on import)
        modes:
          - name: pooled            # kind defaults to the name
            params: {cclass: CONNWATCH, purity: self}
            probes:
              - {probe: connping, interval: 10s, timeout: 5s}

Import is an upsert by name (targets), by name within a target (modes) and by
(probe, site) within a mode (series); ``prune`` also removes what the file does
not name. Everything is validated before anything is written, and the whole import
is one transaction.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.engine import Connection

from app.credentials import Vault, is_reference
from app.models import ORACLE_MODES, POSTGRES_MODES, modes, series, targets
from app.probe_params import ParamError, connection_param_errors, probe_params

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, None: 1000}
_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,62}$"


def parse_duration_ms(value: Any) -> int:
    """``10s`` / ``500ms`` / ``1m`` / ``1h`` / a number of seconds -> milliseconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 10s, 500ms or 1m")
    if isinstance(value, int | float):
        return round(value * 1000)
    if isinstance(value, str):
        m = _DURATION.match(value)
        if m:
            return round(float(m.group(1)) * _UNIT_MS[m.group(2)])
    raise ValueError("expected a duration such as 10s, 500ms or 1m")


def format_duration_ms(ms: int) -> str:
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


Duration = Annotated[int, BeforeValidator(parse_duration_ms)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class ProbeEntry(_Strict):
    probe: Literal["connping", "sessionping", "poolacquire", "commit", "sweep"]
    interval: Duration = Field(default=10_000, ge=100)
    timeout: Duration | None = Field(default=None, gt=0)
    site: str = Field(default="default", pattern=_NAME)
    enabled: bool = True
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _timeout_within_interval(self) -> ProbeEntry:
        if self.timeout is None:
            self.timeout = min(self.interval, 5_000)
        if self.timeout > self.interval:
            raise ValueError(
                f"timeout ({format_duration_ms(self.timeout)}) must not exceed interval "
                f"({format_duration_ms(self.interval)}): runs of a series never overlap"
            )
        try:
            probe_params(self.probe, self.params)
        except ParamError as exc:
            raise ValueError(f"params: {exc}") from None
        return self


class ModeEntry(_Strict):
    name: str = Field(pattern=_NAME)
    kind: str | None = None
    transport: Literal["tcp", "tcps", "ipc", "unix"] = "tcp"
    enabled: bool = True
    params: dict[str, Any] = Field(default_factory=dict)
    probes: list[ProbeEntry] = Field(
        default_factory=lambda: [ProbeEntry(probe="connping", interval=10_000)]
    )

    @model_validator(mode="after")
    def _kind_defaults_to_name(self) -> ModeEntry:
        if self.kind is None:
            self.kind = self.name
        seen: set[tuple[str, str]] = set()
        for i, p in enumerate(self.probes):
            key = (p.probe, p.site)
            if key in seen:
                raise ValueError(f"probes[{i}]: probe {p.probe!r} at site {p.site!r} listed twice")
            seen.add(key)
        return self


class TargetEntry(_Strict):
    name: str = Field(pattern=_NAME)
    kind: Literal["oracle", "postgres"]
    dsn: str = Field(min_length=1)
    username: str = Field(min_length=1)
    password: str | None = None
    password_encrypted: str | None = None
    description: str = ""
    enabled: bool = True
    labels: dict[str, str] = Field(default_factory=dict)
    params: dict[str, Any] = Field(default_factory=dict)
    modes: list[ModeEntry] = Field(min_length=1)

    @field_validator("dsn")
    @classmethod
    def _no_credentials_in_dsn(cls, v: str) -> str:
        if re.search(r"[^/@\s]+/[^@\s]+@", v) or re.search(r"://[^/@\s]+:[^@\s]*@", v):
            raise ValueError("the dsn must not contain credentials: use username and password")
        return v

    @model_validator(mode="after")
    def _check(self) -> TargetEntry:
        if self.password is not None and self.password_encrypted is not None:
            raise ValueError("give either password or password_encrypted, not both")
        allowed = ORACLE_MODES if self.kind == "oracle" else POSTGRES_MODES
        names: set[str] = set()
        for i, m in enumerate(self.modes):
            if m.kind not in allowed:
                raise ValueError(
                    f"modes[{i}].kind: {m.kind!r} is not {'an' if self.kind == 'oracle' else 'a'} "
                    f"{self.kind} mode "
                    f"(one of {', '.join(allowed)})"
                )
            if m.name in names:
                raise ValueError(f"modes[{i}].name: mode {m.name!r} listed twice")
            names.add(m.name)
        for where, params in [("params", self.params)] + [
            (f"modes[{i}].params", m.params) for i, m in enumerate(self.modes)
        ]:
            errors = connection_param_errors(self.kind, params, parse_duration_ms)
            if errors:
                raise ValueError(f"{where}: {'; '.join(errors)}")
        return self


class TargetsFile(_Strict):
    targets: list[TargetEntry] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_names(self) -> TargetsFile:
        seen: set[str] = set()
        for i, t in enumerate(self.targets):
            if t.name in seen:
                raise ValueError(f"targets[{i}].name: target {t.name!r} listed twice")
            seen.add(t.name)
        return self


class TargetsFileError(ValueError):
    """A targets file is unusable; ``errors`` are ready-to-print lines naming file/entry/field."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


def _entry_label(raw: Any, index: int) -> str:
    name = None
    if isinstance(raw, dict):
        targets_list = raw.get("targets")
        if isinstance(targets_list, list) and index < len(targets_list):
            item = targets_list[index]
            if isinstance(item, dict):
                name = item.get("name")
    return f"target #{index + 1}" + (f" {name!r}" if name else "")


def _format_loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_MSG_PATH = re.compile(r"^([A-Za-z_]+(?:\[\d+\])?(?:\.[A-Za-z_]+(?:\[\d+\])?)*): (.*)$", re.S)


def _split_path(path: str) -> tuple[int | str, ...]:
    out: list[int | str] = []
    for part in re.findall(r"[A-Za-z_]+|\[\d+\]", path):
        out.append(int(part[1:-1]) if part.startswith("[") else part)
    return tuple(out)


def parse_targets(text: str, source: str) -> TargetsFile:
    """Parse and validate a targets document; raise :class:`TargetsFileError` on any problem."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise TargetsFileError([f"{source}{where}: not valid YAML: {problem}"]) from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise TargetsFileError([f"{source}: expected a mapping with a 'targets' list at the top"])
    try:
        return TargetsFile.model_validate(raw)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            msg = err["msg"].removeprefix("Value error, ")
            loc = tuple(err["loc"])
            # model-level checks name their own field path ("modes[0].kind: ..."): merge it
            m = _MSG_PATH.match(msg)
            if m:
                loc += _split_path(m.group(1))
                msg = m.group(2)
            if len(loc) >= 2 and loc[0] == "targets" and isinstance(loc[1], int):
                field = _format_loc(loc[2:]) or "(entry)"
                lines.append(f"{source}: {_entry_label(raw, loc[1])}: {field}: {msg}")
            else:
                lines.append(f"{source}: {_format_loc(loc) or '(top)'}: {msg}")
        raise TargetsFileError(lines) from None


def load_targets_file(path: Path) -> TargetsFile:
    try:
        text = path.read_text()
    except OSError as exc:
        raise TargetsFileError([f"{path}: cannot read: {exc.strerror}"]) from None
    return parse_targets(text, str(path))


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
