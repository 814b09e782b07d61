"""The period's alert firings, maintenance windows and annotations, from ``app.alerts``.

Firings and resolutions come from the alert history (``alert_transitions``), annotations
from ``app.alerts.annotations.events`` (those of a target in the scope, and those of every
target), maintenance windows from their schedules (``spans``) where their selector can
match a target in the scope. Each links to the target's charts around it.
"""

from __future__ import annotations

import fnmatch
from datetime import datetime, timedelta
from urllib.parse import quote, urlencode

from pydantic import BaseModel, Field
from sqlalchemy.engine import Connection

from app.alerts.annotations import events
from app.alerts.mute.maintenance import list_windows
from app.reports.content.period import Period
from app.reports.content.scope import Scope

MAX_EVENTS = 200


class EventOut(BaseModel):
    kind: str = Field(description="firing, resolved, maintenance or annotation")
    at: datetime
    ends_at: datetime | None
    target: str | None = Field(description="None: every target")
    text: str
    link: str = Field(description="dashboard path showing it")


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def chart_link(target: str | None, at: datetime, ends_at: datetime | None) -> str:
    if target is None:
        return "/?"  # the overview
    pad = timedelta(hours=1)
    q = {"from": _iso(at - pad), "to": _iso((ends_at or at) + pad)}
    return f"/target/{quote(target)}?" + urlencode(q)


def read_events(conn: Connection, scope: Scope, period: Period) -> list[EventOut]:
    names = {m.target for m in scope.modes}
    if not names:
        return []
    out: list[EventOut] = []
    for e in events(conn, period.start, period.end, alerts=True, limit=MAX_EVENTS):
        target = e.target if e.kind == "annotation" else (e.labels or {}).get("target")
        if target is not None and target not in names:
            continue
        if e.kind == "annotation":
            text = e.text + (f" ({e.author})" if e.author else "")
        else:
            where = "/".join(str((e.labels or {}).get(k)) for k in ("target", "mode")
                             if (e.labels or {}).get(k))  # fmt: skip
            text = f"{e.rule} ({e.severity})" + (f" on {where}" if where else "")
            text += f": {e.text}" if e.text else ""
        out.append(EventOut(kind=e.kind, at=e.at, ends_at=e.ends_at, target=target, text=text,
                            link=chart_link(target, e.at, e.ends_at)))  # fmt: skip
    for w in list_windows(conn, enabled_only=True):
        pats = w.spec.selector.targets
        hit = sorted(n for n in names if not pats or any(fnmatch.fnmatchcase(n, p) for p in pats))
        if not hit:
            continue
        target = hit[0] if len(hit) == 1 else None
        for begin, finish in w.spec.spans(period.start, period.end):
            out.append(EventOut(
                kind="maintenance", at=begin, ends_at=finish, target=target,
                text=f"maintenance window {w.spec.name} ({', '.join(hit[:5])}"
                + (" ..." if len(hit) > 5 else "") + ")",
                link=chart_link(target, begin, finish),
            ))  # fmt: skip
    out.sort(key=lambda x: (x.at, x.kind))
    return out[:MAX_EVENTS]
