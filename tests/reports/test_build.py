"""The report's default period and selection on a real store."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from cryptography.fernet import Fernet
from sqlalchemy.engine import Engine

from app.reports.content.build import build_report
from app.reports.content.period import current_week
from app.reports.content.scope import Selection, load_scope
from app.secrets import Vault
from app.store.read.compare import compare
from app.store.write.ingest import write_samples
from app.store.write.rollups import roll_up_pending
from app.targets.schema import parse_targets
from app.targets.sync import import_targets
from app.web.views.lookups import load_target
from tests.web.weekly_data import _ok

YAML = """
targets:
  - name: sales-prod
    kind: oracle
    dsn: db1:1521/SALES
    username: u
    password: typed-password-x
    labels: {env: prod}
    modes:
      - {name: dedicated, probes: [{probe: connping, interval: 1m}]}
      - {name: pooled, probes: [{probe: connping, interval: 1m}]}
  - name: sales-test
    kind: oracle
    dsn: db2:1521/SALES
    username: u
    password: typed-password-x
    labels: {env: test}
    modes:
      - {name: dedicated, probes: [{probe: connping, interval: 1m}]}
"""


def _seed(engine: Engine, since: datetime, minutes: int) -> None:
    with engine.begin() as conn:
        import_targets(conn, parse_targets(YAML, "t"), Vault(Fernet.generate_key()))
        ids = []
        for name in ("sales-prod", "sales-test"):
            t = load_target(conn, name)
            assert t is not None
            ids += [s.id for m in t.modes for s in m.series]
        write_samples(
            conn,
            [
                _ok(sid, since + timedelta(minutes=i), 50.0, 1.0)
                for sid in ids
                for i in range(minutes)
            ],
        )
    roll_up_pending(engine)


def test_a_fresh_install_reports_the_current_week_so_far(migrated_engine: Engine) -> None:
    now = datetime.now(UTC)
    week = current_week(now)
    start = max(week.start, now - timedelta(hours=3))
    _seed(migrated_engine, start, max(1, int((now - start).total_seconds() // 60) - 1))
    with migrated_engine.connect() as conn:
        rep = build_report(conn, now=now)
    assert rep.week == week.label and rep.complete is False
    assert {(r.target, r.mode) for r in rep.rows} == {
        ("sales-prod", "dedicated"), ("sales-prod", "pooled"), ("sales-test", "dedicated")
    }  # fmt: skip
    assert all(r.samples > 0 for r in rep.rows)


def test_with_last_week_on_record_the_default_is_last_week(migrated_engine: Engine) -> None:
    now = datetime.now(UTC)
    last = current_week(now).previous()
    _seed(migrated_engine, last.start + timedelta(days=2), 60)
    with migrated_engine.connect() as conn:
        rep = build_report(conn, now=now)
        assert rep.week == last.label and rep.complete
        prod = build_report(conn, selection=Selection.parse("sales-*", "env=prod"), now=now)
        scope = load_scope(conn, Selection.parse("*-test", None))
    assert {r.target for r in prod.rows} == {"sales-prod"}
    assert prod.selection == "targets sales-*; labels env=prod"
    assert [m.label for m in scope.modes] == ["sales-test/dedicated"]


def test_the_weeks_firings_maintenance_and_annotations(migrated_engine: Engine) -> None:
    from app.alerts.annotations import AnnotationSpec, add_annotation
    from app.alerts.mute.maintenance import WindowSpec, upsert_window
    from app.alerts.tables import alert_transitions
    from tests.web.weekly_data import seed_weeks

    weeks = seed_weeks(migrated_engine, Vault(Fernet.generate_key()))
    at = weeks.b + timedelta(days=2, hours=3)
    with migrated_engine.begin() as conn:
        add_annotation(
            conn, AnnotationSpec(text="switched to DRCP", target="weekly", at=at),
            author="dba", source="ui", now=at,
        )  # fmt: skip
        upsert_window(
            conn,
            WindowSpec.model_validate({
                "name": "patching", "selector": {"targets": ["week*"]},
                "schedule": {"once": (weeks.b + timedelta(days=3)).replace(tzinfo=None)},
                "duration": "2h",
            }),
        )  # fmt: skip
        conn.execute(alert_transitions.insert().values(
            at=at, rule_name="logon-slow", severity="page", fingerprint="f",
            labels={"target": "weekly", "mode": "dedicated"}, from_state="pending",
            to_state="firing", summary="logon p95 over 100 ms",
        ))  # fmt: skip
        conn.execute(alert_transitions.insert().values(
            at=at, rule_name="other", severity="page", fingerprint="g",
            labels={"target": "elsewhere"}, from_state="pending", to_state="firing",
        ))  # fmt: skip
    with migrated_engine.connect() as conn:
        rep = build_report(conn, current_week(datetime.now(UTC)).previous())
    kinds = {e.kind: e for e in rep.events}
    assert set(kinds) == {"annotation", "maintenance", "firing"}  # not the other target's
    assert kinds["annotation"].text == "switched to DRCP (dba)"
    assert kinds["firing"].text.startswith("logon-slow (page) on weekly/dedicated")
    assert kinds["firing"].link.startswith("/target/weekly?from=")
    assert kinds["maintenance"].ends_at - kinds["maintenance"].at == timedelta(hours=2)  # type: ignore[operator]
    assert "Also this week: 1 alert firing, 1 maintenance window, 1 annotation." in rep.summary
    # the mode comparison (from the report's own blocks) says what the store's compare()
    # says for the same week: shared (36 ms) about 40 % faster than dedicated (60 ms)
    (cmp,) = rep.comparisons
    assert cmp.target == "weekly" and cmp.baseline == "dedicated"
    got = re.fullmatch(
        r"Shared server logons were ([\d.]+)\u00a0% faster than dedicated server, "
        r"95\u00a0% CI ([\d.]+)-([\d.]+)\u00a0%\.",
        cmp.sentence,
    )
    assert got, cmp.sentence
    with migrated_engine.connect() as conn:
        target_id = load_target(conn, "weekly").id  # type: ignore[union-attr]
        store = compare(
            conn, target_id, weeks.b, weeks.b + timedelta(days=7), phase="logon",
            baseline="dedicated", probe="connping", n_boot=400,
        )  # fmt: skip
    shared = next(m for m in store.modes if m.mode == "shared")
    assert shared.ratio is not None
    assert abs(float(got[1]) - (1 - shared.ratio) * 100) <= 1.0
    assert 35 <= float(got[2]) <= float(got[1]) <= float(got[3]) <= 45


def test_probe_side_errors_are_neither_failures_nor_listed(migrated_engine: Engine) -> None:
    """The weekly report judges the database: connwatch's own trouble (class PROBE) is out
    of its runs, its availability and its error table; the target's failures are in."""
    from app.samples import SampleStatus
    from tests.web.weekly_data import _failed

    now = datetime.now(UTC)
    start = max(current_week(now).start, now - timedelta(hours=3))
    _seed(migrated_engine, start, 30)
    with migrated_engine.begin() as conn:
        sid = {m.name: m.series[0].id for m in load_target(conn, "sales-prod").modes}  # type: ignore[union-attr]
        write_samples(
            conn,
            [_failed(sid["dedicated"], start + timedelta(minutes=i, seconds=30),
                     SampleStatus.ERROR, "PROBE-IndexError") for i in range(10)]
            + [_failed(sid["pooled"], start + timedelta(minutes=i, seconds=30),
                       SampleStatus.ERROR, "TNS-12520") for i in range(10)],
        )  # fmt: skip
    roll_up_pending(migrated_engine)
    with migrated_engine.connect() as conn:
        rep = build_report(conn, now=now)
    row = {r.mode: r for r in rep.rows if r.target == "sales-prod"}
    assert (row["dedicated"].samples, row["dedicated"].failed) == (30, 0)
    assert row["dedicated"].availability_pct == 100.0
    assert (row["pooled"].samples, row["pooled"].failed) == (40, 10)
    assert row["pooled"].availability_pct == 75.0
    assert [e.code for e in rep.errors] == ["TNS-12520"]
