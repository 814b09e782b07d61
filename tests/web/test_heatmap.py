"""The Target page's hour x weekday heatmap on hand-built weeks: the hot cell where it belongs
(in UTC and in another zone), one probe kind, strict validation, a page that draws in Chromium."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

import pytest
from fastapi.testclient import TestClient

from tests.fixtures.browser import LiveServer
from tests.web.weekly_data import B_ERRORS, B_TIMEOUTS, Weeks, seed_weeks

REL = 0.0197  # the store's percentiles are within 1.96 %


@pytest.fixture
def client(weekly_env: tuple[TestClient, Weeks]) -> TestClient:
    return weekly_env[0]


@pytest.fixture
def weeks(weekly_env: tuple[TestClient, Weeks]) -> Weeks:
    return weekly_env[1]


URL = "/api/v1/targets/weekly/heatmap"


def test_hot_cell_in_utc_with_known_percentiles(client: TestClient, weeks: Weeks) -> None:
    res = client.get(URL, params={"mode": "dedicated"})
    assert res.status_code == 200, res.text
    doc = res.json()
    assert (doc["tz"], doc["phase"], doc["probe"]) == ("UTC", "logon", "connping")
    assert doc["weekdays"][0] == "Mon" and doc["hours"] == list(range(24))
    # Monday 09:00 UTC: 50, 50 (week A) and 100, 100 (week B)
    assert doc["p95"][0][9] == pytest.approx(100.0, rel=REL)
    assert doc["p50"][0][9] == pytest.approx(50.0, rel=REL)
    assert doc["n"][0][9] == 4
    # week B failed or skipped every sample of Wed 02-06h, Fri 04h and Sun 06-08h: only
    # week A's 50 ms remain there; every other cell holds 50 and 60 ms: p95 60
    only_a = {(2, 2), (2, 3), (2, 4), (2, 5), (4, 4), (6, 6), (6, 7)}
    for d in range(7):
        for h in range(24):
            if (d, h) != (0, 9):
                want = 50.0 if (d, h) in only_a else 60.0
                assert doc["p95"][d][h] == pytest.approx(want, rel=REL), (d, h)
    assert sum(map(sum, doc["failed"])) == B_ERRORS + B_TIMEOUTS
    assert sum(map(sum, doc["n"])) == 2 * 336  # two whole weeks of the connping series


def test_cells_follow_the_requested_time_zone(client: TestClient, weeks: Weeks) -> None:
    doc = client.get(URL, params={"mode": "dedicated", "tz": "Asia/Kolkata"}).json()
    assert doc["tz"] == "Asia/Kolkata"
    local = weeks.hot[0].astimezone(ZoneInfo("Asia/Kolkata"))  # 14:30: the hour holding 09:00Z
    d, h = local.isoweekday() - 1, local.hour
    assert doc["p95"][d][h] == pytest.approx(100.0, rel=REL)
    assert doc["p95"][0][9] == pytest.approx(60.0, rel=REL)


def test_one_probe_kind_and_p50_selectable(client: TestClient) -> None:
    sp = client.get(URL, params={"mode": "dedicated", "probe": "sessionping"}).json()
    assert sp["p95"][0][9] == pytest.approx(5.0, rel=REL)  # never pooled with connping
    shared = client.get(URL, params={"mode": "shared", "phase": "ping"}).json()
    assert shared["p50"][2][12] == pytest.approx(1.2, rel=REL)
    none = client.get(URL, params={"mode": "shared", "probe": "commit"}).json()
    assert sum(map(sum, none["n"])) == 0  # a probe the mode does not run: empty, not an error


@pytest.mark.parametrize(
    ("params", "status", "needle"),
    [
        ({"tz": "Mars/Olympus"}, 422, "tz: unknown time zone 'Mars/Olympus'"),
        ({"mode": "nope"}, 422, "mode: target 'weekly' has no mode 'nope'"),
        ({"phase": "bogus"}, 422, "phase"),
        ({"probe": "bogus"}, 422, "probe"),
        ({"range": "2w"}, 422, "range: '2w' is not one of"),
        ({"from": "yesterday"}, 422, "from: 'yesterday' is not an ISO 8601 instant"),
    ],
)
def test_bad_input_is_a_4xx_naming_the_parameter(
    client: TestClient, params: dict[str, str], status: int, needle: str
) -> None:
    res = client.get(URL, params=params)
    assert res.status_code == status, res.text
    assert needle in res.json()["detail"]
    assert client.get("/api/v1/targets/nope/heatmap").status_code == 404


def test_page_names_the_zone_and_links_from_the_target_page(client: TestClient) -> None:
    html = {"accept": "text/html"}
    target = client.get("/target/weekly", headers=html).text
    assert 'href="/target/weekly/heatmap?probe=connping"' in target
    page = client.get("/target/weekly/heatmap", params={"mode": "shared"}, headers=html)
    assert page.status_code == 200
    assert "data-browser-tz" in page.text and "your time zone" in page.text
    assert "heatmap?mode=shared&amp;phase=logon&amp;probe=connping" in page.text
    utc = client.get("/target/weekly/heatmap", params={"tz": "UTC", "stat": "p50"}, headers=html)
    assert "data-browser-tz" not in utc.text and "<strong data-heat-tz>UTC</strong>" in utc.text
    assert 'data-stat="p50"' in utc.text
    bad = client.get("/target/weekly/heatmap", params={"stat": "p99"}, headers=html)
    assert bad.status_code == 422


@pytest.mark.browser
def test_heatmap_draws_in_the_viewers_zone(live_server: LiveServer, page: Any) -> None:
    weeks = seed_weeks(live_server.engine, live_server.vault)
    page.goto(f"{live_server.url}/target/weekly/heatmap?mode=dedicated")
    page.wait_for_selector("#chart-heatmap[data-state=ready]", timeout=15000)
    assert page.locator("[data-heat-tz]").inner_text() == "Europe/Paris"
    z = page.eval_on_selector("#chart-heatmap", "el => el.data[0].z")
    local = weeks.hot[0].astimezone(ZoneInfo("Europe/Paris"))
    assert z[local.isoweekday() - 1][local.hour] == pytest.approx(100.0, rel=REL)
    title = page.eval_on_selector("#chart-heatmap", "el => el.layout.xaxis.title.text")
    assert title == "hour of day (Europe/Paris)"
    # the colours start at 0 ms, and the real range is written above the chart
    assert page.eval_on_selector("#chart-heatmap", "el => el.data[0].zmin") == 0
    note = page.eval_on_selector("#chart-heatmap", "el => el.layout.annotations[0].text")
    assert note.startswith("p95 from ") and note.endswith("ms (colours from 0 ms)")
    page.screenshot(path="test-artifacts/heatmap.png", full_page=True)
    assert page.console_errors == []
