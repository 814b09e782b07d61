"""Contact points: named destinations, validated once (web form, API, YAML alike).

| channel | settings | secret |
|---|---|---|
| ``webhook`` | ``url`` (http/https) | optional HMAC key signing every body |
| ``slack`` | ``channel``, ``username`` (optional) | the incoming-webhook URL (it holds a token) |
| ``email`` | ``to``: recipients | none (the SMTP password is a setting) |
| ``alertmanager`` | ``url`` (base URL), ``username`` (optional) | basic-auth password |

A secret follows the rules of target passwords (app/secrets/): a literal is
encrypted with the installation's Fernet key before it is stored; ``env:NAME`` /
``file:PATH`` references are stored as they are and resolved only when sending. No
secret is ever returned: views say ``encrypted``, ``reference`` or ``none``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection

from app.notify.addresses import AddressError, check_addresses
from app.notify.channels.base import Destination
from app.notify.tables import contact_points
from app.secrets import Vault, is_reference
from app.secrets.references import resolve_reference

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
Channel = Literal["webhook", "slack", "email", "alertmanager"]


def check_url(value: str, where: str) -> str:
    v = value.strip()
    if not re.match(r"^https?://[^\s/?#]+", v):
        raise ValueError(f"{where}: must be an http:// or https:// URL")
    if re.match(r"^https?://[^/]*@", v):
        raise ValueError(f"{where}: credentials in the URL are not allowed (use username/secret)")
    return v


class ContactPointSpec(BaseModel):
    """One contact point as typed (YAML entry, form, API body)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    name: str
    channel: Channel
    description: str = ""
    enabled: bool = True
    url: str | None = None  # webhook, alertmanager
    to: list[str] | None = None  # email
    slack_channel: str | None = Field(default=None, alias="channel_name")
    username: str | None = None  # slack display name, alertmanager basic-auth user
    secret: str | None = Field(default=None, repr=False)  # literal or env:/file: reference
    secret_encrypted: str | None = Field(default=None, repr=False)  # a Fernet token (export)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError("use 1-64 letters, digits, '.', '_' or '-', starting alphanumeric")
        return v

    @model_validator(mode="after")
    def _per_channel(self) -> ContactPointSpec:
        if self.secret is not None and self.secret_encrypted is not None:
            raise ValueError("give either secret or secret_encrypted, not both")
        if self.channel in ("webhook", "alertmanager"):
            if not self.url:
                raise ValueError(f"url: a {self.channel} contact point needs a url")
            self.url = check_url(self.url, "url")
        elif self.url:
            raise ValueError(f"url: not used by {self.channel} (slack: the URL is the secret)")
        if self.channel == "email":
            try:
                self.to = check_addresses(self.to or [], where="to")
            except AddressError as exc:
                raise ValueError(str(exc)) from None
        elif self.to:
            raise ValueError(f"to: only e-mail contact points have recipients, not {self.channel}")
        if self.channel == "slack" and self.secret and not is_reference(self.secret):
            self.secret = check_url(self.secret, "secret (the Slack webhook URL)")
        if self.channel == "email" and (self.secret or self.secret_encrypted):
            raise ValueError("secret: e-mail uses the SMTP settings' password, not a secret")
        return self

    def settings_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {}
        if self.url:
            doc["url"] = self.url
        if self.to:
            doc["to"] = self.to
        if self.slack_channel:
            doc["channel"] = self.slack_channel
        if self.username:
            doc["username"] = self.username
        return doc


@dataclass(frozen=True, slots=True)
class ContactPoint:
    """A stored contact point, safe to show: the secret is only described."""

    id: int
    name: str
    channel: str
    description: str
    enabled: bool
    settings: dict[str, Any]
    secret: str  # "encrypted", "reference" or "none"
    secret_ref: str | None  # the reference itself (not a secret), when one is stored

    def where(self) -> str:
        """Where messages go, in words (no secret)."""
        if self.channel == "email":
            return ", ".join(self.settings.get("to", []))
        if self.channel == "slack":
            return "Slack webhook" + (
                f" #{self.settings['channel']}" if "channel" in self.settings else ""
            )
        return str(self.settings.get("url", ""))


class ContactPointError(ValueError):
    """Bad contact point input or an unknown name; the text says which."""


