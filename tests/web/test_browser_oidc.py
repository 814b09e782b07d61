"""Single sign-on against a real OpenID provider (oidc-provider on loopback), in Chromium:
the provider's own login and consent pages, PKCE, state and nonce, the group-to-role
mapping and the allow list."""

from __future__ import annotations

import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import create_engine, text

from app.auth import audit
from app.demo.pgcluster import PgCluster
from app.secrets import Vault
from tests.fixtures.auth import web_settings
from tests.fixtures.browser import migrated_database
from tests.fixtures.oidc import CLIENT_ID, CLIENT_SECRET, oidc_provider

pytestmark = pytest.mark.browser


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def sso(pg_cluster: PgCluster) -> Iterator[tuple[str, Any]]:
    import uvicorn

    from app.web.app import create_app

    port = _port()
    base = f"http://127.0.0.1:{port}"
    with oidc_provider(f"{base}/login/oidc/callback") as issuer:
        engine = create_engine(migrated_database(pg_cluster, "sso_"))
        settings = web_settings(
            oidc_issuer=issuer,
            oidc_client_id=CLIENT_ID,
            oidc_client_secret=CLIENT_SECRET,
            oidc_scopes="openid profile email groups",
            oidc_roles=["dba=operator", "dba-leads=admin"],
            oidc_allowed_subjects=["dba.dora", "lead.lena", "mgr.max"],
        )
        app = create_app(engine, vault=Vault(Fernet.generate_key()), settings=settings)
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            yield base, engine
        finally:
            server.should_exit = True
            thread.join(timeout=10)
            engine.dispose()


def _sign_in(page: Any, base: str, login: str) -> None:
    page.goto(f"{base}/login?next=%2Ftargets")
    page.get_by_role("link", name="Log in with single sign-on").click()
    page.wait_for_selector("input[name=login]")  # the provider's own login page
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any-" + uuid.uuid4().hex)
    page.locator("button[type=submit]").first.click()
    consent = page.locator("button[type=submit]")  # the provider's consent page
    consent.first.wait_for()
    if "127.0.0.1" in page.url and "/interaction/" in page.url:
        consent.first.click()


def test_sso_login_maps_groups_to_roles(sso: tuple[str, Any], page: Any) -> None:
    base, engine = sso
    _sign_in(page, base, "lead.lena")
    page.wait_for_url(re.compile(re.escape(base) + r"/targets$"))
    assert "lead.lena" in page.locator(".account").inner_text()
    assert page.get_by_role("link", name="Users").count() == 1  # dba-leads -> admin
    with engine.connect() as conn:
        row = conn.execute(
            text("select kind, role, external_id from users where name = 'lead.lena'")
        ).one()
        entries = audit.query(conn, audit.Filter(action="login.success"))
        verifiers = conn.execute(text("select count(*) from oidc_logins")).scalar_one()
    assert row.kind == "oidc" and row.role == "admin" and row.external_id.endswith("|lead.lena")
    assert entries[0].object_name == "lead.lena" and "single sign-on" in entries[0].detail
    assert verifiers == 0  # the login's state was used once and removed


def test_sso_refuses_identities_without_a_role_or_not_allowed(
    sso: tuple[str, Any], page: Any
) -> None:
    base, engine = sso
    _sign_in(page, base, "mgr.max")  # allowed subject, but no group maps to a role
    page.wait_for_url(re.compile(re.escape(base) + r"/login/oidc/callback.*"))
    assert "may not use connwatch" in page.content()
    page.context.clear_cookies()  # forget the provider's session of mgr.max
    _sign_in(page, base, "intruder")  # dba-leads, but not in the allow list
    page.wait_for_url(re.compile(re.escape(base) + r"/login/oidc/callback.*"))
    assert "may not use connwatch" in page.content()
    with engine.connect() as conn:
        names = conn.execute(text("select name from users")).scalars().all()
        denied = conn.execute(
            text(
                "select count(*) from audit_log "
                "where action = 'login.failure' and outcome = 'denied'"
            )
        ).scalar_one()
    assert "mgr.max" not in names and "intruder" not in names
    assert denied == 2


def test_a_callback_not_started_in_this_browser_logs_nobody_in(
    sso: tuple[str, Any], page: Any
) -> None:
    base, _ = sso
    res = page.goto(f"{base}/login/oidc/callback?state=forged&code=stolen")
    assert res is not None and res.status == 400
    assert "not started in this browser" in page.content()
