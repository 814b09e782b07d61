"""Bad input costs nothing (issue 12, item 8): hostile requests get a 4xx, never a 500.

One database per module: the web tests' known data (``seed``) plus "wide", an Oracle
target with six modes that all fail (the timeseries API used to ask the store for more
failed samples than one read allows, exactly during an outage).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from app.demo.pgcluster import PgCluster
from app.models import targets
from app.samples import ErrorClass, Sample, SampleStatus
from app.secrets import Vault
from app.store.write.ingest import write_samples
from app.store.write.rollups import roll_up_pending
from app.targets.schema import parse_targets
from app.targets.sync import import_targets
from app.web.views.lookups import load_targets
from tests.web.data import Seeded, seed, seeded_app

WIDE_MODES = [f"m{i}" for i in range(1, 8)]
WIDE_YAML = "targets:\n  - name: wide\n    kind: oracle\n    dsn: dbhost:1521/WIDE\n" + (
    "    username: cw\n    modes:\n"
    + "".join(
        f"      - {{name: {m}, kind: {('dedicated', 'shared', 'pooled')[i % 3]}}}\n"
        for i, m in enumerate(WIDE_MODES)
    )
)


def _seed_all(engine: Engine, vault: Vault) -> Seeded:
    data = seed(engine, vault, hours=0.5)
    with engine.begin() as conn:
        import_targets(conn, parse_targets(WIDE_YAML, "wide"), vault)
        wide = next(t for t in load_targets(conn) if t.name == "wide")
    now = datetime.now(UTC).replace(microsecond=0)
    samples = []
    for m in wide.modes:
        sid = next(s.id for s in m.series if s.probe == "connping")
        for i in range(60):  # ten minutes every 10 s, every other sample failed
            at = now - timedelta(minutes=10) + timedelta(seconds=10 * i)
            if i % 2:
                samples.append(
                    Sample(
                        series_id=sid,
                        scheduled_at=at,
                        started_at=at,
                        status=SampleStatus.ERROR,
                        total_ns=2_000_000,
                        error_class=ErrorClass.ORA,
                        error_code="ORA-12520",
                        error_phase="logon",
                        error_message="ORA-12520: no handler",
                    )
                )
            else:
                samples.append(
                    Sample(
                        series_id=sid,
                        scheduled_at=at,
                        started_at=at,
                        status=SampleStatus.OK,
                        total_ns=50_000_000,
                        logon_ns=40_000_000,
                    )
                )
    with engine.begin() as conn:
        write_samples(conn, samples)
    roll_up_pending(engine)
    return data


@pytest.fixture(scope="module")
def env(pg_cluster: PgCluster) -> Iterator[tuple[TestClient, Seeded]]:
    with seeded_app(pg_cluster, "hard_", _seed_all) as made:
        yield made


def _count_targets(client: TestClient) -> int:
    engine: Engine = client.app.state.engine  # type: ignore[attr-defined]
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(targets)).scalar_one())


def test_timeseries_of_a_target_with_seven_failing_modes(
    env: tuple[TestClient, Seeded],
) -> None:
    client, _ = env
    res = client.get("/api/v1/targets/wide/timeseries", params={"range": "1h"})
    assert res.status_code == 200, res.text[:300]
    doc = res.json()
    assert [m["name"] for m in doc["modes"]] == WIDE_MODES
    failed = {m: 0 for m in WIDE_MODES}
    for mark in doc["errors"]:
        assert mark["codes"] == ["ORA-12520"], mark
        failed[mark["mode"]] += mark["count"]
    assert failed == {m: 30 for m in WIDE_MODES}


# -- a NUL anywhere: path, query, form, JSON --------------------------------------------

_PARAM = re.compile(r"\{([^}:]+)(?::[^}]*)?\}")


def _routes(client: TestClient) -> list[tuple[str, str]]:
    out = []
    for ctx in iter_route_contexts(client.app.routes):  # type: ignore[attr-defined]
        if isinstance(ctx.original_route, APIRoute):
            out += [(method, str(ctx.path)) for method in sorted(ctx.methods or ())]
    return out


def test_a_nul_in_any_path_or_query_is_a_400_on_every_route(
    env: tuple[TestClient, Seeded],
) -> None:
    client, _ = env
    before = _count_targets(client)
    routes = _routes(client)
    assert len(routes) > 40  # the walk sees the whole app, not a handful
    seen: list[str] = []
    for method, path in routes:
        params = _PARAM.findall(path)
        tried = []
        if params:  # every path parameter holds a NUL
            tried.append(_PARAM.sub("sa%00les", path))
        # a valid-looking path, every parameter it declares and one more with a NUL
        plain = _PARAM.sub("sales", path)
        tried.append(plain + "?name=x%00y&range=1h%00&modes=a%00&q=%00")
        for url in tried:
            res = client.request(method, url, headers={"accept": "text/html"})
            assert res.status_code == 400, f"{method} {url}: {res.status_code} {res.text[:200]}"
            assert "NUL" in res.text and "Traceback" not in res.text
            seen.append(url)
    assert len(seen) >= len(routes)
    assert _count_targets(client) == before


def test_a_nul_in_a_form_field_or_json_is_a_400_and_nothing_is_stored(
    env: tuple[TestClient, Seeded],
) -> None:
    client, _ = env
    before = _count_targets(client)
    form = {
        "name": "nul-target",
        "kind": "oracle",
        "dsn": "dbhost:1521/X",
        "username": "cw",
        "description": "a\x00b",
        "mode-0-name": "dedicated",
        "mode-0-kind": "dedicated",
        "mode-0-on": "on",
    }
    res = client.post("/targets/new", data=form)
    assert res.status_code == 400, res.text[:300]
    assert "form field contains a NUL" in res.json()["detail"]
    res = client.post("/api/v1/annotations", json={"text": "deploy\u0000", "target": "sales"})
    assert res.status_code == 400, res.text[:300]
    # an escaped backslash before u0000 is text, not a NUL: it reaches the route
    res = client.post(
        "/api/v1/annotations",
        content=b'{"text": "a\\\\u0000"}',
        headers={"content-type": "application/json"},
    )
    assert res.status_code != 400 or "NUL" not in res.text
    assert _count_targets(client) == before


def test_an_oversized_body_is_a_413(env: tuple[TestClient, Seeded]) -> None:
    client, _ = env
    res = client.post("/api/v1/annotations", json={"text": "x" * 2_000_000, "target": "sales"})
    assert res.status_code == 413, res.text[:200]


def _new_target_form(**fields: str) -> dict[str, str]:
    form = {
        "name": "bad-input",
        "kind": "oracle",
        "dsn": "dbhost:1521/X",
        "username": "cw",
        "mode-0-name": "dedicated",
        "mode-0-kind": "dedicated",
        "mode-0-on": "on",
        "mode-0-interval": "10s",
        "mode-0-timeout": "5s",
    }
    form.update(fields)
    return form


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"mode-0-interval": "600h"}, "600h is longer than 24d, the longest the store keeps"),
        ({"mode-0-timeout": "9999999h"}, "is too long: a duration is at most 3650d"),
        ({"mode-0-interval": "1" * 400 + "s"}, "expected a duration such as 10s"),
        ({"mode-0-params": '{"sdu": 99999999999999999999}'}, "must be an integer 512..2097152"),
    ],
)
def test_numbers_beyond_their_columns_are_form_errors(
    env: tuple[TestClient, Seeded], fields: dict[str, str], message: str
) -> None:
    client, _ = env
    before = _count_targets(client)
    res = client.post("/targets/new", data=_new_target_form(**fields))
    assert res.status_code == 422, res.text[:300]
    assert message in res.text
    assert _count_targets(client) == before


@pytest.mark.parametrize("hours", ["1e40", "inf", "nan", "-2", "0", "721", "x" * 500])
def test_acknowledging_for_hostile_hours_is_a_422(
    env: tuple[TestClient, Seeded], hours: str
) -> None:
    client, _ = env
    form = {"rule": "r", "fingerprint": "f", "comment": "on it", "hours": hours}
    res = client.post("/alerts/ack", data=form, follow_redirects=False)
    assert res.status_code == 422, res.text[:200]
    assert "is not a number of hours above 0 and up to 720" in res.text


@pytest.mark.parametrize(
    "instant", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "1969-12-31T23:59:59Z"]
)
def test_windows_at_the_ends_of_the_calendar_are_a_422(
    env: tuple[TestClient, Seeded], instant: str
) -> None:
    client, _ = env
    res = client.get("/api/v1/targets/sales/timeseries", params={"from": instant})
    assert res.status_code == 422, res.text[:200]
    assert "is outside 1970-01-01 to 2200-01-01 (UTC)" in res.json()["detail"]


@pytest.mark.parametrize("depth", [500, 2000])
def test_params_nested_deep_are_a_form_error(env: tuple[TestClient, Seeded], depth: int) -> None:
    client, _ = env
    before = _count_targets(client)
    for deep in ('{"a": ' * depth + "1" + "}" * depth, "[" * depth + "]" * depth):
        res = client.post("/targets/new", data=_new_target_form(**{"mode-0-params": deep}))
        assert res.status_code == 422, res.text[:300]
        assert "nested deeper than" in res.text
    assert _count_targets(client) == before
