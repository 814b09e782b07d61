from __future__ import annotations

import pytest

from app.probes.adhoc.cmdargs import UsageError, parse_logon
from app.probes.spec import OracleEndpoint, PgRoute, PostgresEndpoint, Purity


def test_oracle_logon_string() -> None:
    ep = parse_logon("scott/ti@ger@db:1521/FREEPDB1:pooled", cclass="CW", purity="self")
    assert isinstance(ep, OracleEndpoint)
    assert (ep.user, ep.password, ep.connect) == ("scott", "ti@ger", "db:1521/FREEPDB1:pooled")
    assert ep.cclass == "CW" and ep.purity is Purity.SELF


def test_postgres_uri_and_keywords() -> None:
    ep = parse_logon("postgresql://u:pw@h:6432/db?sslmode=disable", route="pgbouncer_session")
    assert isinstance(ep, PostgresEndpoint)
    assert (ep.host, ep.port, ep.dbname, ep.user, ep.password) == ("h", 6432, "db", "u", "pw")
    assert ep.route is PgRoute.PGBOUNCER_SESSION and ep.options == {"sslmode": "disable"}
    kv = parse_logon("host=/run/pg port=5433 dbname=x user=y")
    assert isinstance(kv, PostgresEndpoint) and kv.unix_socket and kv.port == 5433


@pytest.mark.parametrize(
    ("text", "kw", "message"),
    [
        ("nonsense", {}, "-l must be user/password@connect"),
        ("/pw@db", {}, "missing user name"),
        ("a/b@db", {"purity": "dirty"}, "--purity must be"),
        ("postgresql://u@h/db", {"route": "bogus"}, "--route must be one of"),
        ("postgresql://u@h:notaport/db", {}, "not a valid PostgreSQL DSN|port must be a number"),
    ],
)
def test_bad_logon_strings(text: str, kw: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_logon(text, **kw)  # type: ignore[arg-type]
