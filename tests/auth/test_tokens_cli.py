"""``connwatch tokens ...`` as a real subprocess: shown once, stored as a hash, listed by
prefix with scope and state, revocable, audited."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine, text

from app.demo.pgcluster import PgCluster
from tests.test_cli import assert_clean_failure, run_cli


def test_create_list_revoke(pg_cluster: PgCluster, pg_database: str, tmp_path: Path) -> None:
    env = {
        "CONNWATCH_DATABASE_URL": f"postgresql://{pg_cluster.user}@127.0.0.1:{pg_cluster.port}/{pg_database}",
        "CONNWATCH_DATA_DIR": str(tmp_path / "data"),
        "CONNWATCH_SECRET_KEY": "0" * 43 + "=",
    }
    assert run_cli("users", "add", "prom", "--service", "--role", "viewer", env=env).returncode == 0
    res = run_cli(
        "tokens", "create", "--user", "prom", "--name", "prometheus", "--scope", "read", env=env
    )
    assert res.returncode == 0, res.stderr
    token = res.stdout.strip()
    assert len(token) >= 32 and "shown once" in res.stderr
    listing = run_cli("tokens", "list", env=env).stdout
    assert "prometheus" in listing and "read" in listing and "active" in listing
    assert token not in listing and token[:8] in listing  # the prefix, never the token
    engine = create_engine(pg_cluster.url(pg_database))
    with engine.connect() as conn:
        dump = str(conn.execute(text("select * from api_tokens")).mappings().all())
        assert token not in dump
    assert_clean_failure(
        run_cli("tokens", "create", "--user", "nobody", "--name", "x", env=env), "nobody"
    )
    tid = next(line.split()[0] for line in listing.splitlines() if "prometheus" in line)
    assert run_cli("tokens", "revoke", tid, env=env).returncode == 0
    assert "revoked" in run_cli("tokens", "list", env=env).stdout
    with engine.connect() as conn:
        actions = [r[0] for r in conn.execute(text("select action from audit_log order by id"))]
    engine.dispose()
    assert actions.count("token.create") == 1 and actions.count("token.revoke") == 1
