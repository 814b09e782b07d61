"""Errors you can read without hovering: the /errors reference, outages that say "ongoing",
samples whose error line says what the code means."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.explain import catalogue
from tests.web.data import Seeded


def test_the_reference_lists_every_code_with_meaning_and_cause(
    seeded_env: tuple[TestClient, Seeded],
) -> None:
    client, _ = seeded_env
    body = client.get("/errors").text
    for row in catalogue():
        assert f'id="{row.code}"' in body, row.code
    assert "invalid username or password" in body and "Likely cause" in body
    api = client.get("/api/v1/errors").json()
    assert {c["code"] for c in api["codes"]} == {r.code for r in catalogue()}
    one = client.get("/api/v1/errors", params={"code": "ORA-29999"}).json()["codes"]
    assert one[0]["known"] is False and "oerr ora 29999" in one[0]["cause"]
    looked = client.get("/errors", params={"code": "DPY-4011"}).text
    assert 'id="looked-up"' in looked and "the database or network closed the connection" in looked


def test_a_bad_code_lookup_is_a_422_not_a_500(seeded_env: tuple[TestClient, Seeded]) -> None:
    client, _ = seeded_env
    assert client.get("/api/v1/errors", params={"code": "<script>"}).status_code == 422
    assert client.get("/errors", params={"code": "x" * 65}).status_code == 422


def test_an_outage_still_running_says_ongoing(seeded_env: tuple[TestClient, Seeded]) -> None:
    client, _ = seeded_env
    got = client.get("/api/v1/incidents", params={"range": "24h"}).json()["outages"]
    by = {(o["target"], o["mode"]): o for o in got}
    assert by[("hr", "dedicated")]["ongoing"] is True
    assert by[("hr", "dedicated")]["meanings"] == {"ORA-12541": "no listener"}
    assert by[("sales", "shared")]["ongoing"] is False  # 30 minutes ago, over since
    page = client.get("/spikes", params={"range": "24h"}).text
    assert page.count('class="ongoing"') == 1 and "so far" in page


def test_a_failed_sample_says_what_its_code_means(seeded_env: tuple[TestClient, Seeded]) -> None:
    client, _ = seeded_env
    page = client.get("/samples", params={"target": "hr", "status": "failed", "range": "1h"}).text
    assert 'class="error-detail"' in page
    assert "<strong>ORA-12541</strong> (no listener) in logon" in page
    assert 'href="/errors#ORA-12541"' in page
