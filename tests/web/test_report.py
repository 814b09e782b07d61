"""The Report page and API on hand-built weeks with known answers: availability (skipped not
counted), week-over-week verdicts, one probe kind, error breakdown, CSV = table, the
server-rendered PDF read back with pdftotext, strict validation, a page without console
errors."""

from __future__ import annotations

import csv
import io
import math
import re
import subprocess
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.reports.content.build import build_report
from app.reports.content.period import PeriodError, parse_period
from app.store.read.timeseries import summary
from app.web.views.lookups import load_targets
from app.web.views.overview import overview_probe
from tests.fixtures.browser import ARTIFACTS, LiveServer
from tests.web.weekly_data import B_AVAILABILITY, PER_WEEK, Weeks, seed_weeks


@pytest.fixture
def client(weekly_env: tuple[TestClient, Weeks]) -> TestClient:
    return weekly_env[0]


@pytest.fixture
def weeks(weekly_env: tuple[TestClient, Weeks]) -> Weeks:
    return weekly_env[1]


def _rows(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["mode"]: r for r in doc["rows"] if r["target"] == "weekly"}


# ---- parse_period ----


def test_named_and_numbered_periods() -> None:
    now = datetime(2026, 11, 21, 7, 0, tzinfo=UTC)  # Saturday of 2026-W47
    assert parse_period(None, now) is None and parse_period(" ", now) is None  # data decides
    w = parse_period("last", now)
    assert w is not None and (w.label, w.complete) == ("2026-W46", True)
    assert (w.start, w.end) == (
        datetime(2026, 11, 9, tzinfo=UTC),
        datetime(2026, 11, 16, tzinfo=UTC),
    )
    cur = parse_period("current", now)
    assert cur is not None and (cur.label, cur.complete, cur.end) == ("2026-W47", False, now)
    two = parse_period("2021-W01", now)
    assert two is not None and two.start == datetime(2021, 1, 4, tzinfo=UTC)
    m = parse_period("2026-02", now)
    assert m is not None and (m.label, m.kind, m.complete) == ("2026-02", "month", True)
    assert m.end == datetime(2026, 3, 1, tzinfo=UTC) and m.previous().label == "2026-01"
    assert parse_period("current-month", now).label == "2026-11"  # type: ignore[union-attr]
    assert parse_period("last-month", now).label == "2026-10"  # type: ignore[union-attr]
    jan = parse_period("2026-01", now)
    assert jan is not None and jan.previous().label == "2025-12"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("2026-46", "there is no month 46"),
        ("week47", "not an ISO week"),
        ("2025-W53", "has no ISO week 53"),
        ("2026-W00", "has no ISO week 0"),
        ("2026-W48", "has not started yet"),
        ("2026-12", "has not started yet"),
        ("1999-W10", "before 2000"),
    ],
)
def test_bad_periods_are_named(value: str, message: str) -> None:
    with pytest.raises(PeriodError, match=message):
        parse_period(value, datetime(2026, 11, 21, tzinfo=UTC))


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


def test_week_over_week_sign_size_and_verdict(client: TestClient, weeks: Weeks) -> None:
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
    # every block of B is slower than every block of A: beyond resolution and noise
    assert ded["logon_change"]["word"] == "slower"
    assert ded["logon_change"]["ci_low"] > 4.0
    assert ded["ping_change"]["word"] == "slower"
    assert sh["logon_change"]["word"] == "faster" and sh["logon_change"]["ci_high"] < -4.0
    assert sh["ping_change"]["word"] == "no clear change"  # 0 %: within the resolution
    assert "resolution" in sh["ping_change"]["reason"]
    assert ded["availability_change"]["word"] == "lower"
    assert sh["availability_change"]["word"] == "no clear change"
    # the summary names the mode that got slower, and only it; then the faster one
    assert doc["summary"][0].startswith("1 of 2 modes got slower week over week")
    assert "weekly/dedicated (+" in doc["summary"][0]
    assert "weekly/shared" not in doc["summary"][0]
    assert doc["summary"][1] == "1 of 2 modes got faster: weekly/shared (-10 %)."
    assert any("lower availability" in x and "weekly/dedicated (-3.01 pts)" in x
               for x in doc["summary"])  # fmt: skip


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
    assert ded["logon_change"]["word"] == "no previous period"
    cur = client.get("/api/v1/report", params={"week": "current"}).json()
    assert cur["complete"] is False and cur["next_week"] is None
    assert all(r["samples"] == 0 for r in cur["rows"])  # only last week's figures to compare
    assert _rows(cur)["dedicated"]["prev_logon_p95_ms"] == pytest.approx(60.0, rel=0.0197)


