"""The state machine of one alert instance (pure: no store, no clock of its own).

States: ``normal``, ``pending`` (the condition holds, not yet for ``pending``),
``firing``, ``resolved`` (fired, then cleared), ``nodata`` (nothing to judge), ``error``
(evaluation failed). Moves, each one recorded as a transition with its value:

- normal / resolved / nodata / error -> pending when the condition holds (-> firing at
  once when ``pending`` is 0);
- pending -> firing once the condition has held for ``pending``; -> normal as soon as it
  does not;
- firing -> resolved once the **clear** condition (below ``clear_ms`` etc.) has held for
  ``clear_for``. Between the two thresholds (the hysteresis band) a firing alert stays
  firing and a normal one stays normal: a value flapping inside the band changes nothing;
- a firing alert without data or whose evaluation fails stays firing (absence of data is
  not a recovery); other states go to nodata / error, and back to normal with data.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from app.alerts.engine.observe import Obs


@dataclass(slots=True)
class Instance:
    """The stored state of one alert instance (a row of ``alert_instances``)."""

    fingerprint: str
    labels: dict[str, str]
    state: str = "normal"
    state_since: datetime | None = None
    active_since: datetime | None = None
    fired_at: datetime | None = None
    resolved_at: datetime | None = None
    clear_since: datetime | None = None
    value: float | None = None
    threshold: float | None = None
    summary: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    notified_state: str | None = None
    notified_at: datetime | None = None
    change_at: datetime | None = None
    silenced_by: int | None = None
    maintenance_by: int | None = None
    ack_by: str | None = None
    ack_at: datetime | None = None
    ack_until: datetime | None = None
    ack_comment: str | None = None

    def acknowledged(self, now: datetime) -> bool:
        return self.ack_by is not None and (self.ack_until is None or self.ack_until > now)


def step(
    prev: Instance | None,
    obs: Obs,
    now: datetime,
    *,
    pending: timedelta,
    clear_for: timedelta,
) -> tuple[Instance, tuple[str, str] | None]:
    """The instance after ``obs``, and the transition (from, to) if the state changed."""
    inst = (
        replace(prev, detail=dict(prev.detail))
        if prev is not None
        else Instance(obs.unit.key, dict(obs.unit.labels), state_since=now)
    )
    inst.labels = dict(obs.unit.labels)
    before = inst.state
    inst.value, inst.threshold, inst.summary = obs.value, obs.threshold, obs.text
    inst.detail = dict(obs.detail)
    if obs.error is not None or obs.nodata:
        if before == "firing":
            inst.summary = ("evaluation failed: " + obs.error) if obs.error else obs.text
        else:
            _move(inst, "error" if obs.error is not None else "nodata", now)
            inst.summary = obs.error or obs.text
            inst.active_since = None
    elif obs.fire:
        inst.clear_since = None
        if before in ("normal", "resolved", "nodata", "error"):
            inst.active_since = now
            _move(inst, "pending", now)
        if inst.state == "pending" and now - (inst.active_since or now) >= pending:
            _move(inst, "firing", now)
            inst.fired_at, inst.resolved_at = now, None
    elif before == "pending":
        inst.active_since = None
        _move(inst, "normal", now)
    elif before == "firing":
        if obs.clear:
            inst.clear_since = inst.clear_since or now
            if now - inst.clear_since >= clear_for:
                _move(inst, "resolved", now)
                inst.resolved_at, inst.clear_since, inst.active_since = now, None, None
                inst.ack_by = inst.ack_at = inst.ack_until = inst.ack_comment = None
        else:
            inst.clear_since = None  # inside the hysteresis band: still firing
    elif before in ("nodata", "error"):
        _move(inst, "normal", now)
    changed = (before, inst.state) if inst.state != before else None
    return inst, changed


def _move(inst: Instance, state: str, now: datetime) -> None:
    inst.state, inst.state_since = state, now


def gone(prev: Instance, now: datetime) -> tuple[Instance, tuple[str, str] | None]:
    """An instance whose series no longer exist (target disabled or removed, rule narrowed):
    a firing or pending one is resolved, others just end."""
    inst = replace(prev)
    if prev.state == "firing":
        _move(inst, "resolved", now)
        inst.resolved_at = now
        inst.summary = "no longer monitored (target, mode or series removed or disabled)"
        return inst, ("firing", "resolved")
    if prev.state != "normal":
        before = prev.state
        _move(inst, "normal", now)
        return inst, (before, "normal")
    return inst, None
