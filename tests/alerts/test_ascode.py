"""Alerting as code: all or nothing, messages naming file, entry and field, round trips."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.alerts.ascode import (
    AlertsFileError,
    dump_yaml,
    export_alerts,
    import_alerts,
    parse_alerts,
)
from app.secrets import Vault

GOOD = """
contact_points:
  - {name: oncall-hook, channel: webhook, url: "https://hooks.example/cw", secret: hunter2}
  - {name: oncall-mail, channel: email, to: [oncall@example.org]}
slos:
  - {name: sales-logons, selector: {targets: [sales*]}, objective: 99.5, threshold_ms: 200}
rules:
  - name: sales-logon-slow
    kind: latency
    selector: {targets: [sales*], probe: connping}
    threshold_ms: 200
    clear_ms: 150
    pending: 2m
    contact_points: [oncall-hook, oncall-mail]
  - {name: sales-budget, kind: slo_burn, slo: sales-logons, severity: ticket}
maintenance_windows:
  - name: sunday-patching
    selector: {targets: [hr]}
    schedule: {weekly: {days: [sun], at: "02:00"}}
    timezone: Europe/Paris
    duration: 2h
silences:
  - {starts_at: "2030-01-01T00:00:00Z", ends_at: "2030-01-02T00:00:00Z", author: ann,
     comment: migration, rules: [sales-*]}
"""


def test_import_export_round_trip_without_plain_secrets(migrated_engine: Engine) -> None:
    vault = Vault(Fernet.generate_key())
    doc = parse_alerts(GOOD, "alerts.yaml")
    with migrated_engine.begin() as conn:
        res = import_alerts(conn, doc, vault, source="alerts.yaml")
    assert (res.created, res.updated) == (7, 0)
    with migrated_engine.connect() as conn:
        exported = dump_yaml(export_alerts(conn, include_secrets=True, now=datetime.now(UTC)))
        assert "hunter2" not in exported and "secret_encrypted:" in exported
        no_secrets = dump_yaml(export_alerts(conn, include_secrets=False, now=datetime.now(UTC)))
        assert "secret" not in no_secrets
    again = parse_alerts(exported, "export.yaml")
    with migrated_engine.begin() as conn:
        res = import_alerts(conn, again, vault, source="export.yaml")
        assert (res.created, res.updated) == (0, 6)  # the silence exists already
        assert (
            dump_yaml(export_alerts(conn, include_secrets=True, now=datetime.now(UTC))) == exported
        )
        # prune: a file naming only one rule removes the rest
        only = parse_alerts("rules: [{name: x, kind: nodata}]", "one.yaml")
        res = import_alerts(conn, only, vault, source="one.yaml", prune=True)
        assert res.removed == 6
        names = conn.execute(text("select name from alert_rules")).scalars().all()
        assert names == ["x"]


@pytest.mark.parametrize(
    ("doc", "line"),
    [
        (
            "rules: [{name: a, kind: latency}]",
            "f.yaml: rule #1 'a': threshold_ms: a latency rule needs threshold_ms",
        ),
        (
            "rules: [{name: a, kind: latency, threshold_ms: 100, clear_ms: 200}]",
            "f.yaml: rule #1 'a': clear_ms: must not exceed threshold_ms",
        ),
        (
            "rules: [{name: a, kind: latency, threshold_ms: 1, window: 5x}]",
            "f.yaml: rule #1 'a': window: expected a duration",
        ),
        (
            "rules: [{name: a, kind: nodata}, {name: a, kind: nodata}]",
            "f.yaml: rule #2 'a': name: rule 'a' listed twice",
        ),
        (
            "rules: [{name: a, kind: availability, m: 6, n: 5}]",
            "f.yaml: rule #1 'a': m: 6 failures cannot be more than the last n=5",
        ),
        (
            "contact_points: [{name: c, channel: webhook, url: 'file:///etc/passwd'}]",
            "f.yaml: contact point #1 'c': url: must be an http:// or https:// URL",
        ),
        (
            "maintenance_windows: [{name: w, schedule: {cron: '* * *'}, duration: 1h}]",
            "f.yaml: maintenance window #1 'w': schedule: cron: '* * *' needs 5 fields",
        ),
        ("rulez: []", "f.yaml: unknown section(s) rulez"),
        ("rules: [{name: a, kind: nodata, bogus: 1}]", "f.yaml: rule #1 'a': bogus: Extra inputs"),
        ("rules: [a", "f.yaml:1:10: not valid YAML"),
    ],
)
def test_bad_files_name_file_entry_and_field(doc: str, line: str) -> None:
    with pytest.raises(AlertsFileError) as err:
        parse_alerts(doc, "f.yaml")
    assert any(e.startswith(line) for e in err.value.errors), err.value.errors


def test_unknown_references_change_nothing(migrated_engine: Engine) -> None:
    doc = parse_alerts(
        "rules:\n  - {name: ok, kind: nodata}\n"
        "  - {name: r, kind: slo_burn, slo: nope, contact_points: [ghost]}\n",
        "f.yaml",
    )
    with migrated_engine.begin() as conn, pytest.raises(AlertsFileError) as err:
        import_alerts(conn, doc, Vault(Fernet.generate_key()), source="f.yaml")
    assert err.value.errors == [
        "f.yaml: rule #2 'r': contact_points: no contact point 'ghost'",
        "f.yaml: rule #2 'r': slo: no SLO 'nope'",
    ]
    with migrated_engine.connect() as conn:
        assert conn.execute(text("select count(*) from alert_rules")).scalar_one() == 0
