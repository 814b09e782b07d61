"""Hostile YAML posted to the target form: a YAML alias bomb ("billion laughs", under
2 KB) and nesting 5,000 deep. Each is refused with a 422 naming the limit, nothing is
stored, and ``/healthz``, polled all along, keeps answering.

The web parses form YAML with limits checked before anything is expanded
(app/targets/safeyaml.py) and in a worker thread, never on the event loop; the agent runs
in a process of its own under ``serve``, so its start lag cannot depend on the web at all.
Margins are seconds (rule 3): before the fix one such post stalled the loop for minutes.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from sqlalchemy import text

from app.auth import sessions
from tests.fixtures.auth import make_user
from tests.fixtures.browser import LiveServer


def _bomb(levels: int = 9) -> str:
    """9 ** levels strings from under 1 KB of YAML."""
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _post(url: str, fields: dict[str, str], cookie: str) -> int:
    body = urllib.parse.urlencode(fields).encode()
    req = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"content-type": "application/x-www-form-urlencoded", "cookie": cookie},
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as res:
            return int(res.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_alias_bomb_and_deep_nesting_are_refused_and_healthz_keeps_answering(
    live_server: LiveServer,
) -> None:
    user = make_user(live_server.engine, "operator")
    with live_server.engine.begin() as conn:
        token, csrf = sessions.create(
            conn, user.id, via="password", source="t", user_agent="t", max_hours=1
        )
    cookie = f"connwatch_session={token}"
    bomb = _bomb()
    assert len(bomb) < 2048
    payloads = {"bomb": bomb, "deep": "[" * 5000 + "]" * 5000}
    health: list[tuple[int, float]] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            t0 = time.monotonic()
            try:
                with urllib.request.urlopen(f"{live_server.url}/healthz", timeout=30) as res:
                    status = int(res.status)
            except OSError:
                status = 0
            health.append((status, time.monotonic() - t0))
            time.sleep(0.05)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    statuses: dict[str, list[int]] = {k: [] for k in payloads}
    try:
        time.sleep(0.3)
        for i in range(6):
            for kind, params in payloads.items():
                fields = {
                    "csrf_token": csrf, "name": f"hostile-{kind}-{i}", "kind": "postgres",
                    "dsn": "db:5432/app", "username": "u", "mode-0-name": "direct",
                    "mode-0-kind": "direct", "mode-0-on": "on", "mode-0-params": params,
                }  # fmt: skip
                statuses[kind].append(_post(f"{live_server.url}/targets/new", fields, cookie))
        time.sleep(0.3)
    finally:
        stop.set()
        poller.join(timeout=60)
    assert statuses == {"bomb": [422] * 6, "deep": [422] * 6}
    assert len(health) >= 5, health
    assert {s for s, _ in health} == {200}, health
    assert max(t for _, t in health) < 3.0, health  # seconds of margin, not milliseconds
    with live_server.engine.connect() as conn:
        n = conn.execute(text("select count(*) from targets where name like 'hostile-%'"))
        assert n.scalar_one() == 0
