"""Targets (add / edit / disable / test now) and Agents pages, through real form posts."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.secrets import Vault

HTML = {"Accept": "text/html"}
PW = "typed-in-the-form-Zebra#42"


def _form(**extra: str) -> dict[str, str]:
    data = {
        "name": "billing",
        "kind": "oracle",
        "dsn": "billing-db:1521/BILL",
        "username": "connwatch",
        "password": PW,
        "enabled": "on",
        "mode-0-name": "dedicated",
        "mode-0-kind": "dedicated",
        "mode-0-on": "on",
        "mode-0-interval": "10s",
        "mode-0-timeout": "5s",
        "mode-1-name": "shared",
        "mode-1-kind": "shared",
        "mode-1-interval": "10s",
        "mode-1-timeout": "5s",
        "mode-2-name": "pooled",
        "mode-2-kind": "pooled",
        "mode-2-on": "on",
        "mode-2-interval": "30s",
        "mode-2-timeout": "5s",
        "mode-2-params": '{"cclass": "BILL", "purity": "self"}',
    }
    data.update(extra)
    return {k: v for k, v in data.items() if v != "<drop>"}


def _target(engine: Engine, name: str) -> Any:
    with engine.connect() as conn:
        return (
            conn.execute(text("select * from targets where name = :n"), {"n": name})
            .mappings()
            .first()
        )


def test_add_a_target_through_the_form(
    client: TestClient, migrated_engine: Engine, vault: Vault
) -> None:
    res = client.post("/targets/new", data=_form(), headers=HTML, follow_redirects=False)
    assert res.status_code == 303, res.text
    assert res.headers["location"] == "/targets/billing/edit?saved=1"
    row = _target(migrated_engine, "billing")
    assert row["password_enc"] and PW not in row["password_enc"]
    assert vault.decrypt(row["password_enc"]) == PW
    with migrated_engine.connect() as conn:
        modes = conn.execute(
            text(
                "select m.name, m.params, s.interval_ms from modes m join series s "
                "on s.mode_id = m.id where m.target_id = :t order by m.name"
            ),
            {"t": row["id"]},
        ).all()
    assert [(m.name, m.interval_ms) for m in modes] == [("dedicated", 10000), ("pooled", 30000)]
    assert modes[1].params == {"cclass": "BILL", "purity": "self"}
    page = client.get("/targets/billing/edit", headers=HTML).text
    assert PW not in page
    assert "a password is stored (encrypted)" in page


def test_validation_messages_name_the_field(client: TestClient, migrated_engine: Engine) -> None:
    bad = _form(
        name="bad name!",
        dsn="scott/tiger@db:1521/X",
        **{"mode-0-interval": "soon", "mode-2-timeout": "40s"},
    )
    res = client.post("/targets/new", data=bad, headers=HTML)
    assert res.status_code == 422
    body = res.text
    assert 'id="e-name"' in body
    assert "the dsn must not contain credentials" in body
    assert "expected a duration such as 10s" in body
    assert "must not exceed interval" in body
    assert PW not in body  # the typed password is never echoed back
    assert _target(migrated_engine, "bad name!") is None


def test_a_mode_of_the_wrong_kind_is_refused(client: TestClient) -> None:
    res = client.post(
        "/targets/new",
        data=_form(**{"mode-0-kind": "direct", "mode-0-name": "direct"}),
        headers=HTML,
    )
    assert res.status_code == 422
    assert "is not an oracle mode" in res.text


def test_at_least_one_mode(client: TestClient) -> None:
    res = client.post(
        "/targets/new", data=_form(**{"mode-0-on": "<drop>", "mode-2-on": "<drop>"}), headers=HTML
    )
    assert res.status_code == 422
    assert "tick at least one mode" in res.text


def test_duplicate_name_is_refused(client: TestClient) -> None:
    assert client.post("/targets/new", data=_form(), follow_redirects=False).status_code == 303
    again = client.post("/targets/new", data=_form(), headers=HTML)
    assert again.status_code == 422
    assert "already exists" in again.text


def test_edit_keeps_the_password_when_left_empty_and_disables_a_mode(
    client: TestClient, migrated_engine: Engine, vault: Vault
) -> None:
    client.post("/targets/new", data=_form(), follow_redirects=False)
    before = _target(migrated_engine, "billing")["password_enc"]
    res = client.post(
        "/targets/billing/edit",
        data=_form(password="", description="the billing DB", **{"mode-2-on": "<drop>"}),
        follow_redirects=False,
    )
    assert res.status_code == 303, res.text
    row = _target(migrated_engine, "billing")
    assert row["password_enc"] == before
    assert row["description"] == "the billing DB"
    with migrated_engine.connect() as conn:
        enabled = dict(
            conn.execute(
                text("select name, enabled from modes where target_id = :t"), {"t": row["id"]}
            ).all()
        )
    assert enabled == {"dedicated": True, "pooled": False}


def test_disable_and_enable_a_target(client: TestClient, migrated_engine: Engine) -> None:
    client.post("/targets/new", data=_form(), follow_redirects=False)
    res = client.post(
        "/targets/billing/enabled",
        data={"enabled": "false", "confirm": "yes"},
        follow_redirects=False,
    )
    assert res.status_code == 303
    assert _target(migrated_engine, "billing")["enabled"] is False
    client.post("/targets/billing/enabled", data={"enabled": "true"})
    assert _target(migrated_engine, "billing")["enabled"] is True
    assert client.post("/targets/nobody/enabled", data={"enabled": "true"}).status_code == 404
    assert client.post("/targets/billing/enabled", data={"enabled": "maybe"}).status_code == 422


def test_test_now_queues_a_probe_request_for_the_agent(
    client: TestClient, migrated_engine: Engine
) -> None:
    client.post("/targets/new", data=_form(), follow_redirects=False)
    res = client.post("/targets/billing/test", data={"mode": "pooled"}, follow_redirects=False)
    assert res.status_code == 303
    request_id = int(res.headers["location"].split("test=")[1].split("#")[0])
    with migrated_engine.connect() as conn:
        row = conn.execute(
            text(
                "select r.status, r.probe, r.timeout_ms, m.name from probe_requests r "
                "join modes m on m.id = r.mode_id where r.id = :i"
            ),
            {"i": request_id},
        ).one()
    assert tuple(row) == ("pending", "connping", 5000, "pooled")
    api = client.get(f"/api/v1/probe-requests/{request_id}").json()
    assert api["status"] == "pending" and api["result"] is None
    page = client.get(res.headers["location"].split("#")[0], headers=HTML).text
    assert f'data-probe-request="{request_id}"' in page
    assert client.post("/targets/billing/test", data={"mode": "nope"}).status_code == 422


def test_a_finished_request_shows_its_result_without_secrets(
    client: TestClient, migrated_engine: Engine
) -> None:
    client.post("/targets/new", data=_form(), follow_redirects=False)
    loc = client.post("/targets/billing/test", data={"mode": "dedicated"}, follow_redirects=False)
    request_id = int(loc.headers["location"].split("test=")[1].split("#")[0])
    with migrated_engine.begin() as conn:  # what an agent writes when the probe cannot run
        conn.execute(
            text(
                "update probe_requests set status = 'error', finished_at = now(), "
                "claimed_by = 'a1', result = '{\"error\": \"env:X is not set\"}' where id = :i"
            ),
            {"i": request_id},
        )
    doc = client.get(f"/api/v1/probe-requests/{request_id}").json()
    assert doc["status"] == "error" and doc["error"] == "env:X is not set"
    assert doc["agent"] == "a1"


def test_forms_must_be_url_encoded(client: TestClient) -> None:
    res = client.post("/targets/new", content=b"{}", headers={"Content-Type": "application/json"})
    assert res.status_code == 415


def test_agents_page_shows_heartbeat_lag_skips_and_spool(
    client: TestClient, migrated_engine: Engine
) -> None:
    stats = (
        '{"series": 12, "lag_ms": {"p50": 1.5, "p95": 7.25, "p99": 9.0}, "skipped": 3, '
        '"spool_samples": 42, "spool_bytes": 4096, "spool_fill": 0.01, "runs": 1000, '
        '"runs_failed": 5, "written": 995, "dropped": 0}'
    )
    with migrated_engine.begin() as conn:
        conn.execute(
            text(
                "insert into agents (name, site, version, hostname, pid, stats) "
                "values ('agent-a', 'dc1', '0.1.0', 'host-a', 123, cast(:s as jsonb)), "
                "('agent-b', 'dc2', '0.1.0', 'host-b', 456, '{}')"
            ),
            {"s": stats},
        )
        conn.execute(
            text(
                "update agents set heartbeat_at = now() - interval '5 minutes' "
                "where name = 'agent-b'"
            )
        )
    body = client.get("/agents", headers=HTML).text
    row_a = body.split('data-agent="agent-a"')[1].split("</tr>")[0]
    assert body.index("Site dc1") < body.index('data-agent="agent-a"') < body.index("Site dc2")
    for value in ("7.25", ">3<", ">42<", "4.0 KiB"):
        assert value in row_a, value
    row_b = body.split('data-agent="agent-b"')[1].split("</tr>")[0]
    assert "status-stale" in row_b
    # the heartbeat reads as an age ("N s ago"), the absolute time only beside it
    ago_a = re.search(r"<span data-heartbeat>(\d+) s ago</span>", row_a)
    ago_b = re.search(r"<span data-heartbeat>(\d+) s ago</span>", row_b)
    assert ago_a is not None and ago_b is not None, (row_a, row_b)
    assert 0 <= int(ago_a.group(1)) < 60 and 299 <= int(ago_b.group(1)) < 400
    metrics = client.get("/metrics").text
    assert 'connwatch_agent_up{agent="agent-a",site="dc1"} 1' in metrics
    assert 'connwatch_agent_up{agent="agent-b",site="dc2"} 0' in metrics
    api = {a["name"]: a for a in client.get("/api/v1/agents").json()}
    assert api["agent-a"]["alive"] is True and api["agent-b"]["alive"] is False
    assert 290 < api["agent-b"]["heartbeat_age_s"] < 400
    assert api["agent-a"]["stats"]["lag_ms"]["p95"] == 7.25 and api["agent-a"]["pid"] == 123


def test_the_typed_password_never_reaches_the_logs(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        client.post("/targets/new", data=_form(), follow_redirects=False)
        client.post("/targets/new", data=_form(name="bad name"), headers=HTML)  # 422 path
        client.post("/targets/billing/edit", data=_form(dsn="u/p@h:1/x"), headers=HTML)
        client.get("/targets/billing/edit", headers=HTML)
    assert caplog.records, "something was logged at DEBUG (SQL, HTTP)"
    assert PW not in caplog.text
