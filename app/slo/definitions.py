"""SLO definitions: what counts as a good run, for which series, over which window.

An SLO says "``objective`` % of the runs of the selected series succeed (and, with
``threshold_ms``, take at most that long in ``phase``) over ``window_days``", e.g.
``{name: logons-fast, selector: {targets: [sales-*], probe: connping}, objective: 99.5,
phase: logon, threshold_ms: 200, window_days: 30}``. It is measured per target x mode
(each mode has its own error budget) and in total. Skipped runs (the monitor could not
start them) and probe-side failures (:data:`app.slo.compute.NOT_THE_DATABASE`) never count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection

from app.slo.tables import slos
from app.store.layout import PHASES
from app.targets.selector import Selector

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class SloSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    name: str
    description: str = ""
    selector: Selector = Field(default_factory=Selector)
    objective: float = Field(gt=0, lt=100)
    phase: str = "logon"
    threshold_ms: float | None = Field(default=None, gt=0, le=3_600_000)
    window_days: int = Field(default=30, ge=1, le=400)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError("use 1-64 letters, digits, '.', '_' or '-', starting alphanumeric")
        return v

    @field_validator("phase")
    @classmethod
    def _phase(cls, v: str) -> str:
        if v not in PHASES:
            raise ValueError(f"{v!r} is not one of {', '.join(PHASES)}")
        return v

    def good_means(self) -> str:
        """In words: 'logon succeeded within 200 ms' / 'run succeeded'."""
        if self.threshold_ms is None:
            return "the run succeeded"
        return f"the run succeeded with {self.phase} within {self.threshold_ms:g} ms"

    def describe(self) -> str:
        return (
            f"{self.objective:g} % of runs of {self.selector.describe()}: {self.good_means()}, "
            f"over {self.window_days} days"
        )


@dataclass(frozen=True, slots=True)
class Slo:
    id: int
    spec: SloSpec


def _row_to_slo(r: Any) -> Slo:
    spec = SloSpec(
        name=r.name,
        description=r.description,
        selector=Selector.model_validate(r.selector),
        objective=r.objective,
        phase=r.phase,
        threshold_ms=r.threshold_ms,
        window_days=r.window_days,
    )
    return Slo(r.id, spec)


def list_slos(conn: Connection) -> list[Slo]:
    return [_row_to_slo(r) for r in conn.execute(slos.select().order_by(slos.c.name)).all()]


def get_slo(conn: Connection, name: str) -> Slo | None:
    r = conn.execute(slos.select().where(slos.c.name == name)).first()
    return None if r is None else _row_to_slo(r)


def upsert_slo(conn: Connection, spec: SloSpec) -> tuple[int, bool]:
    """Create or update by name; return (id, created)."""
    values = {
        "description": spec.description,
        "selector": spec.selector.doc(),
        "objective": spec.objective,
        "phase": spec.phase,
        "threshold_ms": spec.threshold_ms,
        "window_days": spec.window_days,
    }
    existing = conn.execute(select(slos.c.id).where(slos.c.name == spec.name)).scalar_one_or_none()
    if existing is not None:
        conn.execute(
            update(slos).where(slos.c.id == existing).values(**values, updated_at=func.now())
        )
        return int(existing), False
    new = conn.execute(slos.insert().values(name=spec.name, **values).returning(slos.c.id))
    return int(new.scalar_one()), True


def delete_slo(conn: Connection, name: str) -> bool:
    return conn.execute(slos.delete().where(slos.c.name == name)).rowcount > 0


def export_spec(spec: SloSpec) -> dict[str, Any]:
    doc = spec.model_dump(exclude_defaults=True, exclude={"selector"})
    doc["name"] = spec.name
    doc["objective"] = spec.objective
    sel = spec.selector.doc()
    if sel:
        doc["selector"] = sel
    return doc
