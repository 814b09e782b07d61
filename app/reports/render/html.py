"""The report's standalone HTML (what the PDF prints) and the e-mail's HTML and text parts.

Templates live in ``templates/report/``; the page's ``templates/report.html`` includes
the same ``_body.html``. The document carries its stylesheet inline (``static/report.css``)
and its paper size, page numbers and footer as CSS ``@page`` rules, so printing it
needs nothing but the file itself.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from jinja2 import Environment, FileSystemLoader, select_autoescape

from app import __version__
from app.reports.render.view import ReportView

ROOT = Path(__file__).resolve().parents[3]
TEMPLATES_DIR = ROOT / "templates"
STATIC_DIR = ROOT / "static"

Paper = Literal["A4", "Letter"]
PAPERS: dict[str, Paper] = {"a4": "A4", "letter": "Letter"}


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=select_autoescape(["html"]),
        trim_blocks=False,
    )
    env.globals["version"] = __version__
    return env


def _css_string(text: str) -> str:
    """Text safe inside a CSS double-quoted string."""
    return "".join(c for c in text if c not in '"\\\n\r<>')


def footer_text(v: ReportView) -> str:
    return _css_string(f"connwatch · {v.title} · generated {v.generated_text}")


def render_document(v: ReportView, paper: Paper = "A4") -> str:
    """The whole report as one self-contained HTML document for printing to PDF."""
    css = (STATIC_DIR / "report.css").read_text()
    return (
        environment()
        .get_template("report/document.html")
        .render(v=v, css=css, paper=f"{paper} landscape", footer=footer_text(v))
    )


def render_mail(v: ReportView, **context: object) -> tuple[str, str]:
    """(HTML, text) bodies of the report's e-mail: readable with images off (no images)."""
    env = environment()
    html = env.get_template("report/mail.html").render(v=v, **context)
    text = env.get_template("report/mail.txt").render(v=v, **context)
    return html, text
