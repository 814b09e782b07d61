"""Walk every page of a running connwatch as a new user would, at desktop and phone size.

    .venv/bin/python -m tests.tools.walk http://127.0.0.1:8000 [out-dir] [target ...]

With ``CONNWATCH_WALK_LOGIN=user:password`` (the demo prints an admin's once) it logs in
first and also walks the operator and admin pages; without it, what a loopback viewer sees.

Saves a full-page screenshot of each page at 1440x900 and 390x844 under
``test-artifacts/walk/`` (``make clean`` removes it) and prints each page's width in
CSS pixels against the viewport's, its console errors and its HTTP status, so a page
wider than a phone is found by reading one table. Debian's Chromium, no download.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from tests.fixtures.browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS

VIEWPORTS = {"desktop": (1440, 900), "phone": (390, 844)}


def pages(targets: list[str]) -> list[str]:
    out = ["/", "/compare", "/spikes", "/samples", "/report", "/targets", "/agents", "/errors"]
    out += ["/targets/new?kind=oracle", "/docs", "/alerts", "/alerts/rules", "/alerts/contacts"]
    out += ["/alerts/maintenance", "/report/subscriptions", "/admin/users", "/admin/audit"]
    for t in targets:
        out += [f"/target/{t}", f"/target/{t}?range=24h", f"/target/{t}?range=30d"]
        out += [f"/target/{t}?range=1y", f"/target/{t}/heatmap"]
        out += [f"/targets/{t}/edit", f"/compare?target={t}", f"/samples?target={t}"]
    return out


def walk(base: str, out: Path, targets: list[str]) -> int:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    wide = 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        for label, (w, h) in VIEWPORTS.items():
            ctx = browser.new_context(
                viewport={"width": w, "height": h}, timezone_id="Europe/Paris", locale="en-GB"
            )
            login = os.environ.get("CONNWATCH_WALK_LOGIN", "")
            if login:
                user, _, password = login.partition(":")
                page = ctx.new_page()
                page.goto(base + "/login")
                page.fill("#l-user", user)
                page.fill("#l-pw", password)
                page.click("button[type=submit]")
                page.wait_for_load_state("networkidle")
                page.close()
            for path in pages(targets):
                page = ctx.new_page()
                errors: list[str] = []
                page.on("console", lambda m, e=errors: e.append(m.text) if m.type == "error" else 0)
                page.on("pageerror", lambda exc, e=errors: e.append(str(exc)))
                resp = page.goto(base + path, wait_until="networkidle")
                page.wait_for_timeout(1500)
                width = page.evaluate("document.documentElement.scrollWidth")
                name = re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_") or "overview"
                page.screenshot(path=str(out / f"{label}-{name}.png"), full_page=True)
                flag = "  WIDER" if width > w else ""
                wide += bool(flag)
                status = resp.status if resp else "-"
                print(f"{label:7} {status} {width:5}/{w} {path}{flag} {errors[:2] or ''}")
                page.close()
            ctx.close()
        browser.close()
    return wide


def main() -> None:
    base = sys.argv[1].rstrip("/")
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else ARTIFACTS / "walk"
    targets = sys.argv[3:] or ["sales-sim", "local-pg"]
    wide = walk(base, out, targets)
    print(f"{wide} page(s) wider than their viewport; screenshots in {out}")


if __name__ == "__main__":
    main()
