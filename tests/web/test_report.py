"""The weekly report on hand-built weeks with known answers: availability (skipped not
counted), week-over-week sign and size, one probe kind, error breakdown, CSV = table,
strict validation, a printable page without console errors."""

from __future__ import annotations

import csv
import io
import math
import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.web.routes.report import WEEK, _week_stats, build_report, latency_change, parse_week
from app.web.timerange import RangeError
from app.web.views.lookups import load_targets
from app.web.views.overview import overview_probe
from tests.fixtures.browser import LiveServer
from tests.web.weekly_data import B_AVAILABILITY, PER_WEEK, Weeks, seed_weeks


@pytest.fixture
def client(weekly_env: tuple[TestClient, Weeks]) -> TestClient:
    return weekly_env[0]


@pytest.fixture
def weeks(weekly_env: tuple[TestClient, Weeks]) -> Weeks:
    return weekly_env[1]


def _rows(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["mode"]: r for r in doc["rows"] if r["target"] == "weekly"}


# ---- parse_week ----


def test_week_defaults_to_the_last_complete_iso_week() -> None:
    now = datetime(2026, 11, 21, 7, 0, tzinfo=UTC)  # Saturday of 2026-W47
    w = parse_week(None, now)
    assert (w.label, w.complete) == ("2026-W46", True)
    assert w.start == datetime(2026, 11, 9, tzinfo=UTC)
    assert w.end == datetime(2026, 11, 16, tzinfo=UTC)
    cur = parse_week("current", now)
    assert (cur.label, cur.complete, cur.end) == ("2026-W47", False, now)
    assert parse_week("2021-W01", now).start == datetime(2021, 1, 4, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("2026-46", "not an ISO week"),
        ("2025-W53", "has no ISO week 53"),
        ("2026-W00", "has no ISO week 0"),
        ("2026-W48", "has not started yet"),
        ("1999-W10", "before 2000"),
    ],
)
def test_bad_weeks_are_named(value: str, message: str) -> None:
    with pytest.raises(RangeError, match=message):
        parse_week(value, datetime(2026, 11, 21, tzinfo=UTC))


def test_change_words_say_direction_not_only_colour() -> None:
    assert latency_change(20.0, 10.0).text == "▲ +20.0 % slower (worse)"
    assert latency_change(20.0, 10.0).cls == "worse"
    assert latency_change(5.0, 10.0).text == "▲ +5.0 % slower"
    assert latency_change(-12.5, 10.0).text == "▼ -12.5 % faster (better)"
    assert latency_change(None, 10.0).text == "— no previous week"


# ---- the API on known data ----


def test_availability_counts_errors_and_timeouts_not_skipped(
    client: TestClient, weeks: Weeks
) -> None:
    res = client.get("/api/v1/report", params={"week": weeks.b_label})
    assert res.status_code == 200, res.text
    doc = res.json()
    assert doc["week"] == weeks.b_label and doc["complete"] is True
    ded = _rows(doc)["dedicated"]
    assert (ded["samples"], ded["ok"], ded["failed"], ded["skipped"]) == (PER_WEEK, 322, 10, 4)
    assert ded["availability_pct"] == pytest.approx(96.98, abs=1e-9)  # floored 96.9879
    assert pytest.approx(96.9879, abs=1e-4) == B_AVAILABILITY
    assert ded["prev_availability_pct"] == 100.0
    assert ded["change_availability_pts"] == pytest.approx(B_AVAILABILITY - 100.0)
    assert _rows(doc)["shared"]["availability_pct"] == 100.0


def test_week_over_week_sign_and_size(client: TestClient, weeks: Weeks) -> None:
    doc = client.get("/api/v1/report", params={"week": weeks.b_label}).json()
    ded, sh = _rows(doc)["dedicated"], _rows(doc)["shared"]
    # constant weeks: p95 is clamped to the exact min/max, so the answers are exact
    assert ded["prev_logon_p95_ms"] == pytest.approx(50.0)
    assert ded["logon_p95_ms"] == pytest.approx(60.0, rel=0.0197)  # two 100 ms samples in B
    assert ded["change_logon_p95_pct"] == pytest.approx(20.0, abs=2.4)
    assert ded["change_ping_p95_pct"] == pytest.approx(50.0, abs=1e-6)
    assert sh["logon_p95_ms"] == pytest.approx(36.0) and sh["prev_logon_p95_ms"] == 40.0
    assert sh["change_logon_p95_pct"] == pytest.approx(-10.0, abs=1e-6)
    assert sh["change_ping_p95_pct"] == pytest.approx(0.0, abs=1e-9)
    # the summary names the mode that got slower, and only it
    assert doc["summary"][0].startswith("1 of 2 modes got slower by more than 10 %")
    assert "weekly/dedicated (+" in doc["summary"][0]
    assert "weekly/shared" not in doc["summary"][0]
    # with a 15 % threshold, shared's 10 % is "faster" but not past it
    doc2 = client.get("/api/v1/report", params={"week": weeks.b_label, "slower": 5}).json()
    assert any(
        s.startswith("1 got faster by more than 5 %: weekly/shared") for s in doc2["summary"]
    )


