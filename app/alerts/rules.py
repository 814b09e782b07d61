"""Alert rules: one flat, validated spec per rule (YAML, form and API alike) and its storage.

Every rule has a ``kind``, a ``selector`` (app/targets/selector.py), ``per`` (one alert
instance per ``series``, ``mode`` or ``target``), ``pending`` (how long the condition must
hold before firing, Prometheus' ``for``) and a notification policy (``contact_points``,
``group_wait``, ``repeat_interval``, ``send_resolved``). Kind parameters:

- ``latency``: the ``percentile`` of ``phase`` over ``window`` > ``threshold_ms``; clears
  when it is < ``clear_ms`` (default the threshold) for ``clear_for``. ``phase`` is a
  timing (``logon``, ``ping``, ...) or one round trip of an Oracle logon
  (:data:`app.samples.LOGON_PHASE_ORDER`: ``auth2``, ``connect``, ...), read from the raw
  samples' ``logon_phases`` (kept there only: windows up to 2 days, latency rules only);
- ``availability``: ``m`` of the last ``n`` runs failed, or the error rate over ``window``
  >= ``error_rate_pct`` (only ``codes``/``classes`` when given); clears below ``m`` of
  ``n`` / under ``clear_rate_pct``;
- ``baseline``: the percentile over ``window`` >= ``ratio`` x the baseline (``weeks``: the
  median of the same hour of the previous ``weeks`` weeks; ``trailing``: the median of the
  minute percentiles over ``trailing``); clears under ``clear_ratio`` x;
- ``slo_burn``: a window pair of the SRE workbook burns the ``slo``'s budget too fast
  (1 h & 5 min > 14.4x, 6 h & 30 min > 6x, 3 d & 6 h > 1x); clears when none does;
- ``mode_compare``: ``mode`` slower than ``against`` by > ``slower_pct`` % and the
  bootstrap CI excludes no difference; clears under ``clear_pct``;
- ``nodata``: no sample for ``intervals`` intervals (at least 1 minute); clears on a sample;
- ``agent``: an agent's heartbeat older than ``after``; clears when it beats again.

``sites_required`` (latency, availability, nodata) makes a rule a quorum: per mode, the
condition is checked per site and fires only when that many sites (``all``: every site
the mode runs at) see it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection

from app.alerts.tables import alert_rules
from app.samples import LOGON_PHASE_ORDER
from app.store.layout import PHASES
from app.store.resolution import RAW_MAX_SPAN
from app.targets.durations import Duration, format_duration_ms
from app.targets.selector import Selector

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
CODE_RE = re.compile(r"^[A-Za-z0-9_*?-]{1,40}$")
Kind = Literal["latency", "availability", "baseline", "slo_burn", "mode_compare", "nodata", "agent"]
PERCENTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


class RuleSpec(BaseModel):
    """One rule as written in YAML (durations like ``5m``; stored as milliseconds)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    name: str
    kind: Kind
    enabled: bool = True
    severity: Literal["page", "ticket", "info"] = "page"
    description: str = ""
    selector: Selector = Field(default_factory=Selector)
    per: Literal["series", "mode", "target"] = "mode"
    pending: Duration = Field(default=0, ge=0, le=86_400_000)
    clear_for: Duration = Field(default=0, ge=0, le=86_400_000)
    sites_required: int | Literal["all"] | None = None
    # latency / baseline / mode_compare
    phase: str = "logon"
    percentile: Literal["p50", "p95", "p99"] = "p95"
    window: Duration = Field(default=300_000, ge=10_000, le=30 * 86_400_000)
    threshold_ms: float | None = Field(default=None, gt=0)
    clear_ms: float | None = Field(default=None, gt=0)
    min_samples: int = Field(default=3, ge=1, le=100_000)
    # availability
    m: int | None = Field(default=None, ge=1, le=1000)
    n: int | None = Field(default=None, ge=1, le=1000)
    error_rate_pct: float | None = Field(default=None, gt=0, le=100)
    clear_rate_pct: float | None = Field(default=None, ge=0, le=100)
    codes: list[str] = Field(default_factory=list)
    classes: list[str] = Field(default_factory=list)
    # baseline
    baseline: Literal["weeks", "trailing"] = "weeks"
    weeks: int = Field(default=4, ge=1, le=12)
    trailing: Duration = Field(default=86_400_000, ge=3_600_000, le=30 * 86_400_000)
    ratio: float | None = Field(default=None, gt=1)
    clear_ratio: float | None = Field(default=None, gt=0)
    # slo_burn
    slo: str | None = None
    # mode_compare
    mode: str | None = None
    against: str = "dedicated"
    slower_pct: float | None = Field(default=None, gt=0, le=10_000)
    clear_pct: float | None = Field(default=None, ge=0)
    # nodata / agent
    intervals: int = Field(default=3, ge=1, le=1000)
    after: Duration = Field(default=60_000, ge=5_000, le=86_400_000)
    # notifications
    contact_points: list[str] = Field(default_factory=list)
    group_wait: Duration = Field(default=30_000, ge=0, le=3_600_000)
    repeat_interval: Duration = Field(default=4 * 3_600_000, ge=60_000, le=7 * 86_400_000)
    send_resolved: bool = True

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError("use 1-64 letters, digits, '.', '_' or '-', starting alphanumeric")
        return v

    @field_validator("phase")
    @classmethod
    def _phase(cls, v: str) -> str:
        if v not in PHASES and v not in LOGON_PHASE_ORDER:
            raise ValueError(
                f"{v!r} is not one of {', '.join(PHASES)}, "
                f"or a logon round trip: {', '.join(LOGON_PHASE_ORDER)}"
            )
        return v

    @field_validator("codes", "classes")
    @classmethod
    def _codes(cls, v: list[str]) -> list[str]:
        for i, code in enumerate(v):
            if not CODE_RE.match(code):
                raise ValueError(f"[{i}] {code!r} is not an error code or pattern (ORA-125*)")
        return v

    @model_validator(mode="after")
    def _per_kind(self) -> RuleSpec:
        need = {
            "latency": ("threshold_ms",),
            "baseline": ("ratio",),
            "slo_burn": ("slo",),
            "mode_compare": ("mode", "slower_pct"),
        }.get(self.kind, ())
        for field in need:
            if getattr(self, field) is None:
                raise ValueError(f"{field}: a {self.kind} rule needs {field}")
        if self.kind == "availability":
            if (self.m is None) != (self.n is None):
                raise ValueError("m, n: give both (m of the last n runs failed)")
            if self.m is None and self.error_rate_pct is None:
                raise ValueError("availability: give m and n, or error_rate_pct")
            if self.m is not None and self.n is not None and self.m > self.n:
                raise ValueError(f"m: {self.m} failures cannot be more than the last n={self.n}")
        if (
            self.clear_ms is not None
            and self.threshold_ms is not None
            and self.clear_ms > self.threshold_ms
        ):
            raise ValueError("clear_ms: must not exceed threshold_ms (it is the lower edge)")
        if (
            self.clear_ratio is not None
            and self.ratio is not None
            and self.clear_ratio > self.ratio
        ):
            raise ValueError("clear_ratio: must not exceed ratio")
        if self.sites_required is not None:
            if self.kind not in ("latency", "availability", "nodata"):
                raise ValueError(f"sites_required: not available for {self.kind} rules")
            if self.sites_required != "all" and self.sites_required < 1:
                raise ValueError("sites_required: at least 1, or 'all'")
        if self.round_trip and self.kind != "latency":
            raise ValueError(
                f"phase: a logon round trip ({self.phase}) is kept on raw samples only; "
                "only latency rules can use it"
            )
        if self.round_trip and self.window > RAW_MAX_SPAN.total_seconds() * 1000:
            raise ValueError("window: at most 2d for a logon round trip (raw samples only)")
        if self.kind == "agent" and self.per != "mode":
            raise ValueError("per: agent rules have one instance per agent")
        return self

    # -- derived ----------------------------------------------------------------------
    @property
    def round_trip(self) -> bool:
        """``phase`` is one round trip of the logon (``auth2``), not a whole timing."""
        return self.phase in LOGON_PHASE_ORDER and self.phase not in PHASES

    @property
    def quantile(self) -> float:
        return PERCENTILES[self.percentile]

    @property
    def clear_threshold_ms(self) -> float | None:
        return self.clear_ms if self.clear_ms is not None else self.threshold_ms

    def condition_text(self) -> str:
        """The rule's condition in words, for pages and messages."""
        w = format_duration_ms(self.window)
        if self.kind == "latency":
            return f"{self.phase} {self.percentile} over {w} > {self.threshold_ms:g} ms"
        if self.kind == "availability":
            what = ", ".join(self.codes + self.classes) or "any error"
            if self.m is not None:
                return f"{self.m} of the last {self.n} runs failed ({what})"
            return f"error rate over {w} >= {self.error_rate_pct:g} % ({what})"
        if self.kind == "baseline":
            base = (
                f"same hour of the previous {self.weeks} weeks"
                if self.baseline == "weeks"
                else f"trailing {format_duration_ms(self.trailing)} median"
            )
            return f"{self.phase} {self.percentile} over {w} >= {self.ratio:g}x the {base}"
        if self.kind == "slo_burn":
            return f"SLO {self.slo} burning its error budget too fast"
        if self.kind == "mode_compare":
            return (
                f"{self.mode} {self.phase} slower than {self.against} by > {self.slower_pct:g} % "
                f"over {w} (clear difference)"
            )
        if self.kind == "nodata":
            return f"no sample for {self.intervals} intervals"
        return f"agent heartbeat older than {format_duration_ms(self.after)}"

    def export(self) -> dict[str, Any]:
        """The YAML entry (defaults left out, durations written as 5m / 30s)."""
        doc = self.model_dump(exclude_defaults=True, exclude={"selector"})
        doc = {"name": self.name, "kind": self.kind, **doc}
        sel = self.selector.doc()
        if sel:
            doc["selector"] = sel
        for key in (
            "pending",
            "clear_for",
            "window",
            "trailing",
            "after",
            "group_wait",
            "repeat_interval",
        ):
            if key in doc:
                doc[key] = format_duration_ms(int(doc[key]))
        return doc


