"""The dashboard in headless Chromium: pages load without console errors, charts carry data,
the range picker and zoom change the window, a target is added through the form."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pytest

from app.targets.schema import parse_targets
from app.targets.sync import import_targets
from tests.fixtures.browser import LiveServer
from tests.web.data import SECRET_PW, Seeded

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def data(live_data: Seeded) -> Seeded:
    return live_data


def _chart_ready(page: Any, selector: str) -> dict[str, Any]:
    page.wait_for_selector(
        f"{selector}[data-state=ready], {selector}[data-state=empty]", timeout=15000
    )
    info: dict[str, Any] = page.eval_on_selector(
        selector,
        "el => ({state: el.dataset.state, resolution: el.dataset.resolution, "
        "traces: (el.data || []).length, "
        "points: (el.data || [])"
        ".reduce((a, t) => a + (t.y || []).filter(v => v !== null).length, 0)})",
    )
    return info


def test_overview_loads_without_console_errors(
    live_server: LiveServer, data: Seeded, page: Any
) -> None:
    page.goto(live_server.url + "/")
    page.wait_for_selector("#overview-table")
    assert page.locator("tr[data-state=down]").count() == 1
    first_time = page.locator("#overview time").first
    assert first_time.get_attribute("title").endswith("UTC")
    assert page.locator("#tzname").inner_text() == "Europe/Paris"
    assert SECRET_PW not in page.content()
    assert page.console_errors == []


def test_target_page_charts_carry_data(live_server: LiveServer, data: Seeded, page: Any) -> None:
    page.goto(live_server.url + "/target/sales?range=6h")
    for phase in ("logon", "ping", "query", "logoff"):
        info = _chart_ready(page, f"#chart-{phase}")
        assert info["state"] == "ready", phase
        assert info["points"] > 50, phase
    assert _chart_ready(page, "#chart-instance")["state"] == "ready"
    assert page.console_errors == []


def _axis_span_s(page: Any, selector: str) -> float:
    a, b = page.eval_on_selector(
        selector,
        "el => el.layout.xaxis.range.map(s => new Date(String(s).replace(' ', 'T')).getTime())",
    )
    return (float(b) - float(a)) / 1000


def _step_s(page: Any, selector: str) -> float:
    """The bucket width of the drawn data: the gap between two neighbouring points."""
    xs = page.eval_on_selector(
        selector,
        "el => el.data.find(t => (t.name || '').endsWith('p50')).x"
        ".filter(x => x !== null).slice(0, 3)"
        ".map(s => new Date(String(s).replace(' ', 'T')).getTime())",
    )
    return (xs[1] - xs[0]) / 1000


def test_range_picker_changes_the_url_and_the_resolution(
    live_server: LiveServer, data: Seeded, page: Any
) -> None:
    page.goto(live_server.url + "/target/sales?range=1h")
    first = _chart_ready(page, "#chart-logon")
    assert first["resolution"] == "raw"
    assert abs(_axis_span_s(page, "#chart-logon") - 3600) < 2
    fine = _step_s(page, "#chart-logon")
    page.click("a[data-range='24h']")
    page.wait_for_url(re.compile(r"range=24h"))
    second = _chart_ready(page, "#chart-logon")
    assert second["state"] == "ready"
    assert abs(_axis_span_s(page, "#chart-logon") - 86400) < 2  # the window picked, all of it
    assert _step_s(page, "#chart-logon") > fine  # wider buckets for the wider window
    assert page.locator("a[data-range='24h'][aria-current=true]").count() == 1
    assert page.locator("a[data-range='1h'][aria-current=true]").count() == 0
    assert page.console_errors == []


def test_zoom_fetches_a_finer_window_and_puts_it_in_the_url(
    live_server: LiveServer, data: Seeded, page: Any
) -> None:
    page.goto(live_server.url + "/target/sales?range=24h&layout=overlay")
    _chart_ready(page, "#chart-logon")
    coarse = _step_s(page, "#chart-logon")
    box = page.locator("#chart-logon .nsewdrag").first.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.93, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.97, y, steps=5)
    page.mouse.up()
    page.wait_for_url(re.compile(r"from=.*&to="))
    page.wait_for_function(  # a function, not an expression: the CSP forbids eval
        "() => document.querySelector('#chart-ping').dataset.state === 'ready' && "
        "!document.querySelector('#chart-ping').hasAttribute('aria-busy') && "
        "!document.querySelector('#chart-logon').hasAttribute('aria-busy')"
    )
    url = page.url
    assert "range=" not in url
    q = dict(re.findall(r"[?&](from|to)=([^&]+)", url))
    span = (
        datetime.fromisoformat(q["to"].replace("%3A", ":").replace("Z", "+00:00"))
        - datetime.fromisoformat(q["from"].replace("%3A", ":").replace("Z", "+00:00"))
    ).total_seconds()
    assert 0.02 * 86400 < span < 0.06 * 86400  # about the 4 % of the day that was dragged
    assert abs(_axis_span_s(page, "#chart-logon") - span) < 2  # the charts show that window
    assert abs(_axis_span_s(page, "#chart-ping") - span) < 2  # every chart of the page
    assert _step_s(page, "#chart-logon") < coarse  # finer buckets were fetched
    assert page.console_errors == []


def test_compare_page_draws_every_chart_and_says_it_in_words(
    live_server: LiveServer, data: Seeded, page: Any
) -> None:
    page.goto(live_server.url + "/compare?target=sales&range=6h")
    for chart in ("box", "ecdf", "daily"):
        assert _chart_ready(page, f"#chart-{chart}")["state"] == "ready", chart
    _chart_ready(page, "#chart-sweep")
    sentence = page.locator("[data-sentence=shared]").inner_text()
    assert "faster than dedicated-server" in sentence
    assert page.console_errors == []


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/target/sales",
        "/compare",
        "/spikes?range=24h",
        "/samples",
        "/targets",
        "/targets/new",
        "/targets/sales/edit",
        "/agents",
        "/docs",
    ],
)
def test_every_page_loads_without_console_errors(
    live_server: LiveServer, data: Seeded, page: Any, path: str
) -> None:
    if path.startswith("/targets/"):
        live_server.login(page, "operator")  # forms that change targets need an operator
    res = page.goto(live_server.url + path)
    assert res.status == 200
    page.wait_for_load_state("networkidle")
    page.wait_for_function(  # a function, not an expression: the CSP forbids eval
        "() => [...document.querySelectorAll('[data-chart]')].every(el => el.dataset.state)"
    )
    assert SECRET_PW not in page.content()
    assert page.console_errors == []


def test_spike_links_to_the_raw_samples_around_it(
    live_server: LiveServer, data: Seeded, page: Any
) -> None:
    page.goto(live_server.url + "/spikes?range=24h")
    outage = page.locator("#outages tr", has_text="hr").first
    outage.get_by_role("link", name="samples around it").click()
    page.wait_for_selector("#samples-table")
    assert "ORA-12541" in page.locator("#samples-table").inner_text()
    assert page.locator("#samples-table tr[data-status=error]").count() > 0
    assert page.locator("#samples-table tr[data-status=ok]").count() > 0  # the context before
    assert page.console_errors == []


def test_keyboard_reaches_the_navigation_and_the_range_picker(
    live_server: LiveServer, data: Seeded, page: Any
) -> None:
    page.goto(live_server.url + "/target/sales?range=6h")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    focused = []
    for _ in range(12):
        page.keyboard.press("Tab")
        focused.append(page.evaluate("document.activeElement.textContent.trim()"))
    assert "24h" in focused
    assert page.console_errors == []


def test_mode_filter_goes_into_the_url_and_the_charts(
    live_server: LiveServer, data: Seeded, page: Any
) -> None:
    page.goto(live_server.url + "/target/sales?range=6h")
    _chart_ready(page, "#chart-logon")
    page.locator("input[data-mode][value=pooled]").uncheck()
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(r"modes=dedicated%2Cshared"))
    _chart_ready(page, "#chart-logon")
    names = page.eval_on_selector("#chart-logon", "el => el.data.map(t => t.name || '')")
    assert any("shared" in n for n in names)
    assert not any("pooled" in n for n in names)
    assert "range=6h" in page.url
    assert page.console_errors == []


def test_overview_refreshes_itself(live_server: LiveServer, data: Seeded, page: Any) -> None:
    page.goto(live_server.url + "/?refresh=2")
    page.wait_for_selector("#overview-table")
    assert page.locator("text=late-arrival").count() == 0
    with live_server.engine.begin() as conn:
        import_targets(
            conn,
            parse_targets(
                "targets:\n  - {name: late-arrival, kind: postgres, dsn: 'h:5432/d', "
                "username: u, modes: [{name: direct}]}\n",
                "t",
            ),
            live_server.vault,
        )
    page.wait_for_selector("#overview-table >> text=late-arrival", timeout=10000)
    assert page.url.endswith("/?refresh=2")  # refreshed in place, not reloaded
    assert page.console_errors == []
