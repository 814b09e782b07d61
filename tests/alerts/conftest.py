"""Alert tests: a migrated store, series with samples written through the store's writer,
and an evaluator driven with explicit clock values (no sleeping)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.alerts.engine.cycle import CycleReport, Evaluator
from app.alerts.rules import RuleSpec, upsert_rule
from app.notify.contacts import ContactPointSpec, upsert_contact_point
from app.samples import ErrorClass, Sample, SampleStatus
from app.secrets import Vault
from app.store.write.ingest import write_samples
from app.store.write.rollups import roll_up_pending
from tests.store.conftest import make_target

T0 = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(hours=2)


def ok(sid: int, at: datetime, logon_ms: float) -> Sample:
    ns = int(logon_ms * 1e6)
    return Sample(
        sid, at, at, SampleStatus.OK, total_ns=ns + 2_000_000, logon_ns=ns, ping_ns=500_000
    )


def bad(
    sid: int, at: datetime, code: str = "TNS-12520", cls: ErrorClass = ErrorClass.TNS
) -> Sample:
    return Sample(
        sid,
        at,
        at,
        SampleStatus.ERROR,
        error_class=cls,
        error_code=code,
        error_phase="logon",
        error_message="refused",
    )


class World:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.vault = Vault(Fernet.generate_key())
        self.evaluator = Evaluator(engine, lease=None, base_url="http://cw.example")
        with engine.begin() as conn:
            ids = make_target(
                conn,
                "sales",
                "oracle",
                {"dedicated": [("connping", 10_000)], "pooled": [("connping", 10_000)]},
            )
        self.sid = {mode: sid for (mode, _), sid in ids.items()}

    def write(self, samples: list[Sample]) -> None:
        with self.engine.begin() as conn:
            write_samples(conn, samples)

    def minutes(self, mode: str, start: datetime, minutes: int, logon_ms: float) -> None:
        """Samples every 10 s for ``minutes`` minutes from ``start``."""
        sid = self.sid[mode]
        self.write(
            [ok(sid, start + timedelta(seconds=10 * i), logon_ms) for i in range(6 * minutes)]
        )

    def rollup(self) -> None:
        roll_up_pending(self.engine)

    def rule(self, **spec: Any) -> int:
        with self.engine.begin() as conn:
            rid, _ = upsert_rule(conn, RuleSpec.model_validate(spec))
        return rid

    def webhook(self, name: str = "hook", url: str = "http://127.0.0.1:9/x") -> int:
        with self.engine.begin() as conn:
            cp, _ = upsert_contact_point(
                conn, ContactPointSpec(name=name, channel="webhook", url=url), self.vault
            )
        return cp

    def cycle(self, at: datetime) -> CycleReport:
        return self.evaluator.run_cycle(at)

    def state(self, rule: str, **labels: str) -> str:
        with self.engine.connect() as conn:
            rows = conn.execute(
                text(
                    "select i.state, i.labels from alert_instances i join alert_rules r "
                    "on r.id = i.rule_id where r.name = :r"
                ),
                {"r": rule},
            ).all()
        for state, lab in rows:
            if all(lab.get(k) == v for k, v in labels.items()):
                return str(state)
        return "normal"

    def messages(self) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            rows = conn.execute(text("select payload from notify_outbox order by id")).scalars()
            return list(rows)

    def transitions(self, rule: str, mode: str | None = None) -> list[tuple[str, str]]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                text(
                    "select from_state, to_state from alert_transitions where rule_name = :r "
                    "and (cast(:m as text) is null or labels->>'mode' = :m) order by id"
                ),
                {"r": rule, "m": mode},
            ).all()
        return [(a, b) for a, b in rows]


@pytest.fixture
def world(migrated_engine: Engine) -> Iterator[World]:
    yield World(migrated_engine)


Cycle = Callable[[datetime], CycleReport]
