"""Target-page time charts in headless Chromium: the axis is the window picked (now at the
right edge), points sit mid-bucket, gaps and silence show, small multiples past two modes,
the overlay on request, error markers explained, the logon's round trips stacked in wire
order. Screenshots at desktop and phone size go to test-artifacts/."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.alerts.annotations import AnnotationSpec, add_annotation
from app.samples import LOGON_PHASE_ORDER, Sample, SampleStatus
from app.store.write.ingest import write_samples
from app.targets.schema import parse_targets
from app.targets.sync import import_targets
from app.web.views.lookups import load_targets
from tests.fixtures.browser import ARTIFACTS, LiveServer
from tests.web.data import PHASE_SHARES, Seeded

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def ready(page: Any, selector: str) -> None:
    page.wait_for_selector(
        f"{selector}[data-state=ready]:not([aria-busy]), {selector}[data-state=empty]",
        timeout=20000,
    )


def axis_range_ms(page: Any, selector: str) -> tuple[float, float]:
    """The x axis range as epoch ms: Plotly holds local wall-clock strings; the browser
    (time zone Europe/Paris) turns them back into instants."""
    a, b = page.eval_on_selector(
        selector,
        "el => el.layout.xaxis.range.map(s => new Date(String(s).replace(' ', 'T')).getTime())",
    )
    return float(a), float(b)


@pytest.fixture(scope="module")
def quiet(live_server: LiveServer, live_data: Seeded) -> datetime:
    """A target whose samples stop 20 minutes before now (its last one at ``stopped``)."""
    with live_server.engine.begin() as conn:
        import_targets(
            conn,
            parse_targets(
                "targets:\n  - {name: quiet, kind: oracle, dsn: 'q:1521/Q', username: u, "
                "modes: [{name: dedicated}]}\n",
                "t",
            ),
            live_server.vault,
        )
        sid = next(
            s.id for t in load_targets(conn) if t.name == "quiet" for m in t.modes for s in m.series
        )
        now = datetime.now(UTC).replace(microsecond=0)
        stopped = now - timedelta(minutes=20)
        samples = [
            Sample(
                series_id=sid,
                scheduled_at=stopped - timedelta(seconds=10 * i),
                started_at=stopped - timedelta(seconds=10 * i),
                status=SampleStatus.OK,
                total_ns=50_000_000,
                logon_ns=40_000_000,
            )
            for i in range(120)
        ]
        write_samples(conn, samples)
    return stopped


def test_the_axis_spans_the_chosen_window_with_now_at_the_right(
    live_server: LiveServer, live_data: Seeded, page: Any
) -> None:
    # two hours of data in a 24 h window: the axis is still 24 h, ending now
    page.goto(live_server.url + "/target/sales?range=24h")
    ready(page, "#chart-logon")
    a, b = axis_range_ms(page, "#chart-logon")
    now_ms = datetime.now(UTC).timestamp() * 1000
    assert abs((b - a) - 24 * 3600 * 1000) < 2000
    assert abs(b - now_ms) < 120_000
    # each point sits mid-bucket: the first x is its bucket start + step/2
    first_x, first_t, step_s = page.evaluate(
        """async () => {
          const el = document.querySelector('#chart-logon');
          const r = await fetch('/api/v1/targets/sales/timeseries?phase=logon&range=24h');
          const d = await r.json();
          const line = el.data.find(t => (t.name || '').endsWith('p50'));
          return [new Date(line.x[0].replace(' ', 'T')).getTime(),
                  Date.parse(d.modes[0].t[0]), d.step_s];
        }"""
    )
    assert abs(first_x - (first_t + step_s * 500)) < 1500
    shot(page, "charts-24h-desktop")
    assert page.console_errors == []


def test_a_failing_target_shows_the_whole_hour(
    live_server: LiveServer, live_data: Seeded, page: Any
) -> None:
    page.goto(live_server.url + "/target/hr?range=1h")
    ready(page, "#chart-logon")
    a, b = axis_range_ms(page, "#chart-logon")
    assert abs((b - a) - 3600 * 1000) < 2000
    # the last 10 minutes failed: the p50 line has no value there (a gap, never interpolated)
    tail = page.eval_on_selector(
        "#chart-logon",
        "el => { const l = el.data.find(t => (t.name || '').endsWith('p50'));"
        " return l.y.slice(-20); }",
    )
    assert all(v is None for v in tail)
    marks = page.eval_on_selector(
        "#chart-logon", "el => el.data.filter(t => (t.name || '').endsWith('errors'))[0].text"
    )
    assert any("ORA-12541: no listener" in t for t in marks)
    assert page.console_errors == []


def test_silence_is_shown_as_silence(live_server: LiveServer, quiet: datetime, page: Any) -> None:
    page.goto(live_server.url + "/target/quiet?range=1h")
    ready(page, "#chart-logon")
    notes = page.eval_on_selector(
        "#chart-logon", "el => (el.layout.annotations || []).map(a => a.text)"
    )
    assert any(n.startswith("no samples since") for n in notes), notes
    shapes = page.eval_on_selector("#chart-logon", "el => (el.layout.shapes || []).length")
    assert shapes == 1
    page.set_viewport_size(PHONE)
    shot(page, "charts-silent-phone")
    assert page.console_errors == []


def test_more_than_two_modes_get_one_small_chart_each(
    live_server: LiveServer, live_data: Seeded, page: Any
) -> None:
    page.goto(live_server.url + "/target/sales?range=6h")
    ready(page, "#chart-logon")
    got = page.eval_on_selector(
        "#chart-logon",
        """el => ({layout: el.dataset.layout,
                   axes: [...new Set(el.data.map(t => t.yaxis))].sort(),
                   ranges: ['yaxis', 'yaxis2', 'yaxis3']
                           .map(k => JSON.stringify(el.layout[k].range)),
                   panels: el.layout.annotations.filter(a => (a.name || '').startsWith('panel-'))
                           .map(a => a.name),
                   errorsOn: el.data.filter(t => (t.name || '').endsWith('errors'))
                           .map(t => t.name + '@' + t.yaxis)})""",
    )
    assert got["layout"] == "split"
    assert got["axes"] == ["y", "y2", "y3"]
    assert len(set(got["ranges"])) == 1  # shared y axis: panels compare at a glance
    assert got["panels"] == ["panel-dedicated", "panel-shared", "panel-pooled"]
    assert got["errorsOn"] == ["shared errors@y2"]  # in shared's own panel, hiding nothing
    # the box is as tall as the panels need: nothing spills over the next chart
    box, wanted, next_top = page.evaluate(
        """() => { const el = document.querySelector('#chart-logon');
                   return [el.getBoundingClientRect().height, el.layout.height,
                           document.querySelector('#h-ping').getBoundingClientRect().top
                           - el.getBoundingClientRect().bottom]; }"""
    )
    assert box >= wanted - 2 and next_top >= 0
    shot(page, "charts-split-desktop")
    page.set_viewport_size(PHONE)
    page.wait_for_timeout(500)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shot(page, "charts-split-phone")
    assert page.console_errors == []


def test_the_overlay_is_an_option_kept_in_the_url(
    live_server: LiveServer, live_data: Seeded, page: Any
) -> None:
    page.goto(live_server.url + "/target/sales?range=6h")
    ready(page, "#chart-logon")
    page.select_option("select[name=layout]", "overlay")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url("**layout=overlay**")
    ready(page, "#chart-logon")
    got = page.eval_on_selector(
        "#chart-logon",
        "el => ({layout: el.dataset.layout, axes: [...new Set(el.data.map(t => t.yaxis))],"
        " errRows: el.data.filter(t => (t.name || '').endsWith('errors')).map(t => t.y[0])})",
    )
    assert got["layout"] == "overlay" and got["axes"] == ["y"]
    assert "range=6h" in page.url
    shot(page, "charts-overlay-desktop")
    # one or two modes: overlaid by default
    page.goto(live_server.url + "/target/hr?range=6h")
    ready(page, "#chart-logon")
    assert page.eval_on_selector("#chart-logon", "el => el.dataset.layout") == "overlay"
    assert page.console_errors == []


def test_logon_round_trips_are_stacked_in_wire_order(
    live_server: LiveServer, live_data: Seeded, page: Any
) -> None:
    page.goto(live_server.url + "/target/sales?range=6h")
    ready(page, "#chart-phases")
    got = page.eval_on_selector(
        "#chart-phases",
        "el => ({state: el.dataset.state,"
        " first: el.data.filter(t => t.yaxis === 'y').map(t => [t.name, t.stackgroup]),"
        " axes: [...new Set(el.data.map(t => t.yaxis))].length})",
    )
    assert got["state"] == "ready" and got["axes"] == 3
    names = [n for n, _ in got["first"]]
    assert names == list(PHASE_SHARES)
    assert names == sorted(names, key=lambda n: LOGON_PHASE_ORDER.index(n))
    assert {g for _, g in got["first"]} == {"s0"}
    # the API says the same order, and the medians add up to about the logon (60 ms)
    data = page.evaluate(
        "async () => (await fetch('/api/v1/targets/sales/logon-phases?range=6h"
        "&modes=dedicated')).json()"
    )
    assert data["phases"] == list(PHASE_SHARES)
    total = sum(col[-2] for col in data["modes"][0]["phases"].values())
    assert 55 < total < 66
    shot(page, "charts-phases-desktop")
    assert page.console_errors == []


@pytest.fixture(scope="module")
def busy(live_server: LiveServer, live_data: Seeded) -> int:
    """A target with three modes and eight annotations a minute apart (a deploy pipeline
    that writes one per step): returns how many events its last hour has."""
    with live_server.engine.begin() as conn:
        import_targets(
            conn,
            parse_targets(
                "targets:\n  - {name: busy, kind: oracle, dsn: 'b:1521/B', username: u, "
                "modes: [{name: dedicated}, {name: shared}, {name: pooled}]}\n",
                "t",
            ),
            live_server.vault,
        )
        ids = [s.id for t in load_targets(conn, "busy") for m in t.modes for s in m.series]
        now = datetime.now(UTC).replace(microsecond=0)
        write_samples(
            conn,
            [
                Sample(
                    series_id=sid,
                    scheduled_at=now - timedelta(seconds=20 * i),
                    started_at=now - timedelta(seconds=20 * i),
                    status=SampleStatus.OK,
                    total_ns=50_000_000,
                    logon_ns=(40 + i % 7) * 1_000_000,
                )
                for sid in ids
                for i in range(150)
            ],
        )
        for k in range(8):
            add_annotation(
                conn,
                AnnotationSpec(
                    text=f"deploy step {k}: DRCP pool resized from 40 to 80 servers",
                    target="busy",
                    at=now - timedelta(minutes=20 - k),
                ),
                author="pipeline",
                source="api",
                now=now,
            )
    return 8


@pytest.mark.parametrize("size", [None, PHONE], ids=["desktop", "phone"])
def test_event_labels_never_overlap(
    live_server: LiveServer, busy: int, page: Any, size: dict[str, int] | None
) -> None:
    if size:
        page.set_viewport_size(size)
    page.goto(live_server.url + "/target/busy?range=1h")
    ready(page, "#chart-logon")
    page.wait_for_function(
        "() => document.querySelector('#chart-logon').dataset.eventsDrawn === '8'", timeout=20000
    )
    got = page.eval_on_selector(
        "#chart-logon",
        """el => {
          const box = el.getBoundingClientRect();
          const texts = [...el.querySelectorAll('g.annotation')]
            .map(g => [g.querySelector('text.annotation-text'), g.getBoundingClientRect()])
            .filter(([t, r]) => t && t.textContent.trim() && r.width > 0);
          return {
            rects: texts.map(([t, r]) => [t.textContent, r.left, r.top, r.right, r.bottom]),
            top: box.top,
            glyphs: el.layout.annotations.filter(a => a.name === 'event-annotation')
              .map(a => a.hovertext).join('<br>').split('<br>'),
            labels: el.layout.annotations.filter(a => a.name === 'event-label-annotation').length,
          };
        }""",
    )
    # every event is marked (marks too close to tell apart are one), its whole text on hover
    assert len(got["glyphs"]) == busy
    assert all("DRCP pool resized from 40 to 80 servers" in h for h in got["glyphs"])
    assert got["labels"] >= 2  # some have room for their text
    rects = got["rects"]
    for i, a in enumerate(rects):
        assert a[2] >= got["top"] - 1, a  # inside the chart, not cut off above it
        for b in rects[i + 1 :]:
            apart = a[3] <= b[1] + 1 or b[3] <= a[1] + 1 or a[4] <= b[2] + 1 or b[4] <= a[2] + 1
            assert apart, (a, b)
    # the round-trips chart has nothing to stack (no phases in these samples): it says so,
    # it does not fail binding the zoom of a figure never drawn
    page.wait_for_selector("[data-chart=phases][data-state]:not([aria-busy])", timeout=20000)
    assert page.eval_on_selector("[data-chart=phases]", "el => el.dataset.state") == "empty"
    shot(page, f"charts-events-{'phone' if size else 'desktop'}")
    assert page.console_errors == []
