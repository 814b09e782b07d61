"""``connwatch secrets rotate`` on a real store: a new key first, every stored password
re-encrypted, running processes keep reading (their vault reloads the ring), old keys
dropped only when nothing needs them; a world-readable key file is refused."""

from __future__ import annotations

from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken
from sqlalchemy import create_engine, text

from app.demo.pgcluster import PgCluster
from app.secrets import Vault
from app.secrets.vault import parse_keys
from tests.test_cli import assert_clean_failure, run_cli

PW = "Canary-rotate-5512"


def test_rotate_reencrypts_without_a_gap_and_drops_old_keys(
    pg_cluster: PgCluster, pg_database: str, tmp_path: Path
) -> None:
    keys_dir = tmp_path / "keys"  # outside the data directory, as the README says
    keys_dir.mkdir()
    key_file = keys_dir / "secret.key"
    first = Fernet.generate_key()
    key_file.write_bytes(first + b"\n")
    key_file.chmod(0o600)
    env = {
        "CONNWATCH_DATABASE_URL": f"postgresql://{pg_cluster.user}@127.0.0.1:{pg_cluster.port}/{pg_database}",
        "CONNWATCH_DATA_DIR": str(tmp_path / "data"),
        "CONNWATCH_SECRET_KEY_FILE": str(key_file),
    }
    doc = tmp_path / "t.yaml"
    doc.write_text(
        "targets:\n  - {name: pg, kind: postgres, dsn: 'db1:5432/app', username: u,\n"
        f"     password: {PW}, modes: [{{name: direct}}]}}\n"
    )
    assert run_cli("targets", "import", str(doc), env=env).returncode == 0
    engine = create_engine(pg_cluster.url(pg_database))

    def token() -> str:
        with engine.connect() as conn:
            return str(conn.execute(text("select password_enc from targets")).scalar_one())

    before = token()
    running = Vault([first], reload=lambda: parse_keys(key_file.read_text(), "key file"))
    res = run_cli("secrets", "rotate", env=env)
    assert res.returncode == 0, res.stderr
    assert PW not in res.stdout + res.stderr
    ring = parse_keys(key_file.read_text(), "key file")
    assert len(ring) == 2 and ring[1] == first and oct(key_file.stat().st_mode)[-3:] == "600"
    after = token()
    assert after != before
    assert Vault(ring[:1]).decrypt(after) == PW  # under the new key alone
    try:
        Fernet(first).decrypt(after.encode())
        raise AssertionError("the old key still opens the re-encrypted token")
    except InvalidToken:
        pass
    assert running.decrypt(after) == PW  # a process started before: reloads, no gap
    res = run_cli("secrets", "rotate", "--drop-old", env=env)
    assert res.returncode == 0, res.stderr
    assert parse_keys(key_file.read_text(), "key file") == ring[:1]
    assert Vault(ring[:1]).decrypt(token()) == PW
    with engine.connect() as conn:
        actions = [r[0] for r in conn.execute(text("select action from audit_log order by id"))]
    assert "secrets.rotate" in actions
    engine.dispose()
    key_file.chmod(0o644)
    assert_clean_failure(run_cli("secrets", "rotate", env=env), "readable")
