"""Every page at phone size (390x844) fits the screen (nothing wider than the viewport),
and at desktop size; screenshots of both go to test-artifacts/. Plus the behaviour the
pages gained for people coming back to them: auto-refresh that can be paused, heartbeats
in seconds ago, the ECDF cut at p99.5 with the outlier named."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.fixtures.browser import ARTIFACTS, LiveServer
from tests.web.data import Seeded

pytestmark = pytest.mark.browser

PAGES = [
    "/",
    "/target/sales?range=6h",
    "/target/sales/heatmap",
    "/compare?target=sales",
    "/spikes?range=24h",
    "/samples?target=hr&status=failed",
    "/samples",
    "/targets",
    "/targets/new?kind=oracle",
    "/targets/sales/edit",
    "/agents",
    "/errors",
    "/docs",
    "/alerts",
    "/alerts/rules",
    "/alerts/contacts",
    "/alerts/maintenance",
    "/report/subscriptions",
    "/admin/users",
    "/admin/audit",
]


def _settle(page: Any) -> None:
    page.wait_for_load_state("networkidle")
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-chart]')].every(el => el.dataset.state)",
        timeout=20000,
    )


@pytest.mark.parametrize("path", PAGES)
def test_every_page_fits_a_phone(
    live_server: LiveServer, live_data: Seeded, page: Any, path: str
) -> None:
    name = re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_") or "overview"
    ARTIFACTS.mkdir(exist_ok=True)
    if path.startswith("/admin/"):
        live_server.login(page, "admin")  # users, tokens, sessions and the audit log
    elif path.startswith(("/targets/", "/alerts/", "/report/")):
        live_server.login(page, "operator")  # forms and settings need an operator
    page.set_viewport_size({"width": 1440, "height": 900})
    assert page.goto(live_server.url + path).status == 200
    _settle(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1440
    page.screenshot(path=str(ARTIFACTS / f"desktop-{name}.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    _settle(page)
    page.wait_for_timeout(300)  # charts resize to the new width
    width = page.evaluate("document.documentElement.scrollWidth")
    page.screenshot(path=str(ARTIFACTS / f"phone-{name}.png"), full_page=True)
    assert width <= 390, f"{path} is {width} px wide on a 390 px phone"
    # a card table's caption reads as a paragraph above the cards (under them: class below),
    # not a column of words beside them
    captions = page.evaluate(
        """() => [...document.querySelectorAll('table.cards')]
             .filter(t => t.caption && !t.caption.classList.contains('sr-only'))
             .map(t => { const c = t.caption.getBoundingClientRect(),
                            b = t.tBodies[0].getBoundingClientRect(),
                            rows = t.tBodies[0].rows,
                            last = rows.length ? rows[rows.length - 1].getBoundingClientRect() : b;
                         const first = rows.length ? rows[0].getBoundingClientRect() : b;
                         const below = t.caption.classList.contains('below');
                         const placed = below ? c.top >= last.bottom - 1
                                              : c.bottom <= first.top + 1;
                         return [t.id, c.width / b.width, placed]; })"""
    )
    for table, share, placed in captions:
        assert share > 0.9 and placed, (path, table, share, placed)
    assert page.console_errors == []


def test_spikes_and_agents_refresh_and_the_refresh_pauses(
    live_server: LiveServer, live_data: Seeded, page: Any
) -> None:
    page.goto(live_server.url + "/spikes?range=24h")
    toggle = page.locator("[data-refresh-toggle]")
    assert toggle.inner_text().startswith("Pause auto-refresh")
    toggle.click()
    assert toggle.get_attribute("aria-pressed") == "true"
    assert toggle.inner_text() == "Resume auto-refresh"
    page.goto(live_server.url + "/agents")  # paused for the tab, on every page
    assert page.locator("[data-refresh-toggle]").get_attribute("aria-pressed") == "true"
    page.locator("[data-refresh-toggle]").click()
    page.evaluate("document.querySelector('[data-refresh]').dataset.refresh")
    assert page.locator("#agents-live[data-refresh='10']").count() == 1
    page.wait_for_function(
        "() => Number(document.querySelector('#agents-live').dataset.refreshed || 0) >= 1",
        timeout=25000,
    )
    assert page.console_errors == []


def test_the_ecdf_axis_ends_at_p99_5_and_names_the_outlier(
    live_server: LiveServer, live_data: Seeded, page: Any
) -> None:
    page.goto(live_server.url + "/compare?target=sales&range=6h")
    _settle(page)
    fig = page.evaluate(
        """() => {
          const xs = Array.from({length: 1000}, (_, i) => 80 + i * 0.01);
          xs.push(1600);
          const ys = xs.map((_, i) => (i + 1) / xs.length);
          return CW.builders.ecdf({phase: 'logon', modes: [
            {name: 'dedicated', color: '#0072B2', dash: 'solid', ecdf_x: xs, ecdf_y: ys}]});
        }"""
    )
    assert fig["layout"]["xaxis"]["range"][1] < 100
    note = fig["layout"]["annotations"][0]["text"]
    assert note.startswith("axis cut at p99.5") and "1600.0 ms" in note
    assert page.console_errors == []
