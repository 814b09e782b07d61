from __future__ import annotations

from datetime import UTC, datetime

from app.probes.adhoc import rwlformat as fmt


def test_connping_line_formats() -> None:
    t = fmt.TimeOpts()
    line = fmt.connping_line(3.14159, 0.12345, 0.2, 42, 1, t, 2.04, 1.7e9, "x")
    assert line == "connect:3.14 ms, ociping:0.123 ms, dualping:0.200 ms, sid=42, inst#=1, time=2.0"
    no_ts = fmt.connping_line(1, 2, 3, 4, 5, fmt.TimeOpts(timestamp=False), 0, 0, "")
    assert no_ts == "connect:1.00 ms, ociping:2.000 ms, dualping:3.000 ms, sid=4, inst#=5"
    utc = fmt.connping_line(
        1, 2, 3, 4, 5, fmt.TimeOpts(utctime=True), 0, 0, "2026.01.02.03:04:05.67"
    )
    assert utc.endswith(", time=2026.01.02.03:04:05.67")
    epoch = fmt.connping_line(1, 2, 3, 4, 5, fmt.TimeOpts(unixepoch=True), 9.9, 1700000000.26, "")
    assert epoch.endswith(", time=1700000000.3")


def test_connping_summary_uses_population_stddev() -> None:
    c, o, d = fmt.Stat(), fmt.Stat(), fmt.Stat()
    for v in (1.0, 3.0):
        c.add(v)
        o.add(v / 10)
        d.add(v / 100)
    assert fmt.connping_summary(c, o, d) == [
        "connect mean=2.00, stddev=1.00, min=1.00, max=3.00",
        "ociping mean=0.20, stddev=0.10, min=0.10, max=0.30",
        "dualping mean=0.02, stddev=0.01, min=0.01, max=0.03",
    ]


def test_csv_forms() -> None:
    t = fmt.TimeOpts()
    assert fmt.connping_csv_header(t, False) == "# CONN OCI DUAL SID INST TIME\n"
    assert fmt.connping_csv_header(fmt.TimeOpts(unixepoch=True), True) == (
        "CONN;OCI;DUAL;SID;INST;EPOCH\r\n"
    )
    assert (
        fmt.connping_csv_header(fmt.TimeOpts(timestamp=False), False)
        == "# CONN OCI DUAL SID INST\n"
    )
    assert fmt.connping_csv_row(1, 2, 3, 4, 5, t, 1.234, 0, "", False) == (
        "1.000 2.000 3.000 4 5 1.23\n"
    )
    assert fmt.connping_csv_row(1, 2, 3, 4, 5, t, 1.234, 0, "", True) == (
        "1.000;2.000;3.000;4;5;1.23\r\n"
    )
    assert fmt.ociping_csv_header(t, False) == "# PING TIME\n"
    assert fmt.ociping_csv_row(0.5, t, 3.0, 0, "", True) == "0.500;3.00\r\n"
    assert fmt.ociping_line(0.5, t, 3.04, 0, "") == "0.500 3.0"
    s = fmt.Stat()
    s.add(0.5)
    assert fmt.ociping_summary(s) == "ociping mean=0.500, stddev=0.000, min=0.500, max=0.500"


def test_oracle_format_model() -> None:
    ts = datetime(2026, 3, 4, 15, 6, 7, 891234, tzinfo=UTC)
    assert fmt.oracle_to_char(ts, fmt.DEFAULT_UTCFORMAT) == "2026.03.04.15:06:07.89"
    assert fmt.oracle_to_char(ts, "YYYY/MM/DD HH24:MI:SS") == "2026/03/04 15:06:07"
    assert fmt.oracle_to_char(ts, 'DD-MON-YY HH12.MI AM "x" FF') == "04-MAR-26 03.06 PM x 891234"


def test_a_summary_without_runs_says_so_instead_of_nan() -> None:
    from app.probes.adhoc import rwlformat as f

    lines = f.connping_summary(f.Stat(), f.Stat(), f.Stat())
    assert lines == [
        f"{n}: no successful run to summarise" for n in ("connect", "ociping", "dualping")
    ]
    assert f.ociping_summary(f.Stat()) == "ociping: no successful run to summarise"
