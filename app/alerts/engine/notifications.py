"""What to tell whom: from instance states to outbox messages (one per rule batch and
contact point), and the words and links in them.

An instance's contacts are owed a message when its state differs from what they were
last told (``notified_state``): a firing they have not heard of, or the resolution of one
they have (``send_resolved``). A firing alert they know of is repeated every
``repeat_interval`` unless acknowledged. Nothing is owed while the instance is silenced
or in a maintenance window (what is owed when that ends is sent then). A rule's owed
changes wait ``group_wait`` from the first of them, so alerts that start together (every
mode of a target going down) arrive in one message. Alertmanager contact points also get
the rule's firing alerts re-pushed every minute (as Prometheus does).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from app.alerts.engine.states import Instance
from app.alerts.rules import RuleSpec

AM_RESEND = timedelta(seconds=60)


@dataclass(frozen=True, slots=True)
class Owed:
    inst: Instance
    status: str  # "firing" | "resolved"
    repeat: bool


def owed(spec: RuleSpec, instances: list[Instance], now: datetime) -> list[Owed]:
    """What this rule's contacts are owed now (group wait applied)."""
    if not spec.contact_points:
        return []
    out: list[Owed] = []
    first_change: datetime | None = None
    for inst in instances:
        if inst.silenced_by is not None or inst.maintenance_by is not None:
            continue
        if inst.state == "firing":
            if inst.notified_state != "firing":
                out.append(Owed(inst, "firing", False))
            elif not inst.acknowledged(now) and inst.notified_at is not None:
                if now - inst.notified_at >= timedelta(milliseconds=spec.repeat_interval):
                    out.append(Owed(inst, "firing", True))
                continue
            else:
                continue
        elif inst.state == "resolved" and inst.notified_state == "firing" and spec.send_resolved:
            out.append(Owed(inst, "resolved", False))
        else:
            continue
        at = inst.change_at or now
        first_change = at if first_change is None else min(first_change, at)
    if not out:
        return []
    new = [o for o in out if not o.repeat]
    waiting = first_change is not None and now - first_change < timedelta(
        milliseconds=spec.group_wait
    )
    if new and waiting:
        return [o for o in out if o.repeat] if len(new) < len(out) else []
    return out


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.isoformat()


def links(
    base: str, labels: dict[str, str], start: datetime, end: datetime, failed: bool
) -> dict[str, str]:
    """The chart window and the raw samples of an alert (whole minutes, URL-encoded)."""
    target = labels.get("target")
    if not target:
        return {"chart_url": f"{base}/agents"}
    a = start.replace(second=0, microsecond=0).isoformat()
    b = (end.replace(second=0, microsecond=0) + timedelta(minutes=1)).isoformat()
    q: dict[str, str] = {"from": a, "to": b}
    if labels.get("probe"):
        q["probe"] = labels["probe"]
    chart = dict(q)
    if labels.get("mode"):
        chart["modes"] = labels["mode"]
    samples = {"target": target, **q}
    if labels.get("mode"):
        samples["mode"] = labels["mode"]
    if failed:
        samples["status"] = "failed"
    from urllib.parse import quote

    return {
        "chart_url": f"{base}/target/{quote(target, safe='')}?{urlencode(chart)}",
        "samples_url": f"{base}/samples?{urlencode(samples)}",
    }


def where(labels: dict[str, str]) -> str:
    if "agent" in labels:
        return f"agent {labels['agent']} ({labels.get('site', '')})"
    parts = [labels.get("target", "?")]
    if labels.get("mode"):
        parts.append(labels["mode"])
    extra = [labels["probe"]] if labels.get("probe") else []
    if labels.get("site"):
        extra.append(f"site {labels['site']}")
    return " / ".join(parts) + (f" ({', '.join(extra)})" if extra else "")


def _since(t: datetime | None, now: datetime) -> str:
    if t is None:
        return ""
    mins = int((now - t).total_seconds() // 60)
    ago = f"{mins} min" if mins < 120 else f"{mins // 60} h {mins % 60} min"
    return f"{t:%Y-%m-%d %H:%M} UTC ({ago} ago)"


def alert_item(rule: str, spec: RuleSpec, o: Owed, base: str, now: datetime) -> dict[str, Any]:
    inst = o.inst
    start = (inst.active_since or inst.fired_at or now) - timedelta(
        milliseconds=max(spec.window, 600_000)
    )
    end = inst.resolved_at or now
    failed = spec.kind == "availability"
    item: dict[str, Any] = {
        "status": o.status,
        "rule": rule,
        "severity": spec.severity,
        "labels": dict(inst.labels),
        "fingerprint": inst.fingerprint,
        "summary": f"{where(inst.labels)}: {inst.summary}",
        "description": spec.description or spec.condition_text(),
        "value": inst.value,
        "threshold": inst.threshold,
        "starts_at": _iso(inst.fired_at or inst.active_since),
        "ends_at": _iso(inst.resolved_at) if o.status == "resolved" else None,
        "repeat": o.repeat,
        **links(base, inst.labels, start, end, failed),
    }
    if inst.ack_by and o.status == "firing":
        item["acknowledged_by"] = inst.ack_by
    return item


def message(
    rule: str, spec: RuleSpec, items: list[dict[str, Any]], now: datetime
) -> dict[str, Any]:
    """The outbox payload for one rule batch (docs/alerts.md, "The message")."""
    firing = [i for i in items if i["status"] == "firing"]
    resolved = [i for i in items if i["status"] == "resolved"]
    heads = []
    if firing:
        heads.append(f"FIRING:{len(firing)}")
    if resolved:
        heads.append(f"RESOLVED:{len(resolved)}" if firing else "RESOLVED")
    subject = f"[{', '.join(heads)}] {rule} ({spec.severity})"
    if len(items) == 1:
        subject += f": {where(items[0]['labels'])}"
    lines = [f"{rule}: {spec.condition_text()}", f"Severity: {spec.severity}"]
    if spec.description:
        lines.append(spec.description)
    for i in items:
        label = "FIRING" if i["status"] == "firing" else "RESOLVED"
        if i.get("repeat"):
            label = "STILL FIRING"
        lines.append("")
        lines.append(f"{label} {i['summary']}")
        started = datetime.fromisoformat(i["starts_at"]) if i.get("starts_at") else None
        if i["status"] == "firing":
            lines.append(f"  since {_since(started, now)}")
        elif i.get("ends_at"):
            lines.append(f"  resolved {datetime.fromisoformat(i['ends_at']):%Y-%m-%d %H:%M} UTC")
        if i.get("acknowledged_by"):
            lines.append(f"  acknowledged by {i['acknowledged_by']}")
        lines.append(f"  chart:   {i['chart_url']}")
        if i.get("samples_url"):
            lines.append(f"  samples: {i['samples_url']}")
    return {
        "subject": subject,
        "text": "\n".join(lines),
        "status": "firing" if firing else "resolved",
        "group": {"rule": rule, "severity": spec.severity},
        "alerts": items,
    }
