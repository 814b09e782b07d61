"""The alerting JSON API under ``/api/v1`` (documented at ``/docs``).

Reading needs the viewer role; every change needs an operator (API tokens work, so deploy
pipelines can annotate) and is written to the audit log in the same transaction.
"""

from __future__ import annotations

from collections.abc import Hashable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, HTTPException, Query
from pydantic import BaseModel, Field

from app.alerts import queries
from app.alerts.annotations import (
    AnnotationError,
    AnnotationSpec,
    delete_annotation,
    events,
)
from app.alerts.backtest import backtest
from app.alerts.mute.acks import AckError, acknowledge, unacknowledge
from app.alerts.mute.maintenance import list_windows, spans
from app.alerts.mute.silences import SilenceSpec, expire_silence, list_silences
from app.alerts.rules import RuleSpec, delete_rule, get_rule, list_rules, upsert_rule
from app.auth.audit import record
from app.notify.contacts import list_contact_points
from app.notify.outbox import delivery_log
from app.slo.compute import slo_status
from app.slo.definitions import get_slo, list_slos
from app.web.access.guards import OperatorDep, require_viewer
from app.web.deps import ConnDep, EngineDep, VaultDep
from app.web.params import Window, Window7d
from app.web.routes.alerting.common import (
    base_url,
    create_annotation_audited,
    create_silence_audited,
    send_test,
)

router = APIRouter(prefix="/api/v1", tags=["alerts"], dependencies=[Depends(require_viewer)])


def _now() -> datetime:
    return datetime.now(UTC)


@router.get("/alerts", summary="alerts that are not normal, most urgent first")
def api_alerts(conn: ConnDep, target: str | None = None) -> list[dict[str, Any]]:
    return [
        a.as_dict()
        for a in queries.current_alerts(conn, _now(), base_url=base_url(), target=target)
    ]


@router.get("/alerts/history", summary="alert state changes in a window, newest first")
def api_history(
    conn: ConnDep,
    w: Window7d,
    rule: str | None = None,
    target: str | None = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 200,
) -> list[dict[str, Any]]:
    return [
        t.as_dict()
        for t in queries.history(conn, w.start, w.end, rule=rule, target=target, limit=limit)
    ]


@router.get("/alerts/rules", summary="every rule as its YAML entry")
def api_rules(conn: ConnDep) -> list[dict[str, Any]]:
    return [r.spec.export() for r in list_rules(conn)]


@router.get("/alerts/rules/{name}", summary="one rule")
def api_rule(conn: ConnDep, name: str) -> dict[str, Any]:
    rule = get_rule(conn, name)
    if rule is None:
        raise HTTPException(404, f"no rule named {name!r}")
    return rule.spec.export()


@router.put("/alerts/rules/{name}", summary="create or replace a rule (operator)")
def api_put_rule(engine: EngineDep, who: OperatorDep, name: str, spec: RuleSpec) -> dict[str, Any]:
    if spec.name != name:
        raise HTTPException(422, f"name: the body names {spec.name!r}, the URL {name!r}")
    with engine.begin() as conn:
        _check_references(conn, spec)
        before = get_rule(conn, name)
        _, created = upsert_rule(conn, spec, author=who.name)
        record(
            conn,
            who,
            "rule.create" if created else "rule.update",
            object_type="rule",
            object_name=name,
            before=before.spec.export() if before else None,
            after=spec.export(),
        )
    return {"name": name, "created": created}


def _check_references(conn: Any, spec: RuleSpec) -> None:
    known = {c.name for c in list_contact_points(conn)}
    for cp in spec.contact_points:
        if cp not in known:
            raise HTTPException(422, f"contact_points: no contact point {cp!r}")
    if spec.slo is not None and get_slo(conn, spec.slo) is None:
        raise HTTPException(422, f"slo: no SLO {spec.slo!r}")


@router.delete("/alerts/rules/{name}", summary="delete a rule (operator; its history stays)")
def api_delete_rule(engine: EngineDep, who: OperatorDep, name: str) -> dict[str, Any]:
    with engine.begin() as conn:
        before = get_rule(conn, name)
        if before is None or not delete_rule(conn, name):
            raise HTTPException(404, f"no rule named {name!r}")
        record(
            conn,
            who,
            "rule.delete",
            object_type="rule",
            object_name=name,
            before=before.spec.export(),
        )
    return {"deleted": name}