def test_one_probe_kind_never_the_sessionping(client: TestClient, weeks: Weeks) -> None:
    doc = client.get("/api/v1/report", params={"week": weeks.b_label}).json()
    ded = _rows(doc)["dedicated"]
    assert ded["probe"] == "connping"
    assert ded["logon_p50_ms"] == pytest.approx(60.0, rel=0.0197)  # 5 ms sessionping not pooled
    codes = {e["code"]: e for e in doc["errors"]}
    assert set(codes) == {"TNS-12520", "TIMEOUT"}  # DPY-4011 is sessionping's
    assert codes["TNS-12520"]["count"] == 8
    assert codes["TNS-12520"]["modes"] == [{"target": "weekly", "mode": "dedicated", "count": 8}]
    assert codes["TIMEOUT"]["count"] == 2
    assert doc["errors"][0]["code"] == "TNS-12520"  # most frequent first


def test_week_a_has_no_previous_week_and_this_week_has_no_samples(
    client: TestClient, weeks: Weeks
) -> None:
    a_label = "{}-W{:02d}".format(*weeks.a.date().isocalendar()[:2])
    doc = client.get("/api/v1/report", params={"week": a_label}).json()
    ded = _rows(doc)["dedicated"]
    assert ded["change_logon_p95_pct"] is None and ded["prev_availability_pct"] is None
    assert doc["next_week"] == weeks.b_label
    assert doc["summary"][0].startswith("No mode has logon p95 figures for both weeks")
    cur = client.get("/api/v1/report", params={"week": "current"}).json()
    assert cur["complete"] is False and cur["next_week"] is None
    assert all(r["samples"] == 0 for r in cur["rows"])  # only last week's figures to compare
    assert _rows(cur)["dedicated"]["prev_logon_p95_ms"] == pytest.approx(60.0, rel=0.0197)


@pytest.mark.parametrize(
    ("params", "status", "needle"),
    [
        ({"week": "last"}, 422, "week: 'last' is not an ISO week"),
        ({"week": "2026-W99"}, 422, "has no ISO week 99"),
        ({"week": "2999-W01"}, 422, "has not started yet"),
        ({"slower": "0"}, 422, "slower"),
        ({"slower": "ten"}, 422, "slower"),
        ({"drop": "-1"}, 422, "drop"),
        ({"target": "nope"}, 404, "no target named 'nope'"),
    ],
)
def test_bad_input_is_a_4xx_naming_the_parameter(
    client: TestClient, params: dict[str, str], status: int, needle: str
) -> None:
    for path in ("/api/v1/report", "/api/v1/report.csv"):
        res = client.get(path, params=params)
        assert res.status_code == status, (path, res.text)
        assert needle in res.json()["detail"]


# ---- the page, its print stylesheet and the CSV ----


