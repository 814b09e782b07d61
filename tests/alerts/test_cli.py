"""``connwatch alerts ...`` and ``connwatch annotate`` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import create_engine, text

from tests.alerts.test_ascode import GOOD
from tests.test_cli import assert_clean_failure, run_cli, store_env  # noqa: F401


def test_alerts_as_code_and_shell_commands(store_env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    f = tmp_path / "alerts.yaml"
    f.write_text(GOOD)
    res = run_cli("alerts", "import", str(f), env=store_env)
    assert res.returncode == 0, res.stderr
    assert "7 created, 0 updated, 0 removed" in res.stdout
    exported = run_cli("alerts", "export", env=store_env)
    assert exported.returncode == 0 and "hunter2" not in exported.stdout

    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "rules:\n  - {name: new-rule, kind: nodata}\n  - {name: broken, kind: latency}\n"
    )
    res = run_cli("alerts", "import", str(bad), env=store_env)
    assert_clean_failure(res, f"{bad}: rule #2 'broken': threshold_ms: a latency rule needs")
    engine = create_engine(
        store_env["CONNWATCH_DATABASE_URL"].replace("postgresql://", "postgresql+psycopg://")
    )
    with engine.connect() as conn:
        assert (
            conn.execute(
                text("select count(*) from alert_rules where name = 'new-rule'")
            ).scalar_one()
            == 0
        )

    res = run_cli(
        "alerts",
        "silence",
        "--for",
        "2h",
        "--target",
        "sales*",
        "--comment",
        "DRCP pool resize",
        "--author",
        "ann",
        env=store_env,
    )
    assert res.returncode == 0 and "until" in res.stdout, res.stderr

    res = run_cli(
        "annotate", "listener restarted", "--tag", "deploy", "--author", "ci", env=store_env
    )
    assert res.returncode == 0 and "every target" in res.stdout, res.stderr
    res = run_cli("annotate", "x", "--target", "nope", env=store_env)
    assert_clean_failure(res, "target: no target named 'nope'")

    status = run_cli("alerts", "status", "--json", env=store_env)
    assert status.returncode == 0 and json.loads(status.stdout) == []
    res = run_cli("alerts", "test-contact", "ghost", env=store_env)
    assert_clean_failure(res, "no contact point named 'ghost'")
    with engine.connect() as conn:
        assert conn.execute(text("select count(*) from annotations")).scalar_one() == 1
        assert conn.execute(text("select count(*) from alert_silences")).scalar_one() == 2
    engine.dispose()
