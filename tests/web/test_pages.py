"""Server-rendered pages on real data: they render, show the data, and keep state in the URL."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.web.data import SECRET_PW, Seeded

HTML = {"Accept": "text/html"}


@pytest.fixture
def client(seeded_env: tuple[TestClient, Seeded]) -> TestClient:
    return seeded_env[0]


@pytest.fixture
def seeded(seeded_env: tuple[TestClient, Seeded]) -> Seeded:
    return seeded_env[1]


def test_overview_lists_every_target_mode_worst_first(client: TestClient, seeded: Seeded) -> None:
    res = client.get("/", headers=HTML)
    assert res.status_code == 200
    body = res.text
    # hr is down (every sample of the last 10 minutes failed): first row
    rows = body.split('<tr data-state="')[1:]
    states = [r.split('"', 1)[0] for r in rows]
    assert states[0] == "down"
    assert "hr" in rows[0]
    # sales shared had 3 failures 30 minutes ago: ok now (15-minute window)
    assert states.count("ok") == 3
    assert states[-1] == "disabled"
    assert '<svg class="spark"' in body
    assert SECRET_PW not in body


def test_overview_shows_current_latencies(client: TestClient, seeded: Seeded) -> None:
    body = client.get("/", headers=HTML).text
    dedicated = next(r for r in body.split("<tr ")[1:] if ">sales<" in r and "dedicated" in r)
    cells = [c.split(">", 1)[1].split("</td>")[0] for c in dedicated.split('<td class="num"')[1:5]]
    logon_p50 = float(cells[0])
    assert 57 <= logon_p50 <= 63


def test_agents_page_without_agents_explains(client: TestClient) -> None:
    res = client.get("/agents", headers=HTML)
    assert res.status_code == 200
    assert "No agent has reported yet" in res.text


def test_unknown_page_is_a_404_page(client: TestClient) -> None:
    res = client.get("/nope", headers=HTML)
    assert res.status_code == 404
    assert "text/html" in res.headers["content-type"]


def test_plotly_is_served_locally(client: TestClient) -> None:
    res = client.get("/static/vendor/plotly.min.js", headers={"Accept-Encoding": "gzip"})
    assert res.status_code == 200
    assert res.headers["content-type"].startswith("text/javascript")
    assert b"plotly" in res.content[:2000].lower()
    again = client.get(
        "/static/vendor/plotly.min.js", headers={"If-None-Match": res.headers["etag"]}
    )
    assert again.status_code == 304


def test_target_page_names_its_charts_and_keeps_the_window(
    client: TestClient, seeded: Seeded
) -> None:
    res = client.get("/target/sales?range=6h", headers=HTML)
    assert res.status_code == 200
    for phase in ("logon", "ping", "query", "logoff"):
        assert f"/api/v1/targets/sales/timeseries?phase={phase}" in res.text
    assert 'aria-current="true">6h<' in res.text
    assert SECRET_PW not in res.text


def test_target_page_rejects_a_bad_window_with_a_message(
    client: TestClient, seeded: Seeded
) -> None:
    res = client.get("/target/sales?range=2w", headers=HTML)
    assert res.status_code == 422
    assert "range: &#39;2w&#39; is not one of" in res.text


def test_target_page_lets_the_viewer_pick_the_probe(client: TestClient, seeded: Seeded) -> None:
    body = client.get("/target/sales?range=6h", headers=HTML).text
    assert "/api/v1/targets/sales/timeseries?phase=logon&probe=connping" in body
    assert "<option selected>connping</option><option>sessionping</option>" in body
    assert "<strong>connping</strong> samples only" in body
    hr = client.get("/target/hr?range=6h&probe=sessionping", headers=HTML).text
    assert "probe=sessionping" in hr and "<strong>sessionping</strong> samples only" in hr


def test_samples_page_has_a_probe_column_and_filter(client: TestClient, seeded: Seeded) -> None:
    res = client.get("/samples?target=sales&mode=dedicated&probe=sessionping&limit=20")
    assert res.status_code == 200
    body = res.text
    assert '<th scope="col">Series</th>' in body  # target / mode and the probe's badge
    assert "<option selected>sessionping</option>" in body
    rows = body.split('<tr data-status="')[1:]
    assert len(rows) == 20
    probe = '<span class="probe">{}</span>'
    assert all(probe.format("sessionping") in r and "connping<" not in r for r in rows)
    every = client.get("/samples?target=sales&mode=dedicated&limit=200").text
    assert probe.format("connping") in every and probe.format("sessionping") in every