def _view(row: Any) -> ContactPoint:
    kind = "encrypted" if row.secret_enc else ("reference" if row.secret_ref else "none")
    return ContactPoint(
        row.id,
        row.name,
        row.channel,
        row.description,
        row.enabled,
        dict(row.settings),
        kind,
        row.secret_ref,
    )


def list_contact_points(conn: Connection) -> list[ContactPoint]:
    rows = conn.execute(contact_points.select().order_by(contact_points.c.name)).all()
    return [_view(r) for r in rows]


def get_contact_point(conn: Connection, name: str) -> ContactPoint | None:
    row = conn.execute(contact_points.select().where(contact_points.c.name == name)).first()
    return None if row is None else _view(row)


def ids_by_name(conn: Connection, names: list[str]) -> dict[str, int]:
    rows = conn.execute(
        select(contact_points.c.name, contact_points.c.id).where(contact_points.c.name.in_(names))
    ).all()
    return {str(n): int(i) for n, i in rows}


def upsert_contact_point(
    conn: Connection, spec: ContactPointSpec, vault: Vault
) -> tuple[int, bool]:
    """Create or update by name; return (id, created). No secret given keeps the stored one."""
    values: dict[str, Any] = {
        "channel": spec.channel,
        "settings": spec.settings_doc(),
        "description": spec.description,
        "enabled": spec.enabled,
    }
    if spec.secret is not None:
        if is_reference(spec.secret):
            values.update(secret_ref=spec.secret, secret_enc=None)
        elif spec.secret:
            values.update(secret_enc=vault.encrypt(spec.secret), secret_ref=None)
        else:
            values.update(secret_enc=None, secret_ref=None)
    elif spec.secret_encrypted is not None:
        vault.decrypt(spec.secret_encrypted)  # refuse a token this key cannot read
        values.update(secret_enc=spec.secret_encrypted, secret_ref=None)
    existing = conn.execute(
        select(contact_points.c.id).where(contact_points.c.name == spec.name)
    ).scalar_one_or_none()
    if existing is not None:
        conn.execute(
            update(contact_points)
            .where(contact_points.c.id == existing)
            .values(**values, updated_at=func.now())
        )
        return int(existing), False
    new_id = conn.execute(
        contact_points.insert().values(name=spec.name, **values).returning(contact_points.c.id)
    ).scalar_one()
    return int(new_id), True


def delete_contact_point(conn: Connection, name: str) -> bool:
    from app.notify.outbox import cancel_for_contact_point

    cp = get_contact_point(conn, name)
    if cp is None:
        return False
    cancel_for_contact_point(conn, cp.id)
    conn.execute(contact_points.delete().where(contact_points.c.id == cp.id))
    return True


def destination(conn: Connection, contact_point_id: int, vault: Vault | None) -> Destination:
    """The contact point with its secret resolved, for one send (never stored or shown)."""
    row = conn.execute(
        contact_points.select().where(contact_points.c.id == contact_point_id)
    ).first()
    if row is None:
        raise ContactPointError(f"contact point {contact_point_id} no longer exists")
    secret: str | None = None
    if row.secret_enc is not None:
        if vault is None:
            raise ContactPointError(f"contact point {row.name}: no key to decrypt its secret")
        secret = vault.decrypt(row.secret_enc)
    elif row.secret_ref is not None:
        secret = resolve_reference(row.secret_ref)
    return Destination(row.name, dict(row.settings), secret)


def export_spec(cp: ContactPoint, conn: Connection, *, include_secrets: bool) -> dict[str, Any]:
    """The YAML entry of a stored contact point (tokens and references only, never plain)."""
    doc: dict[str, Any] = {"name": cp.name, "channel": cp.channel}
    if cp.description:
        doc["description"] = cp.description
    if not cp.enabled:
        doc["enabled"] = False
    s = cp.settings
    for key in ("url", "to", "username"):
        if key in s:
            doc[key] = s[key]
    if "channel" in s:
        doc["channel_name"] = s["channel"]
    if include_secrets:
        row = conn.execute(
            select(contact_points.c.secret_enc, contact_points.c.secret_ref).where(
                contact_points.c.id == cp.id
            )
        ).one()
        if row.secret_ref:
            doc["secret"] = row.secret_ref
        elif row.secret_enc:
            doc["secret_encrypted"] = row.secret_enc
    return doc
