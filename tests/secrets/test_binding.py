"""Endpoint ids: what moves a logon changes the id; what does not, does not."""

from __future__ import annotations

from app.secrets.binding import Endpoint, changed_fields, endpoint_fields


def _ep(mode: str = "direct", **kw: object) -> Endpoint:
    base: dict[str, object] = dict(
        kind="postgres", dsn="db:5432/app", username="u", mode_kind=mode, transport="tcp",
        target_params={}, mode_params={},
    )  # fmt: skip
    base.update(kw)
    return Endpoint(mode, endpoint_fields(**base))  # type: ignore[arg-type]


def test_every_field_that_moves_a_logon_changes_the_id() -> None:
    base = _ep().id
    moved = [
        _ep(dsn="evil:5432/app"),
        _ep(username="postgres"),
        _ep(transport="unix"),
        _ep(mode_params={"host": "evil"}),
        _ep(mode_params={"port": 6543}),
        _ep(target_params={"dbname": "other"}),
        _ep(mode_params={"sslmode": "disable"}),
        _ep(kind="oracle"),
        _ep(mode_params={"options": {"target_session_attrs": "any"}}),
    ]
    assert all(e.id != base for e in moved)
    assert len({e.id for e in moved}) == len(moved)


def test_what_does_not_move_it_keeps_the_id() -> None:
    base = _ep()
    assert _ep(mode_params={"connect_timeout": 3}).id == base.id
    assert _ep(target_params={"host": "h"}).id == _ep(mode_params={"host": "h"}).id  # overlay
    oracle = dict(kind="oracle", dsn="h:1521/S")
    assert (
        _ep("dedicated", mode_kind="dedicated", **oracle).id
        == _ep(  # type: ignore[arg-type]
            "pooled", mode_kind="pooled", mode_params={"cclass": "X", "purity": "self"}, **oracle
        ).id
    )  # DRCP or not, an Oracle logon goes to the same listener and service


def test_changed_fields_names_what_moved() -> None:
    old = [_ep(), _ep("pgb", mode_kind="pgbouncer_session")]
    new = [
        _ep(dsn="evil:5432/app"),
        _ep("pgb", mode_kind="pgbouncer_session", mode_params={"host": "evil", "port": 1}),
        _ep("extra", mode_kind="pgbouncer_transaction", mode_params={"host": "x"}),
    ]
    bound = {e.id for e in old}
    assert changed_fields(old, new, bound) == ["dsn", "mode 'pgb' host, port", "new mode 'extra'"]
