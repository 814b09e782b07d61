"""The add / edit target form: form fields -> the targets-as-code schema -> the store.

The form is validated with the same pydantic models as YAML imports
(:mod:`app.targets`), so a target added in the browser obeys exactly the rules of
one added from a file. Errors come back as ``{field name: message}`` for the page.

Passwords: the form's password box is write-only. A typed password is encrypted
with the vault before it reaches the database; an empty box keeps the stored one.
A reference (``env:NAME`` / ``file:PATH``) is not a secret and may be shown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import ValidationError
from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection

from app.models import ORACLE_MODES, POSTGRES_MODES, targets
from app.secrets import SecretError, Vault, is_reference
from app.targets import safeyaml
from app.targets.durations import format_duration_ms
from app.targets.policy import PolicyError, WritePolicy
from app.targets.schema import TargetEntry, TargetsFile
from app.targets.sync import import_targets
from app.web.views.lookups import TargetInfo

DEFAULT_PORT_HINT = {
    "oracle": "dbhost:1521/SERVICE",
    "postgres": "host=dbhost port=5432 dbname=app",
}


@dataclass(slots=True)
class ModeRow:
    index: int
    name: str
    kind: str
    on: bool
    interval: str
    timeout: str
    transport: str
    params: str


@dataclass(slots=True)
class TargetForm:
    """What the form shows (never a password)."""

    name: str = ""
    kind: str = "oracle"
    dsn: str = ""
    username: str = ""
    password_ref: str = ""
    has_password: bool = False
    description: str = ""
    enabled: bool = True
    modes: list[ModeRow] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    existing: bool = False


def mode_kinds(kind: str) -> tuple[str, ...]:
    return ORACLE_MODES if kind == "oracle" else POSTGRES_MODES


def _params_text(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True) if params else ""


def blank_form(kind: str = "oracle") -> TargetForm:
    form = TargetForm(kind=kind)
    form.modes = _default_rows(kind, start=0, taken=set())
    return form


def _default_rows(kind: str, *, start: int, taken: set[str]) -> list[ModeRow]:
    rows: list[ModeRow] = []
    for k in mode_kinds(kind):
        if k in taken:
            continue
        rows.append(ModeRow(start + len(rows), k, k, not taken, "10s", "5s", "tcp", ""))
    return rows


def form_from_target(t: TargetInfo) -> TargetForm:
    form = TargetForm(
        name=t.name,
        kind=t.kind,
        dsn=t.dsn,
        username=t.username,
        password_ref=t.password_ref or "",
        has_password=t.has_password,
        description=t.description,
        enabled=t.enabled,
        existing=True,
    )
    for i, m in enumerate(t.modes):
        cp = next((s for s in m.series if s.probe == "connping" and s.site == "default"), None)
        form.modes.append(
            ModeRow(
                i,
                m.name,
                m.kind,
                m.enabled,
                format_duration_ms(cp.interval_ms) if cp else "10s",
                format_duration_ms(cp.timeout_ms) if cp else "5s",
                m.transport,
                _params_text(m.params),
            )
        )
    form.modes += _default_rows(t.kind, start=len(form.modes), taken={m.name for m in t.modes})
    return form


def _parse_params(text: str, where: str, errors: dict[str, str]) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        value = safeyaml.load(text, safeyaml.FIELD_LIMITS)  # limits before any expansion
    except safeyaml.YamlLimitError as exc:
        errors[where] = f"refused: {exc}"
        return {}
    except yaml.YAMLError:
        errors[where] = 'not valid JSON or YAML: write a mapping such as {"cclass": "APP"}'
        return {}
    if not isinstance(value, dict):
        errors[where] = 'must be a mapping such as {"cclass": "APP"}'
        return {}
    return value


def read_form(
    data: dict[str, str], *, existing: TargetInfo | None
) -> tuple[TargetForm, dict[str, Any]]:
    """Parse posted fields; return the form to redisplay and the document to validate."""
    form = TargetForm(
        name=existing.name if existing else data.get("name", "").strip(),
        kind=existing.kind if existing else data.get("kind", "oracle").strip(),
        dsn=data.get("dsn", "").strip(),
        username=data.get("username", "").strip(),
        password_ref=data.get("password_ref", "").strip(),
        has_password=existing.has_password if existing else False,
        description=data.get("description", "").strip(),
        enabled=data.get("enabled") == "on",
        existing=existing is not None,
    )
    indexes = sorted(
        {int(k.split("-")[1]) for k in data if k.startswith("mode-") and k.split("-")[1].isdigit()}
    )
    doc_modes: list[dict[str, Any]] = []
    for i in indexes:
        row = ModeRow(
            index=i,
            name=data.get(f"mode-{i}-name", "").strip(),
            kind=data.get(f"mode-{i}-kind", "").strip(),
            on=data.get(f"mode-{i}-on") == "on",
            interval=data.get(f"mode-{i}-interval", "10s").strip(),
            timeout=data.get(f"mode-{i}-timeout", "5s").strip(),
            transport=data.get(f"mode-{i}-transport", "tcp").strip() or "tcp",
            params=data.get(f"mode-{i}-params", ""),
        )
        form.modes.append(row)
        known = existing is not None and existing.mode(row.name) is not None
        if not row.on and not known:
            continue  # an unticked new mode is simply not created
        params = _parse_params(row.params, f"mode-{i}-params", form.errors)
        doc_modes.append(
            {
                "name": row.name,
                "kind": row.kind,
                "transport": row.transport,
                "enabled": row.on,
                "params": params,
                "probes": [{"probe": "connping", "interval": row.interval, "timeout": row.timeout}],
            }
        )
    doc: dict[str, Any] = {
        "name": form.name,
        "kind": form.kind,
        "dsn": form.dsn,
        "username": form.username,
        "description": form.description,
        "enabled": form.enabled,
        "modes": doc_modes,
    }
    password = data.get("password", "")
    if password and form.password_ref:
        form.errors["password"] = "give either a password or a reference, not both"
    elif password:
        if is_reference(password):
            form.errors["password"] = "a reference (env:/file:) goes in the reference box"
        doc["password"] = password
    elif form.password_ref:
        if not is_reference(form.password_ref):
            form.errors["password_ref"] = "a reference is env:NAME or file:PATH"
        doc["password"] = form.password_ref
    if not doc_modes and "modes" not in form.errors:
        form.errors["modes"] = "tick at least one mode to monitor"
    return form, doc


def _field_for(
    loc: tuple[int | str, ...], doc_modes: list[dict[str, Any]], rows: list[ModeRow]
) -> str:
    if not loc:
        return "form"
    if loc[0] == "modes" and len(loc) >= 2 and isinstance(loc[1], int):
        name = doc_modes[loc[1]]["name"] if loc[1] < len(doc_modes) else ""
        row = next((r for r in rows if r.name == name), None)
        idx = row.index if row else loc[1]
        rest = [str(p) for p in loc[2:] if not isinstance(p, int)]
        if rest[:1] == ["probes"]:
            rest = rest[1:]
        key = rest[0] if rest else "name"
        return f"mode-{idx}-{key}"
    return str(loc[0])


def validate(form: TargetForm, doc: dict[str, Any]) -> TargetEntry | None:
    """The validated entry, or None with ``form.errors`` filled (field -> message)."""
    try:
        entry = TargetEntry.model_validate(doc)
    except ValidationError as exc:
        for err in exc.errors():
            msg = str(err["msg"]).removeprefix("Value error, ")
            loc = tuple(err["loc"])
            # model-level checks say which mode in the message: "modes[1].kind: ..."
            if msg.startswith("modes[") and ": " in msg:
                path, msg = msg.split(": ", 1)
                i = int(path[6 : path.index("]")])
                rest = path[path.index("]") + 2 :] if "." in path else ""
                loc = ("modes", i, *([rest] if rest else []))
            key = _field_for(loc, doc["modes"], form.modes)
            form.errors.setdefault(key, msg)
        return None
    return None if form.errors else entry


def save(conn: Connection, entry: TargetEntry, vault: Vault, policy: WritePolicy) -> None:
    """Upsert the target, its modes and their connping series (caller commits); what the
    writer may store is ``policy``'s (an operator may not set references or file paths, a
    changed endpoint needs the password again). Refusals raise ValueError (one line)."""
    try:
        import_targets(conn, TargetsFile(targets=[entry]), vault, policy=policy)
    except PolicyError as exc:
        raise ValueError(f"{exc.field}: {exc.message}") from None
    except SecretError as exc:
        raise ValueError(str(exc)) from None


def name_taken(conn: Connection, name: str) -> bool:
    return conn.execute(select(targets.c.id).where(targets.c.name == name)).first() is not None


def set_enabled(conn: Connection, name: str, enabled: bool) -> bool:
    res = conn.execute(update(targets).where(targets.c.name == name).values(enabled=enabled))
    return bool(res.rowcount)


def delete_target(conn: Connection, name: str) -> bool:
    """Remove a target with its modes and series (as ``targets import --prune`` does);
    its samples and rollups stay in the store until retention drops them."""
    res = conn.execute(delete(targets).where(targets.c.name == name))
    return bool(res.rowcount)
