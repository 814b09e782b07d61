"""What a writer may store: references and file paths only from admins and inside the
allow lists, nothing in the data directory, caps, networks, and a password that only
goes to the endpoint it was given for (file, form and API alike go through here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.config import Settings
from app.secrets import Vault
from app.targets.policy import PolicyError, WritePolicy
from app.targets.schema import parse_targets
from app.targets.sync import export_targets, import_targets


@pytest.fixture
def vault() -> Vault:
    return Vault(Fernet.generate_key())


def _doc(body: str):  # type: ignore[no-untyped-def]
    return parse_targets("targets:\n" + body, "t.yaml")


PG = (
    "  - name: pg\n    kind: postgres\n    dsn: {dsn}\n    username: {user}\n{pw}"
    "    modes:\n      - name: direct\n{extra}"
)


def pg(dsn: str = "db1:5432/app", user: str = "u", pw: str = "", extra: str = "") -> str:
    pwline = f"    password: {pw}\n" if pw else ""
    return PG.format(dsn=dsn, user=user, pw=pwline, extra=extra)


def _policy(tmp_path: Path, *, admin: bool = True, **kw: object) -> WritePolicy:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    return WritePolicy.from_settings(Settings(data_dir=data, **kw), admin=admin)  # type: ignore[arg-type]


def _row(engine: Engine) -> dict[str, object]:
    with engine.connect() as conn:
        return dict(conn.execute(text("select * from targets where name = 'pg'")).mappings().one())


def test_endpoint_change_without_the_password_is_refused(
    migrated_engine: Engine, vault: Vault, tmp_path: Path
) -> None:
    policy = _policy(tmp_path)
    with migrated_engine.begin() as conn:
        import_targets(conn, _doc(pg(pw="Canary-1")), vault, policy=policy)
    before = _row(migrated_engine)
    sealed = vault.open(str(before["password_enc"]))
    assert sealed.secret == "Canary-1" and sealed.endpoints
    for changed, what in [
        (pg(dsn="evil.example:5432/app"), "dsn"),
        (pg(user="postgres"), "username"),
        (
            pg(extra="        params: {host: evil.example, port: 5432}\n"),
            "mode 'direct' host, port",
        ),
    ]:
        with (
            pytest.raises(PolicyError, match=f"changing {what} needs the password again"),
            migrated_engine.begin() as conn,
        ):
            import_targets(conn, _doc(changed), vault, policy=policy)
        assert _row(migrated_engine) == before  # nothing stored half
    # with the password given again, the change is fine, and bound anew
    with migrated_engine.begin() as conn:
        import_targets(conn, _doc(pg(dsn="db2:5432/app", pw="Canary-2")), vault, policy=policy)
    assert vault.open(str(_row(migrated_engine)["password_enc"])).secret == "Canary-2"
    # what does not move the logon needs no password
    with migrated_engine.begin() as conn:
        import_targets(
            conn, _doc(pg(dsn="db2:5432/app", extra="        params: {connect_timeout: 3}\n")),
            vault, policy=policy,
        )  # fmt: skip


def test_a_new_mode_with_a_new_host_needs_the_password(
    migrated_engine: Engine, vault: Vault, tmp_path: Path
) -> None:
    policy = _policy(tmp_path)
    with migrated_engine.begin() as conn:
        import_targets(conn, _doc(pg(pw="Canary-1")), vault, policy=policy)
    extra = "      - name: pgbouncer_session\n        params: {host: evil.example}\n"
    with (
        pytest.raises(PolicyError, match="new mode 'pgbouncer_session'"),
        migrated_engine.begin() as conn,
    ):
        import_targets(conn, _doc(pg() + extra), vault, policy=policy)


def test_an_exported_token_goes_back_only_to_its_endpoint(
    migrated_engine: Engine, vault: Vault, tmp_path: Path
) -> None:
    policy = _policy(tmp_path)
    with migrated_engine.begin() as conn:
        import_targets(conn, _doc(pg(pw="Canary-1")), vault, policy=policy)
        token = export_targets(conn)["targets"][0]["password_encrypted"]
    moved = pg(dsn="evil.example:5432/app").replace(
        "    modes:", f"    password_encrypted: {token}\n    modes:"
    )
    with (
        pytest.raises(PolicyError, match="encrypted for another endpoint"),
        migrated_engine.begin() as conn,
    ):
        import_targets(conn, _doc(moved.replace("name: pg", "name: copy")), vault, policy=policy)
    same = pg().replace("    modes:", f"    password_encrypted: {token}\n    modes:")
    with migrated_engine.begin() as conn:
        import_targets(conn, _doc(same.replace("name: pg", "name: copy")), vault, policy=policy)


def test_references_are_admin_only_and_allow_listed(
    migrated_engine: Engine, vault: Vault, tmp_path: Path
) -> None:
    op = _policy(tmp_path, admin=False, secret_env_prefix="CWPW_")
    admin = _policy(tmp_path, secret_env_prefix="CWPW_")
    with (
        pytest.raises(PolicyError, match="only an admin may set a password reference"),
        migrated_engine.begin() as conn,
    ):
        import_targets(conn, _doc(pg(pw="env:CWPW_PG")), vault, policy=op)
    for ref, rule in [
        ("env:HOME", "starting with 'CWPW_'"),
        (f"file:{tmp_path}/data/secret.key", "file: references are off"),
        ("file:/etc/passwd", "file: references are off"),
    ]:
        with pytest.raises(PolicyError, match=rule), migrated_engine.begin() as conn:
            import_targets(conn, _doc(pg(pw=ref)), vault, policy=admin)
    with migrated_engine.begin() as conn:
        import_targets(conn, _doc(pg(pw="env:CWPW_PG")), vault, policy=admin)
    row = _row(migrated_engine)
    assert row["password_ref"] == "env:CWPW_PG"
    assert vault.open(str(row["ref_binding"])).secret == "env:CWPW_PG"
    # an operator re-saving keeps the admin's reference, but may not move its endpoint
    with migrated_engine.begin() as conn:
        import_targets(conn, _doc(pg()), vault, policy=op)
    with (
        pytest.raises(PolicyError, match="changing dsn needs the password again"),
        migrated_engine.begin() as conn,
    ):
        import_targets(conn, _doc(pg(dsn="evil.example:5432/app")), vault, policy=op)


def test_file_paths_are_admin_only_and_never_the_data_directory(
    migrated_engine: Engine, vault: Vault, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    op = _policy(tmp_path, admin=False)
    admin = _policy(tmp_path)
    ora = (
        "  - name: ora\n    kind: oracle\n    dsn: h:1521/S\n    username: u\n"
        "    params: {{config_dir: {d}}}\n    modes: [{{name: dedicated}}]\n"
    )
    with (
        pytest.raises(PolicyError, match="only an admin may set or change it"),
        migrated_engine.begin() as conn,
    ):
        import_targets(conn, _doc(ora.format(d="/etc/oracle")), vault, policy=op)
    with pytest.raises(PolicyError, match="data directory"), migrated_engine.begin() as conn:
        import_targets(conn, _doc(ora.format(d=data / "pg")), vault, policy=admin)
    unix = pg(extra=f"        transport: unix\n        params: {{host: {data}/pg}}\n")
    with (
        pytest.raises(PolicyError, match="unix socket directory inside connwatch's data"),
        migrated_engine.begin() as conn,
    ):
        import_targets(conn, _doc(unix), vault, policy=admin)
    demo = pg(extra=f"        transport: unix\n        params: {{host: {data}/demo-pg/sock}}\n")
    with migrated_engine.begin() as conn:  # the demo's own target cluster is not the store
        import_targets(conn, _doc(demo), vault, policy=admin)


def test_caps_on_series_and_intervals(
    migrated_engine: Engine, vault: Vault, tmp_path: Path
) -> None:
    policy = _policy(tmp_path, max_series_per_target=3, min_interval_ms=1000)
    many = "".join(f"      - name: m{i}\n        kind: direct\n" for i in range(4))
    body = "  - name: many\n    kind: postgres\n    dsn: h:5432/d\n    username: u\n    modes:\n"
    with (
        pytest.raises(PolicyError, match="4 probe series; at most 3"),
        migrated_engine.begin() as conn,
    ):
        import_targets(conn, _doc(body + many), vault, policy=policy)
    fast = pg(extra="        probes: [{probe: connping, interval: 100ms, timeout: 50ms}]\n")
    with (
        pytest.raises(PolicyError, match="below the smallest interval"),
        migrated_engine.begin() as conn,
    ):
        import_targets(conn, _doc(fast), vault, policy=policy)
    with migrated_engine.connect() as conn:
        assert conn.execute(text("select count(*) from series")).scalar_one() == 0


def test_target_networks(migrated_engine: Engine, vault: Vault, tmp_path: Path) -> None:
    policy = _policy(tmp_path, target_networks=["10.0.0.0/8", "127.0.0.0/8"])
    with pytest.raises(PolicyError, match="outside the networks"), migrated_engine.begin() as conn:
        import_targets(conn, _doc(pg(dsn="192.0.2.10:5432/app")), vault, policy=policy)
    with (
        pytest.raises(PolicyError, match="tnsnames alias hides its host"),
        migrated_engine.begin() as conn,
    ):
        import_targets(
            conn,
            _doc(
                "  - {name: a, kind: oracle, dsn: SALESPROD, username: u,"
                " modes: [{name: shared}]}\n"
            ),
            vault,
            policy=policy,
        )
    with migrated_engine.begin() as conn:
        import_targets(conn, _doc(pg(dsn="localhost:5432/app")), vault, policy=policy)
        import_targets(
            conn,
            _doc(pg(dsn="10.1.2.3:5432/app").replace("name: pg", "name: p2")),
            vault,
            policy=policy,
        )
