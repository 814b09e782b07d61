"""Logging in and out, sessions, throttling, tokens, CSRF, Origin and Host checks, headers.

Everything runs through the real app on a real PostgreSQL: the login form, the session
table, the throttle table, the audit log.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.auth import audit
from app.secrets import Vault
from app.web.app import create_app
from tests.fixtures.auth import bearer, login_as, make_user, web_settings

PW = "correct horse battery staple"


def _client(
    engine: Engine, vault: Vault, *, client_addr: str = "127.0.0.1", **kw: object
) -> TestClient:
    app = create_app(engine, vault=vault, settings=web_settings(**kw))
    return TestClient(app, client=(client_addr, 40000))


@pytest.fixture
def anon(migrated_engine: Engine, vault: Vault) -> Iterator[TestClient]:
    with _client(migrated_engine, vault) as c:
        yield c


def _login(c: TestClient, user: str, password: str, *, next_url: str = "/") -> object:
    page = c.get("/login")
    nonce = re.search(r'name="nonce" value="([^"]+)"', page.text)
    assert nonce, page.text[:500]
    # the nonce cookie is Secure behind an https proxy; this client talks http to the app
    c.cookies.set("connwatch_login", nonce.group(1), path="/login")
    return c.post(
        "/login",
        data={"username": user, "password": password, "nonce": nonce.group(1), "next": next_url},
        follow_redirects=False,
    )


def test_pages_need_a_login_and_the_login_works(anon: TestClient, migrated_engine: Engine) -> None:
    res = anon.get("/", headers={"accept": "text/html"}, follow_redirects=False)
    assert res.status_code == 303 and res.headers["location"] == "/login?next=%2F"
    assert anon.get("/api/v1/targets").status_code == 401
    assert anon.get("/api/v1/targets").headers["www-authenticate"].startswith("Bearer")
    make_user(migrated_engine, "viewer", name="vera", password=PW)
    res = _login(anon, "vera", PW, next_url="/compare")
    assert res.status_code == 303 and res.headers["location"] == "/compare"
    cookie = next(c for c in res.headers.get_list("set-cookie") if "connwatch_session=" in c)
    assert cookie.startswith("connwatch_session=")
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
    assert anon.get("/api/v1/targets").status_code == 200
    assert "vera" in anon.get("/", headers={"accept": "text/html"}).text  # who is logged in


def test_login_failures_are_generic_and_audited(anon: TestClient, migrated_engine: Engine) -> None:
    make_user(migrated_engine, "viewer", name="vera", password=PW)
    wrong_pw = _login(anon, "vera", "not the password")
    no_user = _login(anon, "nobody-here", "whatever it is")
    assert wrong_pw.status_code == no_user.status_code == 401
    msg = "wrong user name or password"
    assert msg in wrong_pw.text and msg in no_user.text
    assert _login(anon, "vera", PW).status_code == 303
    with migrated_engine.connect() as conn:
        entries = audit.query(conn, audit.Filter(action="login."))
    assert [(e.action, e.object_name, e.outcome) for e in reversed(entries)] == [
        ("login.failure", "vera", "denied"),
        ("login.failure", "nobody-here", "denied"),
        ("login.success", "vera", "ok"),
    ]
    assert all(e.source == "127.0.0.1" for e in entries)
    assert "not the password" not in str([e.detail for e in entries])


def test_a_login_without_the_forms_nonce_is_refused(
    anon: TestClient, migrated_engine: Engine
) -> None:
    make_user(migrated_engine, "viewer", name="vera", password=PW)
    res = anon.post("/login", data={"username": "vera", "password": PW, "nonce": "x"})
    assert res.status_code == 400 and "set-cookie" not in {
        k.lower()
        for k in res.headers
        if k.lower() == "set-cookie" and "connwatch_session" in res.headers[k]
    }
    assert anon.get("/api/v1/targets").status_code == 401


def test_throttling_grows_delays_and_refuses_even_the_right_password(
    anon: TestClient, migrated_engine: Engine
) -> None:
    make_user(migrated_engine, "viewer", name="vera", password=PW)

    def wait_after_last_failure() -> float:
        with migrated_engine.connect() as conn:
            return float(
                conn.execute(
                    text(
                        "select extract(epoch from blocked_until - last_failure_at) "
                        "from login_throttle where key = 'account:vera'"
                    )
                ).scalar_one()
                or 0
            )

    for i in range(5):
        assert _login(anon, "vera", f"guess {i}").status_code == 401
    first = wait_after_last_failure()
    with migrated_engine.begin() as conn:  # let the next guess in whatever the clock did
        conn.execute(text("update login_throttle set blocked_until = now() - interval '1 s'"))
    assert _login(anon, "vera", "guess 6").status_code == 401
    assert (first, wait_after_last_failure()) == (1.0, 2.0)  # growing delays
    # while a delay runs, even the right password is not checked
    with migrated_engine.begin() as conn:
        conn.execute(text("update login_throttle set blocked_until = now() + interval '20 s'"))
    res = _login(anon, "vera", PW)
    assert res.status_code == 429
    assert 15 <= int(res.headers["retry-after"]) <= 20
    assert "too many failed attempts" in res.text
    # the delay passes: the right password works again (no lockout)
    with migrated_engine.begin() as conn:
        conn.execute(text("update login_throttle set blocked_until = now() - interval '1 s'"))
    assert _login(anon, "vera", PW).status_code == 303
    with migrated_engine.connect() as conn:
        left = conn.execute(text("select count(*) from login_throttle where key = 'account:vera'"))
        assert left.scalar_one() == 0  # a success forgets the account's failures


def test_the_account_delay_is_capped_so_one_account_sees_at_most_100_failures_an_hour() -> None:
    from app.auth.throttle import ACCOUNT, delay_s

    assert [delay_s(n, ACCOUNT) for n in range(1, 9)] == [0, 0, 0, 0, 1, 2, 4, 8]
    assert max(delay_s(n, ACCOUNT) for n in range(1, 10_000)) == 36
    assert 3600 / 36 <= 100


def test_logout_ends_the_session_everywhere(client: TestClient, migrated_engine: Engine) -> None:
    token = client.cookies.get("connwatch_session")
    assert client.get("/api/v1/targets").status_code == 200
    assert client.post("/logout", follow_redirects=False).status_code == 303
    client.cookies.set("connwatch_session", token or "")
    assert client.get("/api/v1/targets").status_code == 401


def test_idle_and_absolute_lifetimes(client: TestClient, migrated_engine: Engine) -> None:
    assert client.get("/api/v1/targets").status_code == 200
    with migrated_engine.begin() as conn:
        conn.execute(text("update sessions set last_seen_at = now() - interval '481 minutes'"))
    assert client.get("/api/v1/targets").status_code == 401  # idle 480 min by default
    with migrated_engine.begin() as conn:
        conn.execute(
            text("update sessions set last_seen_at = now(), expires_at = now() - interval '1 s'")
        )
    assert client.get("/api/v1/targets").status_code == 401


def test_an_admin_revokes_a_session(
    client: TestClient, migrated_engine: Engine, vault: Vault
) -> None:
    with _client(migrated_engine, vault) as other:
        login_as(other, migrated_engine, "operator")
        assert other.get("/api/v1/targets").status_code == 200
        with migrated_engine.connect() as conn:
            sid = conn.execute(text("select max(id) from sessions")).scalar_one()
        assert (
            client.post(f"/admin/sessions/{sid}/revoke", follow_redirects=False).status_code == 303
        )
        assert other.get("/api/v1/targets").status_code == 401


def test_state_changes_need_the_anti_forgery_token(client: TestClient) -> None:
    form = {
        "name": "x1",
        "kind": "oracle",
        "dsn": "h:1521/S",
        "username": "u",
        "mode-0-name": "dedicated",
        "mode-0-kind": "dedicated",
        "mode-0-on": "on",
    }
    good = client.headers.pop("X-CSRF-Token")
    assert client.post("/targets/new", data=form).status_code == 403
    assert (
        client.post("/targets/new", data=form, headers={"X-CSRF-Token": "nope"}).status_code == 403
    )
    res = client.post("/targets/new", data={**form, "csrf_token": good}, follow_redirects=False)
    assert res.status_code == 303


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "http://evil.example"},
        {"origin": "null"},
        {"origin": "http://127.0.0.1:9"},
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},
    ],
)
def test_cross_origin_writes_are_refused_before_anything_runs(
    client: TestClient, headers: dict[str, str]
) -> None:
    res = client.post("/targets/x/enabled", data={"enabled": "false"}, headers=headers)
    assert res.status_code == 403
    assert "refused" in res.json()["detail"]


def test_same_origin_writes_pass_the_origin_check(client: TestClient) -> None:
    res = client.post(
        "/targets/nope/enabled",
        data={"enabled": "false"},
        headers={"origin": "http://testserver", "sec-fetch-site": "same-origin"},
    )
    assert res.status_code == 404  # reached the route


@pytest.mark.parametrize("host", ["evil.example", "rebind.attacker.test:8000", ""])
def test_unknown_host_headers_are_refused(anon: TestClient, host: str) -> None:
    res = anon.get("/healthz", headers={"host": host})
    assert res.status_code == 400
    assert "CONNWATCH_ALLOWED_HOSTS" in res.json()["detail"]


def test_nul_bytes_in_urls_are_a_400(client: TestClient) -> None:
    for url in ["/target/a%00b", "/samples?target=a%00b", "/api/v1/targets/a%00b/timeseries"]:
        res = client.get(url)
        assert res.status_code == 400, url
        assert "NUL" in res.json()["detail"]


def test_security_headers(anon: TestClient) -> None:
    h = anon.get("/login").headers
    assert "default-src 'self'" in h["content-security-policy"]
    assert "script-src 'self'" in h["content-security-policy"]
    assert "unsafe-eval" not in h["content-security-policy"]
    assert "frame-ancestors 'none'" in h["content-security-policy"]
    assert h["x-frame-options"] == "DENY"
    assert h["x-content-type-options"] == "nosniff"
    assert h["referrer-policy"] == "same-origin"
    assert h["cache-control"] == "no-store"


def test_https_behind_a_trusted_proxy_gets_a_host_prefixed_secure_cookie(
    migrated_engine: Engine, vault: Vault
) -> None:
    make_user(migrated_engine, "viewer", name="vera", password=PW)
    with _client(
        migrated_engine, vault, client_addr="10.9.8.7", trusted_proxies=["10.0.0.0/8"]
    ) as c:
        c.headers["x-forwarded-proto"] = "https"
        c.headers["x-forwarded-for"] = "192.0.2.1"
        res = _login(c, "vera", PW)
        cookie = next(c for c in res.headers.get_list("set-cookie") if "connwatch_session=" in c)
        assert cookie.startswith("__Host-connwatch_session=") and "Secure" in cookie
        assert "strict-transport-security" in res.headers
    with migrated_engine.connect() as conn:
        src = conn.execute(
            text("select source from audit_log where action = 'login.success'")
        ).scalar_one()
    assert src == "192.0.2.1"  # the client, not the proxy


def test_forwarded_headers_from_an_untrusted_peer_are_ignored(
    migrated_engine: Engine, vault: Vault
) -> None:
    make_user(migrated_engine, "viewer", name="vera", password=PW)
    with _client(migrated_engine, vault, client_addr="10.9.8.7") as c:
        res = _login(c, "vera", PW)
        c.headers["x-forwarded-for"] = "127.0.0.1"
        assert all("Secure" not in c for c in res.headers.get_list("set-cookie"))
    with migrated_engine.connect() as conn:
        src = conn.execute(
            text("select source from audit_log where action = 'login.success'")
        ).scalar_one()
    assert src == "10.9.8.7"


def test_anonymous_viewer_only_on_loopback_and_only_reads(
    migrated_engine: Engine, vault: Vault
) -> None:
    with _client(migrated_engine, vault, anonymous_role="viewer") as local:
        assert local.get("/api/v1/targets").status_code == 200
        assert local.get("/", headers={"accept": "text/html"}).status_code == 200
        assert local.post("/targets/x/enabled", data={"enabled": "false"}).status_code == 403
        assert local.get("/admin/users").status_code == 403
    with _client(
        migrated_engine, vault, client_addr="192.0.2.7", anonymous_role="viewer"
    ) as remote:
        assert remote.get("/api/v1/targets").status_code == 401


def test_tokens_read_and_write_scopes(migrated_engine: Engine, vault: Vault) -> None:
    read = bearer(migrated_engine, "admin", "read")
    write = bearer(migrated_engine, "operator", "write")
    with _client(migrated_engine, vault) as c:
        auth = {"authorization": f"Bearer {read}"}
        assert c.get("/api/v1/targets", headers=auth).status_code == 200
        assert c.get("/metrics", headers=auth).status_code == 200
        assert (
            c.post("/targets/x/enabled", data={"enabled": "false"}, headers=auth).status_code == 403
        )
        assert c.get("/admin/users", headers=auth).status_code == 403  # an admin's read token
        w = {"authorization": f"Bearer {write}"}
        assert c.post("/targets/x/enabled", data={"enabled": "false"}, headers=w).status_code == 404
        assert c.get("/admin/users", headers=w).status_code == 403  # an operator's token
        bad = {"authorization": "Bearer cw_" + "x" * 43}
        assert c.get("/api/v1/targets", headers=bad).status_code == 401
        assert c.get("/metrics").status_code == 401
    with migrated_engine.connect() as conn:
        used = conn.execute(
            text("select count(*) from api_tokens where last_used_at is not null")
        ).scalar_one()
    assert used == 2


def test_metrics_public_only_when_the_setting_says_so(
    migrated_engine: Engine, vault: Vault
) -> None:
    with _client(migrated_engine, vault, metrics_public=True) as c:
        assert c.get("/metrics").status_code == 200
        assert c.get("/api/v1/targets").status_code == 401


def test_revoked_expired_and_disabled_owners_tokens_stop_working(
    client: TestClient, migrated_engine: Engine
) -> None:
    token = bearer(migrated_engine, "viewer", "read")
    auth = {"authorization": f"Bearer {token}"}
    assert client.get("/api/v1/targets", headers=auth).status_code == 200
    with migrated_engine.begin() as conn:
        conn.execute(text("update api_tokens set expires_at = now() - interval '1 s'"))
    assert client.get("/api/v1/targets", headers=auth).status_code == 401
    with migrated_engine.begin() as conn:
        conn.execute(text("update api_tokens set expires_at = null"))
        conn.execute(text("update users set disabled = true where role = 'viewer'"))
    assert client.get("/api/v1/targets", headers=auth).status_code == 401


def test_target_changes_and_test_now_are_audited_without_secrets(
    client: TestClient, migrated_engine: Engine
) -> None:
    form = {
        "name": "aud",
        "kind": "postgres",
        "dsn": "db:5432/app",
        "username": "u",
        "password": "Canary-Pw-9f3",
        "mode-0-name": "direct",
        "mode-0-kind": "direct",
        "mode-0-on": "on",
    }
    assert client.post("/targets/new", data=form, follow_redirects=False).status_code == 303
    form2 = {**form, "password": "", "description": "now described"}
    assert client.post("/targets/aud/edit", data=form2, follow_redirects=False).status_code == 303
    assert (
        client.post(
            "/targets/aud/test", data={"mode": "direct"}, follow_redirects=False
        ).status_code
        == 303
    )
    with migrated_engine.connect() as conn:
        entries = audit.query(conn, audit.Filter(object_name="aud"))
        dump = (
            conn.execute(text("select before::text || after::text from audit_log")).scalars().all()
        )
    assert [e.action for e in reversed(entries)] == [
        "target.create",
        "target.update",
        "target.test",
    ]
    upd = entries[1]
    assert "description" not in upd.before
    assert upd.after["description"] == "now described"
    assert upd.after["password_encrypted"] == "(set)"
    assert "Canary-Pw-9f3" not in str(dump)
    res = client.get("/api/v1/audit", params={"action": "target."})
    assert res.status_code == 200 and len(res.json()["entries"]) == 3
    page = client.get("/admin/audit", params={"object_name": "aud"})
    assert page.status_code == 200 and "target.update" in page.text


def test_test_now_is_rate_limited_per_user(
    client: TestClient, migrated_engine: Engine, vault: Vault
) -> None:
    form = {
        "name": "rl",
        "kind": "postgres",
        "dsn": "db:5432/app",
        "username": "u",
        "mode-0-name": "direct",
        "mode-0-kind": "direct",
        "mode-0-on": "on",
    }
    assert client.post("/targets/new", data=form, follow_redirects=False).status_code == 303
    with _client(migrated_engine, vault, test_now_per_minute=2) as c:
        login_as(c, migrated_engine, "operator")
        codes = [
            c.post("/targets/rl/test", data={"mode": "direct"}, follow_redirects=False).status_code
            for _ in range(3)
        ]
    assert codes == [303, 303, 429]


def test_test_now_respects_target_networks_narrowed_after_the_target_was_written(
    client: TestClient, migrated_engine: Engine, vault: Vault
) -> None:
    form = {
        "name": "far",
        "kind": "postgres",
        "dsn": "192.0.2.10:5432/app",
        "username": "u",
        "mode-0-name": "direct",
        "mode-0-kind": "direct",
        "mode-0-on": "on",
    }
    assert client.post("/targets/new", data=form, follow_redirects=False).status_code == 303
    with _client(migrated_engine, vault, target_networks=["10.0.0.0/8"]) as c:
        login_as(c, migrated_engine, "operator")
        res = c.post("/targets/far/test", data={"mode": "direct"}, follow_redirects=False)
        assert res.status_code == 422 and "CONNWATCH_TARGET_NETWORKS" in res.text
        again = c.post("/targets/new", data={**form, "name": "far2"}, follow_redirects=False)
        assert again.status_code == 422 and "outside the networks" in again.text
    with migrated_engine.connect() as conn:
        assert conn.execute(text("select count(*) from probe_requests")).scalar_one() == 0
        assert (
            conn.execute(text("select count(*) from targets where name = 'far2'")).scalar_one() == 0
        )


def test_auth_proxy_headers_count_only_from_trusted_proxies(
    migrated_engine: Engine, vault: Vault
) -> None:
    proxy = {
        "proxy_user_header": "X-Forwarded-User",
        "proxy_groups_header": "X-Forwarded-Groups",
        "proxy_roles": ["dba=operator", "admins=admin"],
        "trusted_proxies": ["10.0.0.0/8"],
    }
    who = {"X-Forwarded-User": "dora", "X-Forwarded-Groups": "staff,dba"}
    with _client(migrated_engine, vault, client_addr="10.1.2.3", **proxy) as c:
        assert c.get("/api/v1/targets", headers=who).status_code == 200
        page = c.get("/", headers={**who, "accept": "text/html"})
        assert page.status_code == 200 and "dora" in page.text
        # a state change from the proxy's user still needs the anti-forgery token
        assert c.post("/annotations", headers=who, data={"text": "x"}).status_code == 403
        nobody = {"X-Forwarded-User": "eve", "X-Forwarded-Groups": "guests"}
        assert c.get("/api/v1/targets", headers=nobody).status_code == 403  # no role maps
    with _client(migrated_engine, vault, client_addr="192.0.2.7", **proxy) as c:
        # the same headers from a client that is not a trusted proxy: nobody
        assert c.get("/api/v1/targets", headers=who).status_code == 401
    with migrated_engine.connect() as conn:
        row = conn.execute(text("select kind, role from users where name = 'dora'")).one()
    assert tuple(row) == ("proxy", "operator")
