"""HTML to PDF on the server with headless Debian Chromium (``--print-to-pdf``).

Why Chromium and not WeasyPrint: measured in ``bench/report_pdf_engines.py``
(docs/reports.md, "Why Chromium"). In short: Chromium is already what the tests and
the screenshots use, it prints the same CSS the browser shows (so the page and the
PDF cannot drift apart), it supports ``@page`` margin boxes for the footer and page
numbers, and it was faster on a 300-mode report; WeasyPrint would add a second layout
engine and its Pango stack to the image for the same result.

The document is written to a private temporary directory and printed from a
``file://`` URL with no network (``--proxy-server`` points at
an unused local port, so nothing can be fetched even if a link tried to). Chromium
runs with its own throw-away profile and is killed if it exceeds the timeout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

DEFAULT_BROWSERS = ("chromium", "chromium-browser", "google-chrome")
TIMEOUT_S = 120.0


class PdfError(RuntimeError):
    """The PDF could not be rendered; the message says why."""


def find_browser(configured: str | None = None) -> str:
    """The Chromium executable: the setting, else the first of DEFAULT_BROWSERS on PATH."""
    if configured:
        if Path(configured).is_file() and os.access(configured, os.X_OK):
            return configured
        raise PdfError(f"CONNWATCH_REPORT_CHROMIUM: {configured} is not an executable file")
    for name in DEFAULT_BROWSERS:
        if found := shutil.which(name):
            return found
    raise PdfError(
        "no Chromium found to render the PDF: install Debian's 'chromium' or set "
        "CONNWATCH_REPORT_CHROMIUM"
    )


def html_to_pdf(html: str, *, browser: str | None = None, timeout_s: float = TIMEOUT_S) -> bytes:
    """Print ``html`` (a self-contained document) to PDF bytes."""
    exe = find_browser(browser)
    with tempfile.TemporaryDirectory(prefix="connwatch-pdf-") as tmp:
        src = Path(tmp) / "report.html"
        out = Path(tmp) / "report.pdf"
        src.write_text(html, encoding="utf-8")
        cmd = [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-extensions",
            "--disable-sync",
            "--no-first-run",
            "--no-default-browser-check",
            "--proxy-server=127.0.0.1:9",
            f"--user-data-dir={tmp}/profile",
            "--no-pdf-header-footer",
            "--generate-pdf-document-outline",
            f"--print-to-pdf={out}",
            src.as_uri(),
        ]
        try:
            proc = subprocess.run(
                cmd, capture_output=True, timeout=timeout_s, check=False,
                env={**os.environ, "HOME": tmp},
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise PdfError(f"Chromium did not print the report within {timeout_s:g} s") from None
        except OSError as exc:
            raise PdfError(f"cannot run {exe}: {exc.strerror}") from None
        if not out.is_file() or out.stat().st_size == 0:
            err = proc.stderr.decode(errors="replace").strip().splitlines()
            raise PdfError(f"Chromium printed no PDF (exit {proc.returncode}): {err[-1:]}")
        return out.read_bytes()