@router.post("/alerts/rules/backtest", summary="what a rule would have done over the last days")
def api_backtest(
    conn: ConnDep, spec: RuleSpec, days: Annotated[int, Query(ge=1, le=35)] = 7
) -> dict[str, Any]:
    res = backtest(conn, spec, _now(), days=days)
    return {
        "sentence": res.sentence(),
        "supported": res.supported,
        "fired": res.fired,
        "firing_minutes": res.firing_minutes,
        "instances": res.instances,
        "replayed": res.replayed,
        "episodes": [
            {
                "labels": e.labels,
                "start": e.start.isoformat(),
                "end": e.end.isoformat() if e.end else None,
            }
            for e in res.episodes[:200]
        ],
    }


class AckBody(BaseModel):
    rule: str
    fingerprint: str
    comment: str = Field(min_length=1, max_length=2000)
    until: datetime | None = None


@router.post("/alerts/ack", summary="acknowledge a firing alert (operator)")
def api_ack(engine: EngineDep, who: OperatorDep, body: AckBody) -> dict[str, Any]:
    with engine.begin() as conn:
        try:
            acknowledge(
                conn,
                rule=body.rule,
                fingerprint=body.fingerprint,
                by=who.name,
                comment=body.comment,
                until=body.until,
            )
        except AckError as exc:
            raise HTTPException(422, str(exc)) from None
        record(
            conn,
            who,
            "alert.ack",
            object_type="alert",
            object_name=f"{body.rule} {{{body.fingerprint}}}",
            detail=body.comment,
        )
    return {"acknowledged": True}


@router.delete("/alerts/ack", summary="withdraw an acknowledgement (operator)")
def api_unack(engine: EngineDep, who: OperatorDep, rule: str, fingerprint: str) -> dict[str, Any]:
    with engine.begin() as conn:
        if not unacknowledge(conn, rule=rule, fingerprint=fingerprint):
            raise HTTPException(404, "no acknowledgement to withdraw")
        record(
            conn, who, "alert.unack", object_type="alert", object_name=f"{rule} {{{fingerprint}}}"
        )
    return {"acknowledged": False}


@router.get("/alerts/silences", summary="silences active, pending, or ended in the last 7 days")
def api_silences(conn: ConnDep) -> list[dict[str, Any]]:
    now = _now()
    return [
        {"id": s.id, "state": s.state(now), **s.spec.model_dump(mode="json")}
        for s in list_silences(conn, now=now)
    ]


class SilenceBody(BaseModel):
    rules: list[str] = Field(default_factory=list)
    selector: dict[str, Any] = Field(default_factory=dict)
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    duration: str | None = None
    comment: str


