"""Disabling and deleting a target ask first and say what they did; the name error is in
words; the form shows every probe a mode runs; the compare page says what its numbers rest on."""

from __future__ import annotations

import re
from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine

from tests.web.data import Seeded

FORM = {"content-type": "application/x-www-form-urlencoded"}


def _enabled(engine: Engine, name: str) -> bool | None:
    with engine.connect() as conn:
        got = conn.execute(
            text("select enabled from targets where name = :n"), {"n": name}
        ).scalar_one_or_none()
    return None if got is None else bool(got)


def test_disabling_asks_first_and_then_says_disabled(
    client: TestClient, migrated_engine: Engine, seeded: Seeded
) -> None:
    ask = client.post("/targets/sales/enabled", content="enabled=false", headers=FORM)
    assert ask.status_code == 200 and 'id="confirm-what"' in ask.text
    assert "stops probing its 3 modes" in ask.text
    assert _enabled(migrated_engine, "sales") is True  # nothing changed yet
    done = client.post("/targets/sales/enabled", content="enabled=false&confirm=yes", headers=FORM)
    assert done.status_code == 200 and _enabled(migrated_engine, "sales") is False
    assert "Disabled sales: it is no longer probed" in done.text and "Saved" not in done.text
    back = client.post("/targets/sales/enabled", content="enabled=true", headers=FORM)
    assert "Enabled sales" in back.text and _enabled(migrated_engine, "sales") is True


def test_deleting_needs_the_name_typed(
    client: TestClient, migrated_engine: Engine, seeded: Seeded
) -> None:
    ask = client.post("/targets/hr/delete", content="", headers=FORM)
    assert ask.status_code == 200 and "Type <strong>hr</strong> to confirm" in ask.text
    wrong = client.post("/targets/hr/delete", content="confirm_name=sales", headers=FORM)
    assert "nothing was deleted" in wrong.text and _enabled(migrated_engine, "hr") is True
    done = client.post("/targets/hr/delete", content="confirm_name=hr", headers=FORM)
    assert done.status_code == 200 and "Deleted hr" in done.text
    assert _enabled(migrated_engine, "hr") is None
    assert client.get("/target/hr").status_code == 404
    assert client.post("/targets/nope/delete", content="", headers=FORM).status_code == 404


def test_a_bad_name_is_explained_in_words(client: TestClient) -> None:
    body = "name=bad+name&kind=postgres&dsn=h%3A5432%2Fd&username=u&mode-0-on=on"
    body += "&mode-0-name=direct&mode-0-kind=direct&mode-0-interval=10s&mode-0-transport=tcp"
    res = client.post("/targets/new", content=body, headers=FORM)
    assert res.status_code == 422
    error = res.text.split('id="e-name">')[1].split("</span>")[0]
    assert "use 1 to 63 letters, digits" in error
    assert "A-Za-z0-9" not in error and "pattern" not in error


def test_the_form_lists_every_probe_of_a_mode(client: TestClient, seeded: Seeded) -> None:
    page = client.get("/targets/sales/edit").text
    assert page.count("data-probes") == 3
    cell = page.split("data-probes>")[1].split("</td>")[0]
    assert ">connping<" in cell and ">sessionping<" in cell
    assert "Modes (a connping probe on each)" not in page


def test_compare_says_what_its_figures_rest_on(
    client: TestClient, seeded: Seeded, migrated_engine: Engine
) -> None:
    page = client.get(
        "/compare", params={"target": "sales", "probe": "sessionping", "phase": "logon"}
    ).text
    assert 'id="kept-session-note"' in page
    assert "-minute blocks" in page or "-hour blocks" in page
    assert ".0-minute" not in page
    assert 'data-label="Timed"' in page
    assert "No sweep in this window" in page
    # hr dedicated: its last 10 minutes all failed
    hr = client.get("/compare", params={"target": "hr", "range": "1h"}).text
    assert "Timed" in hr
    _all_failed_is_said(client, seeded, migrated_engine)


def _all_failed_is_said(client: TestClient, seeded: Seeded, engine: Engine) -> None:
    """hr dedicated: every sample of the last 10 minutes failed (ORA-12541). Over the last
    8 whole minutes the compare page says how many ran and that all of them failed."""
    end = seeded.now.replace(second=0, microsecond=0)
    start = end - timedelta(minutes=8)
    with engine.connect() as conn:
        ran, failed = conn.execute(
            text(
                "select count(*), count(*) filter (where status <> 'ok') from samples "
                "where series_id = :s and scheduled_at >= :a and scheduled_at < :b"
            ),
            {"s": seeded.series[("hr", "dedicated")], "a": start, "b": end},
        ).one()
    assert ran == failed > 0
    page = client.get(
        "/compare",
        params={"target": "hr", "from": start.isoformat(), "to": end.isoformat()},
    ).text
    row = page.split('id="compare-table"')[1].split("</tr>")[1]
    assert ">dedicated</span>" in row
    shown = re.search(r"all (\d+) failed", row)
    assert shown is not None, row
    assert int(shown.group(1)) == ran
    assert f'data-label="Samples">{ran}<' in row and f'data-label="Failed">{ran}<' in row
    assert "no samples" not in page.lower()