@pytest.mark.parametrize(
    ("params", "status", "needle"),
    [
        ({"week": "lastweek"}, 422, "week: 'lastweek' is not an ISO week"),
        ({"week": "2026-W99"}, 422, "has no ISO week 99"),
        ({"week": "2999-W01"}, 422, "has not started yet"),
        ({"week": "x" * 21}, 422, "week"),
        ({"labels": "env"}, 422, "labels: label 'env' is not key=value"),
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


def test_hourly_blocks_give_the_same_figures_as_the_stores_summary(
    client: TestClient, weeks: Weeks
) -> None:
    # the report merges 1-hour rollups per 6-hour block; the store's summary() over the
    # same week (merged rollups per series) must give the same figures
    engine = client.app.state.engine  # type: ignore[attr-defined]
    with engine.connect() as conn:
        targets = load_targets(conn)
        week = parse_period(weeks.b_label, datetime.now(UTC))
        assert week is not None
        got = build_report(conn, week)
        owner = {
            s.id: (t.name, m.name)
            for t in targets
            for m in t.modes
            for s in m.series
            if s.probe == overview_probe(m)
        }
        ids = list(owner)
        logon = {
            owner[p.series_id]: p
            for p in summary(conn, ids, week.start, week.end, phase="logon").points
        }
        ping = {
            owner[p.series_id]: p
            for p in summary(conn, ids, week.start, week.end, phase="ping").points
        }
    assert {r.mode for r in got.rows if r.target == "weekly"} == {"dedicated", "shared"}
    for r in got.rows:
        c, q = logon[(r.target, r.mode)], ping[(r.target, r.mode)]
        assert (r.samples, r.ok, r.failed, r.skipped) == (
            c.n,
            c.n_ok,
            c.n_error + c.n_timeout,
            c.n_skipped,
        )
        assert r.logon_p50_ms == pytest.approx(c.p50_ms, rel=1e-6)
        assert r.logon_p95_ms == pytest.approx(c.p95_ms, rel=1e-6)
        assert r.ping_p95_ms == pytest.approx(q.p95_ms, rel=1e-6)
        ran = c.n - c.n_skipped
        assert r.availability_pct == pytest.approx(math.floor(10000.0 * c.n_ok / ran + 1e-9) / 100)


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
    assert ded[7] == "▼ -3.01 pts lower"
    assert re.fullmatch(r"▲ \+(1[89]|2[01])\.\d % slower", ded[10])
    sh = next(r for r in rows if r[:2] == ["weekly", "shared"])
    assert sh[12] == "≈ +0.0 % no clear change"


def test_page_has_summary_week_picker_nav_and_print_stylesheet(
    client: TestClient, weeks: Weeks
) -> None:
    page = client.get("/report", params={"week": weeks.b_label}, headers={"accept": "text/html"})
    html = page.text
    assert 'href="/report" aria-current="page">Report</a>' in html
    assert f'name="week" value="{weeks.b_label}"' in html
    assert "week=current" in html and "errors and timeouts count as unavailable" in html
    assert "1 of 2 modes got slower week over week" in html
    assert '<table id="error-table">' in html and "TNS-12520" in html
    assert 'aria-label="weekly: logon p95 per week"' in html  # the trend chart, server-side SVG
    assert 'id="incident-table"' in html  # B's eight TNS-12520 in a row are an outage
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
    assert "% slower" in row.inner_text()
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
    # a phone: the page is never wider than the screen; the table scrolls in its own box
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/report?week={weeks.b_label}")
    page.wait_for_selector("#report-table")
    page.screenshot(path="test-artifacts/report-phone.png", full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1400, "height": 1000})


def _pdftotext(pdf: bytes, tmp_path: Path) -> str:
    src = tmp_path / "r.pdf"
    src.write_bytes(pdf)
    out = subprocess.run(
        ["pdftotext", "-layout", str(src), "-"], capture_output=True, check=True, timeout=60
    )
    return out.stdout.decode()


def test_server_pdf_has_the_apis_figures_footer_and_page_numbers(
    client: TestClient, weeks: Weeks, tmp_path: Path
) -> None:
    doc = client.get("/api/v1/report", params={"week": weeks.b_label}).json()
    res = client.get("/report.pdf", params={"week": weeks.b_label})
    assert res.status_code == 200, res.text
    assert res.headers["content-type"] == "application/pdf"
    assert res.content[:5] == b"%PDF-"
    text = _pdftotext(res.content, tmp_path)
    ded = _rows(doc)["dedicated"]
    for figure in (f"{ded['availability_pct']:.2f}", f"{ded['logon_p95_ms']:.1f}",
                   f"{ded['ping_p95_ms']:.2f}", f"{ded['samples']}"):  # fmt: skip
        assert figure in text
    assert f"Weekly report {weeks.b_label}" in text
    pages = int(re.findall(r"Page \d+ of (\d+)", text)[0])
    assert pages >= 2 and f"Page {pages} of {pages}" in text
    footer = f"connwatch · Weekly report {weeks.b_label} · generated "
    assert text.count(footer) == pages  # on every page
    assert "What the numbers mean" in text and "TNS-12520" in text
    letter = client.get("/report.pdf", params={"week": weeks.b_label, "paper": "letter"})
    info = tmp_path / "l.pdf"
    info.write_bytes(letter.content)
    sizes = subprocess.run(["pdfinfo", str(info)], capture_output=True, check=True).stdout
    assert b"792 x 612 pts (letter)" in sizes  # landscape
    a4 = tmp_path / "a4.pdf"
    a4.write_bytes(res.content)
    assert b"(A4)" in subprocess.run(["pdfinfo", str(a4)], capture_output=True, check=True).stdout
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "report-server.pdf").write_bytes(res.content)
    subprocess.run(
        ["pdftoppm", "-r", "70", "-png", str(a4), str(ARTIFACTS / "report-server-page")],
        check=True, timeout=120,
    )  # fmt: skip
    assert list(ARTIFACTS.glob("report-server-page-*.png"))
