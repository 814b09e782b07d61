"""Targets as code: validation messages, import/export round trip, secrets never in clear."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select, text
from sqlalchemy.engine import Connection, Engine

from app.models import modes, series, targets
from app.secrets import ReferencePolicy, Vault
from app.targets.policy import PolicyError, WritePolicy
from app.targets.schema import (
    TargetsFile,
    TargetsFileError,
    credentials_in,
    load_targets_file,
    parse_targets,
)
from app.targets.sync import ImportResult, dump_yaml, export_targets, import_targets

# the allow lists targets.example.yaml's references need (both are off by default)
EXAMPLE_POLICY = WritePolicy(
    references=ReferencePolicy(file_dirs=(Path("/run/secrets"),), env_prefix="CW_PW_")
)


def _import(conn: Connection, doc: TargetsFile, vault: Vault, **kw: bool) -> ImportResult:
    return import_targets(conn, doc, vault, policy=EXAMPLE_POLICY, **kw)


ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def engine(migrated_engine: Engine) -> Engine:
    return migrated_engine


@pytest.fixture
def vault() -> Vault:
    return Vault(Fernet.generate_key())


def errors_of(doc: str) -> list[str]:
    with pytest.raises(TargetsFileError) as info:
        parse_targets(doc, "t.yaml")
    return info.value.errors


BAD_FILES = [
    ("targets: [\n  {name: a\n", "t.yaml:3:1: not valid YAML"),
    ("- just a list\n", "t.yaml: expected a mapping with a 'targets' list"),
    (
        "targets:\n  - {name: x, kind: mysql, dsn: h/s, username: u, modes: [{name: direct}]}\n",
        "t.yaml: target #1 'x': kind: Input should be 'oracle' or 'postgres'",
    ),
    (
        "targets:\n  - {name: x, kind: oracle, dsn: h/s, username: u, modes: [{name: direct}]}\n",
        "t.yaml: target #1 'x': modes[0].kind: 'direct' is not an oracle mode",
    ),
    (
        "targets:\n  - {name: ok, kind: postgres, dsn: h/d, username: u, modes: [{name: direct}]}\n"
        "  - {name: y, kind: oracle, dsn: h/s, username: u,\n"
        "     modes: [{name: dedicated,\n"
        "              probes: [{probe: connping, interval: 1s, timeout: 2s}]}]}\n",
        "t.yaml: target #2 'y': modes[0].probes[0]: timeout (2s) must not exceed interval (1s)",
    ),
    (
        "targets:\n  - {name: z, kind: oracle, dsn: h/s, username: u,\n"
        "     modes: [{name: dedicated, probes: [{probe: connping, interval: often}]}]}\n",
        "t.yaml: target #1 'z': modes[0].probes[0].interval: expected a duration",
    ),
    (
        "targets:\n  - {name: z, kind: oracle, dsn: scott/tiger@h/s, username: u,"
        " modes: [{name: dedicated}]}\n",
        "t.yaml: target #1 'z': dsn: the dsn must not contain credentials",
    ),
    (
        "targets:\n  - {name: z, kind: oracle, dsn: h/s, username: u, colour: red,"
        " modes: [{name: dedicated}]}\n",
        "t.yaml: target #1 'z': colour: Extra inputs are not permitted",
    ),
    (
        "targets:\n  - {name: a, kind: oracle, dsn: h/s, username: u, modes: [{name: dedicated}]}\n"
        "  - {name: a, kind: oracle, dsn: h/s, username: u, modes: [{name: dedicated}]}\n",
        "t.yaml: target #2 'a': name: target 'a' listed twice",
    ),  # probe and connection params are checked on import, against the probes' own schema
    (
        "targets:\n  - {name: p, kind: oracle, dsn: h/s, username: u,\n"
        "     modes: [{name: dedicated, probes: [{probe: connping, params: {wram: false}}]}]}\n",
        "t.yaml: target #1 'p': modes[0].probes[0].params: probe 'connping': "
        "unknown parameter(s) wram (known: server_time, warm)",
    ),
    (
        "targets:\n  - {name: p, kind: oracle, dsn: h/s, username: u,\n"
        "     modes: [{name: dedicated, probes: [{probe: sweep, params: {levels: [1, 64]}}]}]}\n",
        "t.yaml: target #1 'p': modes[0].probes[0].params: parameter 'levels' must be within 1..32",
    ),
    (
        "targets:\n  - {name: p, kind: oracle, dsn: h/s, username: u, params: {purity: sel},\n"
        "     modes: [{name: pooled}]}\n",
        "t.yaml: target #1 'p': params: parameter 'purity' must be one of default, new, self",
    ),
    (
        "targets:\n  - {name: p, kind: postgres, dsn: h/d, username: u,\n"
        "     modes: [{name: pgbouncer_session, params: {port: 99999, cclass: X}}]}\n",
        "t.yaml: target #1 'p': modes[0].params: unknown postgres parameter 'cclass'",
    ),
    (
        "targets:\n  - {name: p, kind: postgres, dsn: h/d, username: u,\n"
        "     modes: [{name: direct, probes: [{probe: serverstats}]}]}\n",
        "t.yaml: target #1 'p': modes[0].probes[0].probe: serverstats reads Oracle's V$ views",
    ),
    (
        "targets:\n  - {name: p, kind: oracle, dsn: h/s, username: u,\n"
        "     modes: [{name: dedicated, probes: [{probe: serverstats,\n"
        "              params: {user: mon, password_ref: hunter2}}]}]}\n",
        "t.yaml: target #1 'p': modes[0].probes[0].params: parameter 'password_ref' must be"
        " env:NAME or file:PATH",
    ),
]


def test_serverstats_reads_once_a_minute_unless_told_otherwise() -> None:
    doc = parse_targets(
        "targets:\n  - {name: p, kind: oracle, dsn: h/s, username: u,\n"
        "     modes: [{name: dedicated, probes: [{probe: serverstats},\n"
        "                                        {probe: connping}]}]}\n",
        "t.yaml",
    )
    probes = doc.targets[0].modes[0].probes
    first = probes[0]
    assert (first.probe, first.interval, first.timeout) == ("serverstats", 60_000, 5_000)
    assert probes[1].interval != 60_000


@pytest.mark.parametrize(("doc", "expected"), BAD_FILES)
def test_bad_files_name_file_entry_and_field(doc: str, expected: str) -> None:
    errors = errors_of(doc)
    assert any(e.startswith(expected) for e in errors), errors


def test_example_file_is_valid_and_covers_all_oracle_modes_and_postgres() -> None:
    doc = load_targets_file(ROOT / "targets.example.yaml")
    kinds = {t.kind for t in doc.targets}
    assert kinds == {"oracle", "postgres"}
    oracle_modes = {m.kind for t in doc.targets if t.kind == "oracle" for m in t.modes}
    assert {"dedicated", "shared", "pooled"} <= oracle_modes


def test_import_export_round_trip(engine: Engine, vault: Vault) -> None:
    doc = load_targets_file(ROOT / "targets.example.yaml")
    with engine.begin() as conn:
        res = _import(conn, doc, vault)
    assert (res.created, res.updated) == (3, 0)
    with engine.connect() as conn:
        exported = export_targets(conn)
    again = parse_targets(dump_yaml(exported), "export.yaml")
    with engine.begin() as conn:
        res2 = _import(conn, again, vault)
        assert (res2.created, res2.updated, res2.unchanged) == (0, 0, 3)
        exported2 = export_targets(conn)
    assert exported2 == exported
    assert again.model_dump() == parse_targets(dump_yaml(exported2), "x").model_dump()
    # what was imported is what the example says, series by series
    with engine.connect() as conn:
        n_series = conn.execute(select(text("count(*)")).select_from(series)).scalar_one()
    assert n_series == sum(len(m.probes) for t in doc.targets for m in t.modes)


def test_literal_password_is_stored_encrypted_and_exported_only_as_token(
    engine: Engine, vault: Vault
) -> None:
    doc = parse_targets(
        "targets:\n  - {name: p, kind: oracle, dsn: h:1521/s, username: u,"
        " password: 's3cr3t-Pw', modes: [{name: dedicated}]}\n",
        "t.yaml",
    )
    with engine.begin() as conn:
        _import(conn, doc, vault)
        row = conn.execute(select(targets)).mappings().one()
        dump = conn.execute(text("select row_to_json(t)::text from targets t")).scalar_one()
        exported = dump_yaml(export_targets(conn))
        no_secrets = dump_yaml(export_targets(conn, include_secrets=False))
    assert "s3cr3t-Pw" not in dump
    assert row["password_ref"] is None
    assert vault.decrypt(row["password_enc"]) == "s3cr3t-Pw"
    assert "s3cr3t-Pw" not in exported
    assert "password_encrypted" in exported
    assert "password" not in no_secrets


def test_reimport_without_password_keeps_it_only_for_the_same_endpoint(
    engine: Engine, vault: Vault
) -> None:
    first = (
        "targets:\n  - {name: p, kind: oracle, dsn: h/s, username: u, password: env:CW_PW_P,\n"
        "     modes: [{name: dedicated}]}\n"
    )
    same_endpoint = first.replace(", password: env:CW_PW_P", ", description: moved racks")
    other_user = first.replace("username: u, password: env:CW_PW_P", "username: v")
    with engine.begin() as conn:
        _import(conn, parse_targets(first, "a"), vault)
        _import(conn, parse_targets(same_endpoint, "b"), vault)
        row = conn.execute(select(targets)).mappings().one()
    assert (row["description"], row["password_ref"]) == ("moved racks", "env:CW_PW_P")
    with (
        pytest.raises(PolicyError, match="changing username needs the password again"),
        engine.begin() as conn,
    ):
        _import(conn, parse_targets(other_user, "c"), vault)
    with engine.connect() as conn:
        row = conn.execute(select(targets)).mappings().one()
    assert (row["username"], row["password_ref"]) == ("u", "env:CW_PW_P")  # nothing half


def test_prune_removes_what_the_file_does_not_name(engine: Engine, vault: Vault) -> None:
    doc = load_targets_file(ROOT / "targets.example.yaml")
    small = parse_targets(
        "targets:\n  - name: sales-prod\n    kind: oracle\n    dsn: h/s\n    username: u\n"
        "    password: env:CW_PW_SALES\n"  # a new endpoint needs the password again
        "    modes:\n      - {name: shared}\n",
        "small.yaml",
    )
    with engine.begin() as conn:
        _import(conn, doc, vault)
        res = _import(conn, small, vault, prune=True)
        names = conn.execute(select(targets.c.name)).scalars().all()
        mode_names = conn.execute(select(modes.c.name)).scalars().all()
        probes = conn.execute(select(series.c.probe)).scalars().all()
    assert res.removed == 2
    assert names == ["sales-prod"]
    assert mode_names == ["shared"]
    assert probes == ["connping"]


def test_a_mode_without_probes_is_probed_every_10_seconds(engine: Engine, vault: Vault) -> None:
    # issue 11: the default went through the duration parser as a bare number (seconds)
    doc = parse_targets(
        "targets:\n  - {name: t, kind: postgres, dsn: 'h:5432/d', username: u, "
        "modes: [{name: direct}, {name: unix, transport: unix, probes: [{probe: connping}]}]}\n",
        "t.yaml",
    )
    assert [p.interval for m in doc.targets[0].modes for p in m.probes] == [10_000, 10_000]
    example = load_targets_file(ROOT / "targets.example.yaml")
    with engine.begin() as conn:
        _import(conn, example, vault)
        _import(conn, doc, vault)
        intervals = conn.execute(select(series.c.interval_ms)).scalars().all()
        exported = dump_yaml(export_targets(conn))
    assert 10_000_000 not in intervals and max(intervals) <= 3_600_000, intervals
    assert "10000s" not in exported and "interval: 10s" in exported


def _stamps(conn: Connection) -> dict[str, object]:
    rows = conn.execute(
        text(
            "select 't:' || t.name, t.updated_at from targets t union all "
            "select 's:' || t.name || '/' || m.name || '/' || s.probe || '/' || s.site, "
            "s.updated_at from series s join modes m on m.id = s.mode_id "
            "join targets t on t.id = m.target_id"
        )
    ).all()
    return {k: v for k, v in rows}


def test_reimport_of_unchanged_targets_changes_nothing(engine: Engine, vault: Vault) -> None:
    """Importing the same file again: nothing 'updated', no updated_at moved, a literal
    password not re-encrypted; changing one series updates that target and series only."""
    yaml_text = (ROOT / "targets.example.yaml").read_text()
    literal = (
        "  - {name: lit, kind: oracle, dsn: h:1521/s, username: u, password: 's3cr3t-Pw',"
        " modes: [{name: dedicated}]}\n"
    )
    doc = parse_targets(yaml_text + literal, "t.yaml")
    with engine.begin() as conn:
        first = _import(conn, doc, vault)
        token = conn.execute(text("select password_enc from targets where name = 'lit'")).scalar()
    assert (first.created, first.updated, first.unchanged) == (4, 0, 0)
    with engine.connect() as conn:
        before = _stamps(conn)
    with engine.begin() as conn:
        again = _import(conn, doc, vault)
        same_token = conn.execute(
            text("select password_enc from targets where name = 'lit'")
        ).scalar()
    assert (again.created, again.updated, again.unchanged) == (0, 0, 4)
    assert same_token == token
    with engine.connect() as conn:
        assert _stamps(conn) == before
    # one series' interval changes: its target is updated, the others are not
    first_target = doc.targets[0]
    probe = first_target.modes[0].probes[0]
    changed = doc.model_copy(deep=True)
    changed.targets[0].modes[0].probes[0].interval = probe.interval * 2
    with engine.begin() as conn:
        third = _import(conn, changed, vault)
    assert (third.created, third.updated, third.unchanged) == (0, 1, 3)
    with engine.connect() as conn:
        after = _stamps(conn)
    moved = {k for k in after if after[k] != before[k]}
    key = f"s:{first_target.name}/{first_target.modes[0].name}/{probe.probe}/{probe.site}"
    assert moved == {key}


@pytest.mark.parametrize(
    ("dsn", "found"),
    [
        ("scott/tiger@db:1521/S", True),
        ("postgresql://app:pw@db/app", True),
        ("db:1521/SALES", False),
        ("tcps://db:2484/S?wallet_location=/w", False),
        ("host=db port=5432 dbname=app", False),
        ("x" * 60_000, False),  # the regular expressions took 50 s on this
        ("a/" * 30_000 + "@h", True),
    ],
)
def test_credentials_in_a_dsn_are_found_in_linear_time(dsn: str, found: bool) -> None:
    assert credentials_in(dsn) is found


def test_long_and_huge_values_are_refused_by_name() -> None:
    base = (
        "targets:\n  - {name: t, kind: oracle, dsn: DSN, username: u, modes: [{name: dedicated}]}\n"
    )
    with pytest.raises(TargetsFileError, match=r"dsn: String should have at most 4096 characters"):
        parse_targets(base.replace("DSN", "x" * 5000), "f")
    with pytest.raises(TargetsFileError, match=r"port '9{4000}' in .* must be a number from 1"):
        parse_targets(base.replace("DSN", "h:" + "9" * 4000 + "/s"), "f")