@dataclass(frozen=True, slots=True)
class Rule:
    id: int
    spec: RuleSpec


def _to_rule(row: Any) -> Rule:
    return Rule(int(row.id), RuleSpec.model_validate(row.spec))


def list_rules(conn: Connection, *, enabled_only: bool = False) -> list[Rule]:
    q = alert_rules.select().order_by(alert_rules.c.name)
    if enabled_only:
        q = q.where(alert_rules.c.enabled)
    return [_to_rule(r) for r in conn.execute(q).all()]


def get_rule(conn: Connection, name: str) -> Rule | None:
    row = conn.execute(alert_rules.select().where(alert_rules.c.name == name)).first()
    return None if row is None else _to_rule(row)


def upsert_rule(conn: Connection, spec: RuleSpec, *, author: str | None = None) -> tuple[int, bool]:
    """Create or update by name; return (id, created). Instances of a changed rule restart
    from what they were (the next evaluation applies the new condition)."""
    values = {
        "kind": spec.kind,
        "enabled": spec.enabled,
        "severity": spec.severity,
        "description": spec.description,
        "spec": spec.export(),  # the YAML form: durations as text, read back by the same parser
        "contact_points": spec.contact_points,
        "updated_by": author,
    }
    existing = conn.execute(
        select(alert_rules.c.id).where(alert_rules.c.name == spec.name)
    ).scalar_one_or_none()
    if existing is not None:
        conn.execute(
            update(alert_rules)
            .where(alert_rules.c.id == existing)
            .values(**values, updated_at=func.now())
        )
        return int(existing), False
    new = conn.execute(
        alert_rules.insert().values(name=spec.name, **values).returning(alert_rules.c.id)
    )
    return int(new.scalar_one()), True


def delete_rule(conn: Connection, name: str) -> bool:
    return conn.execute(alert_rules.delete().where(alert_rules.c.name == name)).rowcount > 0
