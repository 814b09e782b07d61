"""Cross-site request forgery, as an attacker's page would try it, in headless Chromium.

An operator is logged in to connwatch; the same browser then opens a page served by
another server on another port of the same host (same *site*, so the ``SameSite=Lax``
cookie is sent along: the cookie alone protects nothing here). That page auto-submits a
form to ``/targets/new`` (a password reference to the key file, the issue's critical
attack) and fires ``fetch`` writes at the API with the browser's cookies. Every one must
be refused (403) before a route runs, and nothing may be stored.
"""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text

from tests.fixtures.browser import LiveServer

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _attack_page(target: str) -> str:
    return f"""<!doctype html><html><body>
<h1>Cute cats</h1>
<form id="f" method="post" action="{target}/targets/new">
  <input name="name" value="csrf-evil"><input name="kind" value="postgres">
  <input name="dsn" value="attacker.example:5432/x"><input name="username" value="u">
  <input name="password_ref" value="file:/data/secret.key">
  <input name="mode-0-on" value="on"><input name="mode-0-name" value="direct">
  <input name="mode-0-kind" value="direct"><input name="mode-0-interval" value="1s">
</form>
<script>
  window.results = [];
  const body = JSON.stringify({{text: "csrf-evil"}});
  Promise.allSettled([
    fetch("{target}/api/v1/annotations", {{method: "POST", credentials: "include",
      mode: "no-cors", headers: {{"content-type": "text/plain"}}, body}}),
    fetch("{target}/targets/csrf-victim/delete", {{method: "POST", credentials: "include",
      mode: "no-cors", body: new URLSearchParams("csrf_token=guess")}}),
  ]).then(() => {{ window.fetched = true; document.getElementById("f").submit(); }});
</script></body></html>"""


@contextlib.contextmanager
def _attacker(html: str) -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = html.encode()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", _free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_form_and_fetches_from_another_port_are_refused(
    live_server: LiveServer, page: Any
) -> None:
    from app.targets.schema import parse_targets
    from app.targets.sync import import_targets

    with live_server.engine.begin() as conn:
        victim = (
            "targets:\n  - {name: csrf-victim, kind: postgres, dsn: 'db:5432/a', username: u,"
            " modes: [{name: direct}]}\n"
        )
        import_targets(conn, parse_targets(victim, "t"), live_server.vault)
    live_server.login(page, "operator")
    # the login worked: this same session may open the form itself
    assert page.goto(f"{live_server.url}/targets/new").status == 200
    sent: list[str] = []
    page.on(
        "request",
        lambda r: sent.append(r.url) if r.method == "POST" and r.url.startswith(live_server.url)
        else None,
    )  # fmt: skip
    with _attacker(_attack_page(live_server.url)) as evil:
        with page.expect_response(lambda r: r.url.endswith("/targets/new")) as posted:
            page.goto(evil)
        assert posted.value.status == 403, posted.value.text()[:300]
        assert "request refused" in posted.value.text()  # Sec-Fetch-Site: same-site
    assert len(sent) == 3, sent  # the form and both fetches went out with the cookie
    with live_server.engine.connect() as conn:
        assert (
            conn.execute(text("select count(*) from targets where name = 'csrf-evil'")).scalar_one()
            == 0
        )
        victim_left = conn.execute(text("select count(*) from targets where name = 'csrf-victim'"))
        assert victim_left.scalar_one() == 1  # the fetch's delete did not run
        assert (
            conn.execute(
                text("select count(*) from annotations where text = 'csrf-evil'")
            ).scalar_one()
            == 0
        )
    with live_server.engine.begin() as conn:  # the live server is shared: leave it as found
        conn.execute(text("delete from targets where name = 'csrf-victim'"))
