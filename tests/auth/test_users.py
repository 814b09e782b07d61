"""Accounts: names, roles, the last admin, disabling ends sessions and tokens, passwords."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.auth import passwords, sessions, tokens, users

PW = "a long enough password 1"


def test_roles_and_the_last_admin(migrated_engine: Engine) -> None:
    with migrated_engine.begin() as conn:
        users.add(conn, "alice", "admin", PW)
        users.add(conn, "bob", "operator", PW)
        with pytest.raises(users.UserError, match="already exists"):
            users.add(conn, "alice", "viewer", PW)
        with pytest.raises(ValueError, match="role must be one of"):
            users.add(conn, "dave", "root", PW)
        with pytest.raises(users.UserError, match="not valid"):
            users.add(conn, "bad name!", "viewer", PW)
        with pytest.raises(users.UserError, match="last enabled admin"):
            users.set_role(conn, "alice", "viewer")
        with pytest.raises(users.UserError, match="last enabled admin"):
            users.set_disabled(conn, "alice", True)
        users.set_role(conn, "bob", "admin")
        users.set_disabled(conn, "alice", True)
        assert users.count_admins(conn) == 1


def test_disabling_ends_sessions_and_revokes_tokens(migrated_engine: Engine) -> None:
    with migrated_engine.begin() as conn:
        users.add(conn, "root", "admin", PW)
        u = users.add(conn, "eve", "operator", PW)
        token, _ = sessions.create(
            conn, u.id, via="password", source="", user_agent="", max_hours=1
        )
        api, _ = tokens.create(conn, user_id=u.id, name="t", scope="write", created_by="x")
        assert sessions.lookup(conn, token, idle_minutes=60) is not None
        users.set_disabled(conn, "eve", True)
        assert sessions.lookup(conn, token, idle_minutes=60) is None
        assert tokens.authenticate(conn, api, source="") is None
        users.set_disabled(conn, "eve", False)
        assert tokens.authenticate(conn, api, source="") is None  # stays revoked


def test_password_policy_and_changes_end_sessions(migrated_engine: Engine) -> None:
    for bad, why in [("short", "at least 12"), ("x" * 300, "at most"), ("a\x00" * 8, "NUL")]:
        with pytest.raises(passwords.PasswordPolicyError, match=why):
            passwords.check_policy(bad)
    with pytest.raises(passwords.PasswordPolicyError, match="user name"):
        passwords.check_policy("averylongname", user="AveryLongName")
    with migrated_engine.begin() as conn:
        u = users.add(conn, "frank", "viewer", PW)
        token, _ = sessions.create(
            conn, u.id, via="password", source="", user_agent="", max_hours=1
        )
        assert users.authenticate(conn, "frank", PW) is not None
        users.set_password(conn, "frank", "a brand new password")
        assert sessions.lookup(conn, token, idle_minutes=60) is None
        assert users.authenticate(conn, "frank", PW) is None
        assert users.authenticate(conn, "frank", "a brand new password") is not None
        stored = conn.execute(text("select password_hash from users")).scalar_one()
    assert stored.startswith("$argon2id$") and "brand new" not in stored


def test_sessions_and_tokens_are_stored_only_as_hashes(migrated_engine: Engine) -> None:
    with migrated_engine.begin() as conn:
        u = users.add(conn, "gina", "viewer", None, kind="service")
        token, _ = sessions.create(
            conn, u.id, via="password", source="", user_agent="", max_hours=1
        )
        api, info = tokens.create(conn, user_id=u.id, name="prom", scope="read", created_by="x")
        dump = (
            conn.execute(
                text("select string_agg(t::text, ' ') from (select * from sessions) t")
            ).scalar_one()
            + conn.execute(
                text("select string_agg(t::text, ' ') from (select * from api_tokens) t")
            ).scalar_one()
        )
    assert token not in dump and api not in dump
    assert info.prefix == api[:10] and info.role == "viewer"
    assert users.authenticate  # a service account has no password: it cannot log in
    with migrated_engine.begin() as conn:
        assert users.authenticate(conn, "gina", "") is None
