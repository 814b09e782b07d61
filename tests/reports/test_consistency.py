"""The reports package keeps copies of two dashboard rules it may not import: keep them equal."""

from __future__ import annotations

from app.reports.content.scope import REPORT_PROBES
from app.reports.render.charts import MODE_SVG
from app.web.palette import MODE_STYLES
from app.web.views.overview import OVERVIEW_PROBES


def test_report_reads_the_overviews_probe_per_mode() -> None:
    assert REPORT_PROBES == OVERVIEW_PROBES


def test_chart_colours_are_the_dashboards() -> None:
    assert set(MODE_SVG) == set(MODE_STYLES)
    for kind, (colour, _, marker) in MODE_SVG.items():
        assert colour == MODE_STYLES[kind]["color"]
        assert marker == MODE_STYLES[kind]["symbol"]
