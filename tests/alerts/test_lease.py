"""The evaluator lease: one holder, takeover after expiry, and a fenced-out former holder
writes nothing."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.alerts.lease import Lease, LeaseLost, lease_holder


def test_one_holder_then_takeover_with_a_new_epoch(migrated_engine: Engine) -> None:
    a, b = Lease(migrated_engine, 1.0), Lease(migrated_engine, 1.0)
    assert a.acquire() and not b.acquire()
    assert a.acquire() and a.epoch == 1  # renewal keeps the epoch
    time.sleep(1.2)  # a stops renewing (hung, dead, cut off)
    assert b.acquire() and b.epoch == 2
    with migrated_engine.connect() as conn:
        assert lease_holder(conn) is not None
        assert lease_holder(conn)[0] == b.holder  # type: ignore[index]
    # the former holder is fenced out of any write
    with migrated_engine.begin() as conn, pytest.raises(LeaseLost):
        a.fence(conn)
    assert not a.acquire()
    with migrated_engine.begin() as conn:
        b.fence(conn)  # the holder may write
        conn.execute(text("select 1"))


def test_release_hands_over_at_once(migrated_engine: Engine) -> None:
    a, b = Lease(migrated_engine, 60.0), Lease(migrated_engine, 60.0)
    assert a.acquire()
    a.release()
    assert b.acquire()
