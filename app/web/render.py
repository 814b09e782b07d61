"""Jinja2 environment: filters for times and durations, URL helpers, page context."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape

from app import __version__
from app.explain import explain
from app.web.timerange import PRESETS, iso

NAV: tuple[tuple[str, str], ...] = (
    ("/", "Overview"),
    ("/alerts", "Alerts"),
    ("/compare", "Compare"),
    ("/spikes", "Spikes"),
    ("/report", "Report"),
    ("/samples", "Samples"),
    ("/targets", "Targets"),
    ("/agents", "Agents"),
)
PLOTLY_URL = "/static/vendor/plotly.min.js"


def fmt_ms(value: float | None) -> str:
    """Milliseconds with sensible precision: 0.412, 4.12, 41.2, 412."""
    if value is None:
        return "—"
    if value < 1:
        return f"{value:.3f}"
    if value < 10:
        return f"{value:.2f}"
    if value < 100:
        return f"{value:.1f}"
    return f"{value:.0f}"


def _as_utc(t: datetime) -> datetime:
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).astimezone(UTC)


def fmt_utc(t: datetime | None) -> str:
    if t is None:
        return ""
    return _as_utc(t).strftime("%Y-%m-%d %H:%M:%S UTC")


_NA = Markup('<span class="na">—</span>')


def ms_cell(value: float | None) -> Markup | str:
    """A duration cell: the figure, or a dimmed dash when there is none (the ``ms`` macro
    as a filter: long tables call it per cell, and a filter costs a fraction of a macro)."""
    return _NA if value is None else fmt_ms(value)


def time_cell(t: datetime | None) -> Markup | str:
    """``<time>`` with the UTC time, its ISO form for scripts (the ``when`` macro)."""
    if not t:
        return "—"
    u = _as_utc(t)
    utc = u.strftime("%Y-%m-%d %H:%M:%S UTC")  # digits, '-', ':' and 'UTC': nothing to escape
    return Markup(f'<time datetime="{iso(u)}" title="{utc}">{utc}</time>')


def fmt_naive_utc(t: datetime) -> str:
    return _as_utc(t).strftime("%Y-%m-%dT%H:%M:%S")


def fmt_pct(value: float | None) -> str:
    if not isinstance(value, int | float):
        return "—"
    return f"{value * 100:.1f} %" if value < 0.1 else f"{value * 100:.0f} %"


def fmt_bytes(value: float | None) -> str:
    if not isinstance(value, int | float):
        return "—"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def query_string(base: dict[str, Any], **changes: Any) -> str:
    params = {**base, **changes}
    if "range" in changes:
        params.pop("from", None)
        params.pop("to", None)
    return urlencode({k: v for k, v in params.items() if v is not None and v != ""})


def _static_versions(static_dir: Path) -> dict[str, str]:
    out = {}
    for path in static_dir.glob("*.*"):
        out[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()[:10]
    return out


def _explain_line(code: str | None) -> str:
    found = explain(code)
    return found.line() if found else ""


def _explain_meaning(code: str | None) -> str:
    found = explain(code)
    return found.meaning if found else ""


def whoami(request: Request) -> Any:
    """The request's principal once a guard identified it (None on public pages)."""
    principal = getattr(request.state, "principal", None)
    return principal if principal is not None and principal.role is not None else None


def csrf_token(request: Request) -> str:
    principal = getattr(request.state, "principal", None)
    return (getattr(principal, "csrf_token", None) or "") if principal is not None else ""


def csrf_field(request: Request) -> Markup:
    """The hidden anti-forgery field every state-changing form carries."""
    return Markup('<input type="hidden" name="csrf_token" value="{}">').format(
        escape(csrf_token(request))
    )


def make_templates(templates_dir: Path, static_dir: Path) -> Jinja2Templates:
    templates = Jinja2Templates(directory=str(templates_dir))
    env = templates.env
    # the templates ship with the code: no stat() of every template on every render
    env.auto_reload = False
    versions = _static_versions(static_dir)
    env.filters["ms"] = fmt_ms
    env.filters["utc"] = fmt_utc
    env.filters["iso"] = lambda t: iso(_as_utc(t)) if t else ""
    env.filters["naive_utc"] = fmt_naive_utc
    env.filters["pct"] = fmt_pct
    env.filters["ms_cell"] = ms_cell
    env.filters["when"] = time_cell
    env.filters["bytes"] = fmt_bytes
    env.globals.update(
        nav=NAV,
        version=__version__,
        presets=list(PRESETS),
        qs=query_string,
        plotly_url=PLOTLY_URL,
        static=lambda name: f"/static/{name}?v={versions.get(name, __version__)}",
        explain_line=_explain_line,
        explain_meaning=_explain_meaning,
        whoami=whoami,
        csrf_token=csrf_token,
        csrf_field=csrf_field,
    )
    return templates
