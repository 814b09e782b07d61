"""One evaluation cycle: read, judge, and write everything in one fenced transaction.

1. **Read** (one read-only transaction): enabled rules, the series catalog, the stored
   (non-normal) instances, active silences, open maintenance windows; every rule's
   observations (:mod:`app.alerts.engine.observe`; a rule
   whose evaluation fails is recorded as ``error`` and the others go on: the read
   transaction is rolled back and the next rule reads in a new one).
2. **Judge** in memory: the state machine per instance, silences and windows, what the
   contacts are owed.
3. **Write** in one transaction that starts by checking the lease (holder and epoch,
   :meth:`app.alerts.lease.Lease.fence`): instances, transitions and the outbox messages
   they cause commit together or not at all. So a notification exists exactly when its
   transition does, and a process that lost the lease writes nothing.

Normal instances with nothing to tell are not stored: a rule over a thousand healthy
series costs reads and comparisons, not writes.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from app.alerts.engine import notifications as nt
from app.alerts.engine.data import agent_heartbeats
from app.alerts.engine.observe import Obs, Observer, agent_observations, units_of
from app.alerts.engine.states import Instance, gone, step
from app.alerts.lease import Lease
from app.alerts.mute.maintenance import Window, list_windows, open_windows
from app.alerts.mute.silences import Silence, active_silences
from app.alerts.rules import Rule, list_rules
from app.notify.outbox import enqueue
from app.targets.selector import SeriesRef, catalog

log = logging.getLogger(__name__)
KEEP_RESOLVED = timedelta(hours=1)  # resolved instances stay listed this long

INSTANCE_COLUMNS = (
    "labels", "state", "state_since", "active_since", "fired_at", "resolved_at", "clear_since",
    "value", "threshold", "summary", "detail", "notified_state", "notified_at", "change_at",
    "silenced_by", "maintenance_by",
)  # fmt: skip


@dataclass(slots=True)
class CycleReport:
    at: datetime
    rules: int = 0
    instances: int = 0  # evaluated (stored or not)
    transitions: list[tuple[str, str, str, str]] = field(default_factory=list)
    messages: int = 0
    errors: int = 0
    read_ms: float = 0.0
    write_ms: float = 0.0


@dataclass(slots=True)
class _Plan:
    upserts: list[tuple[int, Instance]] = field(default_factory=list)
    deletes: list[tuple[int, str]] = field(default_factory=list)
    transitions: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)


def load_instances(conn: Connection) -> dict[int, dict[str, Instance]]:
    rows = conn.execute(text("select * from alert_instances")).mappings().all()
    out: dict[int, dict[str, Instance]] = defaultdict(dict)
    names = set(Instance.__dataclass_fields__)
    for r in rows:
        inst = Instance(**{k: v for k, v in r.items() if k in names})
        out[int(r["rule_id"])][inst.fingerprint] = inst
    return out


def contact_ids(conn: Connection) -> dict[str, tuple[int, str]]:
    rows = conn.execute(text("select name, id, channel from contact_points where enabled")).all()
    return {str(n): (int(i), str(c)) for n, i, c in rows}


class Evaluator:
    def __init__(self, engine: Engine, *, lease: Lease | None, base_url: str) -> None:
        self.engine = engine
        self.lease = lease
        self.base_url = base_url.rstrip("/")
        self._am_pushed: dict[int, datetime] = {}
        # units per rule, rebuilt only when the rule or the series catalog changes
        self._units: dict[int, tuple[Any, list[Any]]] = {}
        self._catalog_key = 0

    # -- the cycle ------------------------------------------------------------------------
    def run_cycle(self, now: datetime | None = None) -> CycleReport:
        now = now or datetime.now(UTC)
        report = CycleReport(now)
        t0 = time.perf_counter_ns()
        plan = _Plan()
        with self.engine.connect() as conn:
            rules = list_rules(conn, enabled_only=True)
            series = catalog(conn)
            self._catalog_key = hash(tuple(series))
            stored = load_instances(conn)
            silences = active_silences(conn, now)
            windows = open_windows(list_windows(conn, enabled_only=True), now)
            contacts = contact_ids(conn)
            observer = Observer(conn, now)
            report.rules = len(rules)
            self._prefetch(conn, observer, rules, series)
            for rule in rules:
                obs = self._observe(conn, observer, rule, series, stored.get(rule.id, {}), now)
                if rule.spec.kind == "agent":
                    report.instances += len(obs)
                report.errors += sum(1 for o in obs if o.error is not None)
                self._judge(rule, obs, stored.get(rule.id, {}), silences, windows, now, plan)
                self._notify(rule, plan, stored.get(rule.id, {}), contacts, now)
            report.instances += observer.evaluated
            conn.rollback()
        t1 = time.perf_counter_ns()
        with self.engine.begin() as conn:
            if self.lease is not None:
                self.lease.fence(conn)
            self._write(conn, plan, now)
        report.read_ms = (t1 - t0) / 1e6
        report.write_ms = (time.perf_counter_ns() - t1) / 1e6
        report.messages = len(plan.messages)
        report.transitions = [
            (t["rule_name"], t["fingerprint"], t["from_state"], t["to_state"])
            for t in plan.transitions
        ]
        return report

    def _units_of(self, rule: Rule, series: list[SeriesRef]) -> list[Any]:
        key = (rule.spec.model_dump_json(), self._catalog_key)
        hit = self._units.get(rule.id)
        if hit is not None and hit[0] == key:
            return hit[1]
        units = units_of(rule.spec, rule.spec.selector.select(series))
        self._units[rule.id] = (key, units)
        return units

    def _prefetch(
        self, conn: Connection, observer: Observer, rules: list[Rule], series: list[SeriesRef]
    ) -> None:
        """One query per shared figure for every rule (a failure here is retried per rule)."""
        try:
            work = [(r.spec, self._units_of(r, series)) for r in rules if r.spec.kind != "agent"]
            observer.prefetch([(spec, units) for spec, units in work if units])
        except Exception as exc:
            conn.rollback()
            log.debug("alerts: prefetch failed, reading rule by rule: %s", exc)

    def _observe(
        self,
        conn: Connection,
        observer: Observer,
        rule: Rule,
        series: list[SeriesRef],
        stored: dict[str, Instance],
        now: datetime,
    ) -> list[Obs]:
        spec = rule.spec
        try:
            if spec.kind == "agent":
                return agent_observations(now, spec.after, agent_heartbeats(conn))
            units = self._units_of(rule, series)
            observer.stored = stored.keys()  # type: ignore[assignment]
            return observer.observe(spec, units) if units else []
        except Exception as exc:
            # reads only: a failed statement ends the read transaction; the next rule's
            # first query starts a new one (cheaper than a savepoint around every rule)
            conn.rollback()
            reason = " ".join(str(getattr(exc, "orig", None) or exc).split())[:300]
            log.warning("alert rule %s: evaluation failed: %s", spec.name, reason)
            from app.alerts.engine.observe import Unit

            keys = list(stored.values()) or [Instance("rule=" + spec.name, {})]
            return [
                Obs(
                    Unit(i.fingerprint, dict(i.labels), []), error=f"{type(exc).__name__}: {reason}"
                )
                for i in keys
            ]

    # -- judging ------------------------------------------------------------------------
    def _judge(
        self,
        rule: Rule,
        obs: list[Obs],
        stored: dict[str, Instance],
        silences: list[Silence],
        windows: list[Window],
        now: datetime,
        plan: _Plan,
    ) -> None:
        spec = rule.spec
        pending = timedelta(milliseconds=spec.pending)
        clear_for = timedelta(milliseconds=spec.clear_for)
        seen: set[str] = set()
        for o in obs:
            key = o.unit.key
            seen.add(key)
            prev = stored.get(key)
            if prev is None and not (o.fire or o.nodata or o.error):
                continue  # normal, never stored: the common case costs nothing
            inst, change = step(prev, o, now, pending=pending, clear_for=clear_for)
            inst.silenced_by = next(
                (s.id for s in silences if s.spec.matches(spec.name, inst.labels)), None
            )
            inst.maintenance_by = next(
                (w.id for w in windows if any(w.spec.selector.matches(s) for s in o.unit.series)),
                None,
            )
            self._record(rule, inst, change, now, plan)
        for key, prev in stored.items():
            if key not in seen:
                inst, change = gone(prev, now)
                self._record(rule, inst, change, now, plan)

    def _record(
        self, rule: Rule, inst: Instance, change: tuple[str, str] | None, now: datetime, plan: _Plan
    ) -> None:
        if change is not None:
            plan.transitions.append(
                {
                    "at": now,
                    "rule_id": rule.id,
                    "rule_name": rule.spec.name,
                    "severity": rule.spec.severity,
                    "fingerprint": inst.fingerprint,
                    "labels": inst.labels,
                    "from_state": change[0],
                    "to_state": change[1],
                    "value": inst.value,
                    "threshold": inst.threshold,
                    "summary": inst.summary,
                }
            )
            if change[1] in ("firing", "resolved"):
                inst.change_at = now
        keep = inst.state not in ("normal", "resolved") or (
            inst.state == "resolved"
            and (
                (inst.resolved_at is not None and now - inst.resolved_at < KEEP_RESOLVED)
                or (inst.notified_state == "firing" and rule.spec.contact_points)
            )
        )
        if keep:
            plan.upserts.append((rule.id, inst))
        else:
            plan.deletes.append((rule.id, inst.fingerprint))

    # -- notifications ------------------------------------------------------------------
    def _notify(
        self,
        rule: Rule,
        plan: _Plan,
        stored: dict[str, Instance],
        contacts: dict[str, tuple[int, str]],
        now: datetime,
    ) -> None:
        spec = rule.spec
        if not spec.contact_points:
            return
        mine = [i for rid, i in plan.upserts if rid == rule.id]
        owed = nt.owed(spec, mine, now)
        targets = []
        for name in spec.contact_points:
            if name in contacts:
                targets.append(contacts[name])
            else:
                log.warning(
                    "alert rule %s: contact point %r does not exist or is disabled", spec.name, name
                )
        if owed and targets:
            items = [nt.alert_item(spec.name, spec, o, self.base_url, now) for o in owed]
            payload = nt.message(spec.name, spec, items, now)
            for cp_id, channel in targets:
                plan.messages.append(
                    {"contact_point_id": cp_id, "channel": channel, "payload": payload}
                )
            self._am_pushed[rule.id] = now
        for o in owed:
            o.inst.notified_state, o.inst.notified_at, o.inst.change_at = o.status, now, None
        # silently settle what needs no message (resolved without send_resolved)
        for inst in mine:
            settle = inst.state == "resolved" and inst.notified_state == "firing"
            muted = inst.silenced_by is not None or inst.maintenance_by is not None
            if settle and not spec.send_resolved and not muted:
                inst.notified_state, inst.notified_at = "resolved", now
        self._refresh_alertmanager(rule, mine, targets, now, plan)

    def _refresh_alertmanager(
        self,
        rule: Rule,
        mine: list[Instance],
        targets: list[tuple[int, str]],
        now: datetime,
        plan: _Plan,
    ) -> None:
        am = [t for t in targets if t[1] == "alertmanager"]
        last = self._am_pushed.get(rule.id)
        if not am or (last is not None and now - last < nt.AM_RESEND):
            return
        live = [
            nt.Owed(i, "firing", True)
            for i in mine
            if i.state == "firing"
            and i.notified_state == "firing"
            and i.silenced_by is None
            and i.maintenance_by is None
        ]
        if not live:
            return
        items = [nt.alert_item(rule.spec.name, rule.spec, o, self.base_url, now) for o in live]
        payload = nt.message(rule.spec.name, rule.spec, items, now)
        for cp_id, channel in am:
            plan.messages.append(
                {"contact_point_id": cp_id, "channel": channel, "payload": payload}
            )
        self._am_pushed[rule.id] = now

    # -- writing --------------------------------------------------------------------------
    def _write(self, conn: Connection, plan: _Plan, now: datetime) -> None:
        if plan.upserts:
            cols = ", ".join(INSTANCE_COLUMNS)
            vals = ", ".join(
                f"cast(:{c} as jsonb)" if c in ("labels", "detail") else f":{c}"
                for c in INSTANCE_COLUMNS
            )
            sets = ", ".join(f"{c} = excluded.{c}" for c in INSTANCE_COLUMNS)
            import json

            rows = []
            for rule_id, inst in plan.upserts:
                row = {c: getattr(inst, c) for c in INSTANCE_COLUMNS}
                row["labels"] = json.dumps(inst.labels)
                row["detail"] = json.dumps(inst.detail, default=str)
                row.update(rule_id=rule_id, fingerprint=inst.fingerprint, now=now)
                row["state_since"] = inst.state_since or now
                rows.append(row)
            conn.execute(
                text(
                    f"insert into alert_instances (rule_id, fingerprint, last_eval_at, {cols}) "
                    f"values (:rule_id, :fingerprint, :now, {vals}) "
                    "on conflict (rule_id, fingerprint) do update set last_eval_at = :now, "
                    f"{sets}, "
                    # acknowledgements are the users': kept, except that a resolution ends them
                    "ack_by = case when excluded.state = 'resolved' then null "
                    "else alert_instances.ack_by end, "
                    "ack_at = case when excluded.state = 'resolved' then null "
                    "else alert_instances.ack_at end, "
                    "ack_until = case when excluded.state = 'resolved' then null "
                    "else alert_instances.ack_until end, "
                    "ack_comment = case when excluded.state = 'resolved' then null "
                    "else alert_instances.ack_comment end"
                ),
                rows,
            )
        if plan.deletes:
            conn.execute(
                text(
                    "delete from alert_instances where (rule_id, fingerprint) in "
                    "(select * from unnest(cast(:r as int[]), cast(:f as text[])))"
                ),
                {"r": [d[0] for d in plan.deletes], "f": [d[1] for d in plan.deletes]},
            )
        if plan.transitions:
            import json

            conn.execute(
                text(
                    "insert into alert_transitions (at, rule_id, rule_name, severity, fingerprint, "
                    "labels, from_state, to_state, value, threshold, summary) values (:at, "
                    ":rule_id, :rule_name, :severity, :fingerprint, cast(:labels as jsonb), "
                    ":from_state, :to_state, :value, :threshold, :summary)"
                ),
                [{**t, "labels": json.dumps(t["labels"])} for t in plan.transitions],
            )
        for m in plan.messages:
            enqueue(
                conn,
                channel=m["channel"],
                kind="alert",
                payload=m["payload"],
                contact_point_id=m["contact_point_id"],
            )