@router.post("/alerts/silences", summary="silence matching alerts (operator)")
def api_silence(engine: EngineDep, who: OperatorDep, body: SilenceBody) -> dict[str, Any]:
    from pydantic import ValidationError

    from app.targets.durations import parse_duration_ms

    start = body.starts_at or _now()
    end = body.ends_at
    if end is None:
        try:
            end = start + timedelta(milliseconds=parse_duration_ms(body.duration or "1h"))
        except ValueError as exc:
            raise HTTPException(422, f"duration: {exc}") from None
    try:
        spec = SilenceSpec(
            rules=body.rules,
            selector=body.selector,
            starts_at=start,
            ends_at=end,
            author=who.name,
            comment=body.comment,
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        raise HTTPException(422, f"{'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    with engine.begin() as conn:
        sid = create_silence_audited(conn, who, spec)
    return {"id": sid}


@router.post("/alerts/silences/{silence_id}/expire", summary="end a silence now (operator)")
def api_expire(engine: EngineDep, who: OperatorDep, silence_id: int) -> dict[str, Any]:
    with engine.begin() as conn:
        if not expire_silence(conn, silence_id):
            raise HTTPException(404, f"no active or pending silence {silence_id}")
        record(conn, who, "silence.expire", object_type="silence", object_name=str(silence_id))
    return {"expired": silence_id}


@router.get("/annotations", summary="annotations and alert firings/resolutions in a window")
def api_annotations(
    conn: ConnDep, w: Window7d, target: str | None = None, alerts: bool = True
) -> list[dict[str, Any]]:
    return [e.as_dict() for e in events(conn, w.start, w.end, target=target, alerts=alerts)]


@router.post("/annotations", summary="record an event, e.g. from a deploy pipeline (operator)")
def api_annotate(
    engine: EngineDep, who: OperatorDep, spec: Annotated[AnnotationSpec, Body()]
) -> dict[str, Any]:
    with engine.begin() as conn:
        try:
            aid = create_annotation_audited(conn, who, spec, source="api", now=_now())
        except AnnotationError as exc:
            raise HTTPException(422, str(exc)) from None
    return {"id": aid}


@router.delete("/annotations/{annotation_id}", summary="delete an annotation (operator)")
def api_delete_annotation(
    engine: EngineDep, who: OperatorDep, annotation_id: int
) -> dict[str, Any]:
    with engine.begin() as conn:
        if not delete_annotation(conn, annotation_id):
            raise HTTPException(404, f"no annotation {annotation_id}")
        record(
            conn, who, "annotation.delete", object_type="annotation", object_name=str(annotation_id)
        )
    return {"deleted": annotation_id}


@router.get(
    "/targets/{name}/events", summary="what the target's charts draw: events and maintenance"
)
def api_target_events(conn: ConnDep, name: str, w: Window) -> dict[str, Any]:
    return {
        "events": [e.as_dict() for e in events(conn, w.start, w.end, target=name)],
        "maintenance": [
            {"name": n, "start": a.isoformat(), "end": b.isoformat()}
            for n, a, b in spans(conn, w.start, w.end, target=name)
        ],
    }


@router.get("/maintenance-windows", summary="maintenance windows and their next occurrences")
def api_windows(conn: ConnDep) -> list[dict[str, Any]]:
    now = _now()
    return [
        {
            **w.spec.export(),
            "next": [a.isoformat() for a, _ in w.spec.spans(now, now + timedelta(days=14))][:3],
        }
        for w in list_windows(conn)
    ]


@router.get("/contact-points", summary="contact points (secrets are never returned)")
def api_contact_points(conn: ConnDep) -> list[dict[str, Any]]:
    return [
        {
            "name": c.name,
            "channel": c.channel,
            "enabled": c.enabled,
            "where": c.where(),
            "secret": c.secret,
            "description": c.description,
        }
        for c in list_contact_points(conn)
    ]


@router.get("/contact-points/{name}/deliveries", summary="a contact point's delivery log")
def api_deliveries(
    conn: ConnDep, name: str, limit: Annotated[int, Query(ge=1, le=500)] = 50
) -> list[dict[str, Any]]:
    from app.notify.contacts import get_contact_point

    cp = get_contact_point(conn, name)
    if cp is None:
        raise HTTPException(404, f"no contact point named {name!r}")
    return [
        {**{k: getattr(r, k) for k in r.__dataclass_fields__}, "at": r.at.isoformat()}
        for r in delivery_log(conn, contact_point_id=cp.id, limit=limit)
    ]


@router.post("/contact-points/{name}/test", summary="send a test message now (operator)")
def api_test_contact(
    engine: EngineDep, vault: VaultDep, who: OperatorDep, name: str
) -> dict[str, Any]:
    return send_test(engine, who, name, vault)


@router.get("/slos", summary="SLOs with attainment and error budget over their window, per mode")
def api_slos(conn: ConnDep) -> list[dict[str, Any]]:
    from app.targets.selector import catalog

    now = _now()
    series = catalog(conn)
    out = []
    for slo in list_slos(conn):
        groups: dict[Hashable, list[int]] = {}
        for s in slo.spec.selector.select(series):
            groups.setdefault(f"{s.target}/{s.mode}", []).append(s.series_id)
        status = slo_status(conn, slo.spec, groups, now)
        out.append(
            {
                "name": slo.spec.name,
                "describe": slo.spec.describe(),
                "objective": slo.spec.objective,
                "modes": {
                    k: {
                        "attainment": v.attainment,
                        "budget_remaining_pct": v.budget_remaining_pct,
                        "total": v.counts.total,
                        "good": v.counts.good,
                        "met": v.met,
                    }
                    for k, v in status.items()
                },
            }
        )
    return out