class _Table(HTMLParser):
    """The text of each cell of the table with the given id."""

    def __init__(self, table_id: str) -> None:
        super().__init__()
        self.table_id, self.inside, self.cell = table_id, False, False
        self.rows: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and ("id", self.table_id) in attrs:
            self.inside = True
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag in ("td", "th"):
            self.cell = True
            self.rows[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.inside = False
        elif tag in ("td", "th"):
            self.cell = False

    def handle_data(self, data: str) -> None:
        if self.inside and self.cell:
            self.rows[-1][-1] += data


def test_weekly_rollups_give_the_same_report_as_per_series_summaries(
    client: TestClient, weeks: Weeks
) -> None:
    # build_report reads whole weeks from the store's weekly(probe=); the path it replaced
    # (summary() per series, merged 1-hour rollups) must give the same figures
    engine = client.app.state.engine  # type: ignore[attr-defined]
    with engine.connect() as conn:
        targets = load_targets(conn)
        week = parse_week(weeks.b_label, datetime.now(UTC))
        got = build_report(conn, targets, week)
        owner = {
            s.id: m.id
            for t in targets
            for m in t.modes
            for s in m.series
            if s.probe == overview_probe(m)
        }
        old_cur = _week_stats(conn, owner, week.start, week.end)
        old_prev = _week_stats(conn, owner, week.start - WEEK, week.start)
    mode_ids = {(t.name, m.name): m.id for t in targets for m in t.modes}
    assert {r.mode for r in got.rows if r.target == "weekly"} == {"dedicated", "shared"}
    for r in got.rows:
        c, p = old_cur[mode_ids[(r.target, r.mode)]], old_prev[mode_ids[(r.target, r.mode)]]
        assert (r.samples, r.ok, r.failed, r.skipped) == (c.n, c.ok, c.failed, c.skipped)
        assert r.logon_p50_ms == pytest.approx(c.logon_p50, rel=1e-6)
        assert r.logon_p95_ms == pytest.approx(c.logon_p95, rel=1e-6)
        assert r.ping_p95_ms == pytest.approx(c.ping_p95, rel=1e-6)
        assert r.prev_logon_p95_ms == pytest.approx(p.logon_p95, rel=1e-6)
        assert r.prev_ping_p95_ms == pytest.approx(p.ping_p95, rel=1e-6)
        assert r.prev_availability_pct == pytest.approx(
            math.floor((p.availability or 0) * 100 + 1e-9) / 100
        )


def test_csv_holds_exactly_the_page_table(client: TestClient, weeks: Weeks) -> None:
    page = client.get("/report", params={"week": weeks.b_label}, headers={"accept": "text/html"})
    assert page.status_code == 200, page.text
    parser = _Table("report-table")
    parser.feed(page.text)
    res = client.get("/api/v1/report.csv", params={"week": weeks.b_label})
    assert res.status_code == 200
    assert res.headers["content-type"].startswith("text/csv")
    assert f"connwatch-report-{weeks.b_label}.csv" in res.headers["content-disposition"]
    rows = list(csv.reader(io.StringIO(res.text)))
    assert rows == parser.rows
    assert rows[0][:4] == ["Target", "Mode", "Probe", "Samples"]
    ded = next(r for r in rows if r[:2] == ["weekly", "dedicated"])
    assert ded[6] == "96.98"
    assert ded[7] == "▼ -3.01 pts lower (worse)"
    assert re.fullmatch(r"▲ \+(1[89]|2[01])\.\d % slower \(worse\)", ded[10])


def test_page_has_summary_week_picker_nav_and_print_stylesheet(
    client: TestClient, weeks: Weeks
) -> None:
    page = client.get("/report", params={"week": weeks.b_label}, headers={"accept": "text/html"})
    html = page.text
    assert 'href="/report" aria-current="page">Report</a>' in html
    assert f'type="week" name="week" value="{weeks.b_label}"' in html
    assert "week=current" in html and "errors and timeouts count as unavailable" in html
    assert "1 of 2 modes got slower by more than 10 %" in html
    assert '<table id="error-table">' in html and "TNS-12520" in html
    css_href = re.search(r'href="(/static/report\.css\?v=\w+)"', html)
    assert css_href
    css = client.get(css_href.group(1)).text
    assert "@media print" in css and "display: none" in css.split("@media print", 1)[1]
    bad = client.get("/report", params={"week": "x"}, headers={"accept": "text/html"})
    assert bad.status_code == 422 and "not an ISO week" in bad.text


@pytest.mark.browser
def test_report_page_in_chromium_prints_to_pdf(live_server: LiveServer, page: Any) -> None:
    weeks = seed_weeks(live_server.engine, live_server.vault)
    page.goto(f"{live_server.url}/report?week={weeks.b_label}")
    page.wait_for_selector("#report-table")
    page.screenshot(path="test-artifacts/report.png", full_page=True)
    rows = page.locator("#report-table tbody tr")
    row = rows.filter(has_text="weekly").filter(has_text="dedicated")
    assert "slower (worse)" in row.inner_text()
    page.emulate_media(media="print")
    assert page.locator("header.top").is_hidden()
    assert page.locator("form.filters").is_hidden()
    page.screenshot(path="test-artifacts/report-print.png", full_page=True)
    page.emulate_media(media="screen")
    pdf = page.pdf(format="A4", landscape=True)
    assert pdf[:5] == b"%PDF-" and len(pdf) > 5000
    Path("test-artifacts/report.pdf").write_bytes(pdf)
    page.click("a[data-week-link=current]")
    page.wait_for_url(re.compile(r"week=current"))
    page.wait_for_selector("#report .badge")
    assert page.console_errors == []
