"""Login throttling, per account and per source address, with growing delays.

Failures are counted per key (``account:<name>``, ``source:<address>``) over a sliding
hour, in PostgreSQL, so every web process counts the same. After a few free failures
each further one makes the key wait before the next attempt: 1 s, 2 s, 4 s ... up to a
cap. An attempt that arrives while a key waits is answered 429 with ``Retry-After`` and
its password is not even checked.

- account: 5 free failures, then a delay capped at 36 s, so at most 100 failures per
  hour reach one account (OWASP ASVS) from however many addresses;
- source: 20 free failures, then a delay capped at 5 minutes.

There is no lockout an attacker can make permanent: the longest a real user waits for
their own account is 36 s. Names of accounts that do not exist are throttled alike, so
throttling does not tell which accounts exist. Attempts on one account are serialised
across processes (a transaction-level advisory lock), so parallel guesses cannot slip
between the check and the count.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import Connection


@dataclass(frozen=True)
class Rule:
    free: int
    cap_s: float


ACCOUNT = Rule(free=5, cap_s=36.0)
SOURCE = Rule(free=20, cap_s=300.0)
WINDOW_S = 3600


def account_key(name: str) -> str:
    return "account:" + name.strip().lower()[:100]


def source_key(address: str) -> str:
    return "source:" + address[:100]


def delay_s(failures: int, rule: Rule) -> float:
    """How long a key waits after its ``failures``-th failure."""
    if failures < rule.free:
        return 0.0
    return float(min(rule.cap_s, 2 ** min(failures - rule.free, 20)))


def lock(conn: Connection, key: str) -> None:
    """Serialise attempts on ``key`` until the caller's transaction ends."""
    conn.execute(text("select pg_advisory_xact_lock(hashtext(:k))"), {"k": key})


def wait_s(conn: Connection, keys: list[str]) -> float:
    """Seconds until every key may try again (0: now)."""
    value = conn.execute(
        text(
            "select coalesce(max(extract(epoch from blocked_until - now())), 0) "
            "from login_throttle where key = any(:keys) and blocked_until > now()"
        ),
        {"keys": keys},
    ).scalar_one()
    return max(0.0, float(value))


def failed(conn: Connection, key: str, rule: Rule) -> int:
    """Count a failure of ``key``; returns its failures within the window."""
    n = conn.execute(
        text(
            "insert into login_throttle as t (key, failures, window_start, last_failure_at) "
            "values (:k, 1, now(), now()) on conflict (key) do update set "
            "failures = case when t.window_start < now() - make_interval(secs => :w) "
            "  then 1 else t.failures + 1 end, "
            "window_start = case when t.window_start < now() - make_interval(secs => :w) "
            "  then now() else t.window_start end, "
            "last_failure_at = now() returning failures"
        ),
        {"k": key, "w": WINDOW_S},
    ).scalar_one()
    wait = delay_s(int(n), rule)
    if wait > 0:
        conn.execute(
            text(
                "update login_throttle set blocked_until = now() + make_interval(secs => :s) "
                "where key = :k"
            ),
            {"k": key, "s": wait},
        )
    return int(n)


def succeeded(conn: Connection, key: str) -> None:
    conn.execute(text("delete from login_throttle where key = :k"), {"k": key})


def purge(conn: Connection) -> int:
    res = conn.execute(
        text(
            "delete from login_throttle where last_failure_at < now() - make_interval(secs => :w) "
            "and (blocked_until is null or blocked_until < now())"
        ),
        {"w": WINDOW_S},
    )
    return res.rowcount or 0
