"""Canary passwords through every way a password can enter connwatch, then looked for
everywhere it could leak.

Ways in: the target form (typed, and typed again on an edit that moves the endpoint),
YAML import (a literal password), and the places a password does not belong and must be
refused: a libpq conninfo ``password=``, URL credentials, ``user/pw@`` in an Oracle
connect string, ``options.password`` in a mode's params, a literal wallet password.
Every stored canary is proven to be really stored (the agent's spec decrypts it); then
none of them may appear in any page or API response (every GET route of the app, asked
as an admin), the refusal messages, the audit log, an export (with and without secrets),
a log line, or a ``pg_dump`` of the whole store.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app.agent.scheduling.specs import build_spec, load_series
from app.config import Settings
from app.demo.pgcluster import PgCluster, find_pg_bindir
from app.secrets import Vault
from app.targets.policy import WritePolicy
from app.targets.schema import TargetsFileError, parse_targets
from app.targets.sync import dump_yaml, export_targets, import_targets
from app.web.access.guards import app_routes

STORED = {
    "form": "Canary-Form-3Kx91",
    "edit": "Canary-Edit-7Qp20",
    "yaml": "Canary-Yaml-5Wn44",
}
REFUSED = {
    "conninfo": "Canary-Conninfo-8Hd12",
    "url": "Canary-Url-2Zr77",
    "oracle": "Canary-Oracle-6Tb03",
    "options": "Canary-Options-4Mv58",
    "wallet": "Canary-Wallet-9Jc36",
}
FORM = {
    "enabled": "on",
    "kind": "postgres",
    "username": "u",
    "mode-0-name": "direct",
    "mode-0-kind": "direct",
    "mode-0-on": "on",
}


def _pg_dump(pg_cluster: PgCluster, engine: Engine) -> str:
    pg_dump = find_pg_bindir() / "pg_dump"
    if not pg_dump.exists():
        found = shutil.which("pg_dump")
        assert found, "pg_dump not found"
        pg_dump = Path(found)
    url = engine.url.render_as_string(hide_password=False).replace("+psycopg", "")
    res = subprocess.run(
        [str(pg_dump), "--no-owner", "--data-only", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert "COPY public.targets" in res.stdout or "INSERT INTO public.targets" in res.stdout
    return res.stdout


def test_no_canary_leaks_anywhere(
    client: TestClient,
    migrated_engine: Engine,
    vault: Vault,
    pg_cluster: PgCluster,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []

    def post(url: str, data: dict[str, str], expect: int) -> None:
        res = client.post(url, data=data, follow_redirects=False)
        assert res.status_code == expect, (url, res.status_code, res.text[:300])
        if expect == 303:
            seen.append(res.text)

    # -- the form: a typed password, then an edit that moves the endpoint with a new one
    post("/targets/new", {**FORM, "name": "canary", "dsn": "db1:5432/app",
                          "password": STORED["form"]}, 303)  # fmt: skip
    post("/targets/canary/edit", {**FORM, "dsn": "db2:5432/app", "password": STORED["edit"]},
         303)  # fmt: skip
    # -- the form, with passwords where they do not belong: refused, nothing stored
    wrong = {
        "conninfo": {"dsn": f"host=db3 dbname=app password={REFUSED['conninfo']}"},
        "url": {"dsn": f"postgresql://u:{REFUSED['url']}@db3:5432/app"},
        "options": {"dsn": "db3:5432/app",
                    "mode-0-params": f'{{"options": {{"password": "{REFUSED["options"]}"}}}}'},
    }  # fmt: skip
    for i, (what, fields) in enumerate(wrong.items()):
        res = client.post("/targets/new", data={**FORM, "name": f"wrong{i}", **fields})
        assert res.status_code == 422, (what, res.text[:300])
    # -- YAML import (literal), and YAML with passwords in the wrong places
    policy = WritePolicy.from_settings(Settings(data_dir=tmp_path / "data"))
    with migrated_engine.begin() as conn:
        doc = parse_targets(
            "targets:\n  - {name: yaml-canary, kind: postgres, dsn: 'db4:5432/app', username: u,"
            f" password: {STORED['yaml']}, modes: [{{name: direct}}]}}\n",
            "canary.yaml",
        )
        import_targets(conn, doc, vault, policy=policy)
    refused_yaml = [
        f"{{name: o, kind: oracle, dsn: 'scott/{REFUSED['oracle']}@db5:1521/S', username: u,"
        " modes: [{name: dedicated}]}",
        "{name: w, kind: oracle, dsn: 'db5:1521/S', username: u,"
        f" params: {{wallet_location: /etc/w, wallet_password_ref: {REFUSED['wallet']}}},"
        " modes: [{name: dedicated}]}",
    ]
    for body in refused_yaml:
        with pytest.raises(TargetsFileError) as info, migrated_engine.begin() as conn:
            import_targets(conn, parse_targets(f"targets:\n  - {body}\n", "bad.yaml"), vault,
                           policy=policy)  # fmt: skip
        seen.append(str(info.value))
    # -- the stored canaries are really there: the agent's spec decrypts them
    settings = Settings(data_dir=tmp_path / "data", database_url="postgresql://x@h/x")
    with migrated_engine.connect() as conn:
        rows = load_series(conn, "default")
    passwords = {build_spec(r, vault, settings).endpoint.password for r in rows.values()}
    assert {STORED["edit"], STORED["yaml"]} <= passwords
    # -- every GET route of the app, as an admin
    names = {"name": "canary"}
    for route in app_routes(client.app):  # type: ignore[arg-type]
        if route.kind != "api" or "GET" not in route.methods:
            continue
        url = re.sub(r"\{(\w+)(:[^}]*)?\}", lambda m: names.get(m.group(1), "1"), route.path)
        res = client.get(url, params={"range": "1h"})
        assert res.status_code < 500, (url, res.status_code)
        seen.append(res.text)
    # -- exports, the audit log, log lines, and a dump of the whole store
    with migrated_engine.connect() as conn:
        seen.append(dump_yaml(export_targets(conn)))
        seen.append(dump_yaml(export_targets(conn, include_secrets=False)))
    seen.append(client.get("/api/v1/audit", params={"limit": 500}).text)
    seen.append("\n".join(r.getMessage() for r in caplog.records))
    seen.append(_pg_dump(pg_cluster, migrated_engine))
    everything = "\n".join(seen)
    assert len(everything) > 10_000  # the pages really were read
    leaked = [c for c in [*STORED.values(), *REFUSED.values()] if c in everything]
    assert leaked == []
