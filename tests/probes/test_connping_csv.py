from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from app.probes.adhoc.connping_csv import ConnpingCsvError, parse_connping_csv
from app.samples import SampleStatus

START = datetime(2026, 1, 1, tzinfo=UTC)


def test_plain_time_form() -> None:
    text = (
        "# CONN OCI DUAL SID INST TIME\n"
        "12.573 0.169 0.183 17183 1 0.52\n"
        "4.339 0.117 0.120 9 2 1.51\n"
    )
    s1, s2 = parse_connping_csv(text.splitlines(True), start=START, series_id=7)
    assert s1.status is SampleStatus.OK and s1.series_id == 7
    assert (s1.logon_ns, s1.ping_ns, s1.query_ns, s1.sid) == (12_573_000, 169_000, 183_000, 17183)
    assert s1.extra["instance_number"] == 1 and s1.logoff_ns is None
    assert s2.scheduled_at == datetime(2026, 1, 1, 0, 0, 1, 510000, tzinfo=UTC)


def test_excel_epoch_and_utc_forms() -> None:
    excel = ["CONN;OCI;DUAL;SID;INST;EPOCH\r\n", "1.000;2.000;3.000;4;5;1700000000.25\r\n"]
    (s,) = parse_connping_csv(excel)
    assert s.scheduled_at == datetime.fromtimestamp(1700000000.25, UTC)
    utc = ["# CONN OCI DUAL SID INST UTCTIME\n", "1.0 2.0 3.0 4 5 2026.03.04.15:06:07.89\n"]
    (u,) = parse_connping_csv(utc)
    assert u.scheduled_at == datetime(2026, 3, 4, 15, 6, 7, 890000, tzinfo=UTC)
    custom = ["CONN;OCI;DUAL;SID;INST;UTCTIME\r\n", "1;2;3;4;5;2026/03/04 15:06:07\r\n"]
    (c,) = parse_connping_csv(custom, utcformat="YYYY/MM/DD HH24:MI:SS")
    assert c.scheduled_at == datetime(2026, 3, 4, 15, 6, 7, tzinfo=UTC)


def test_no_timestamp_needs_schedule_and_marks_estimate() -> None:
    lines = ["# CONN OCI DUAL SID INST\n", "1 2 3 4 5\n", "1 2 3 4 5\n"]
    with pytest.raises(ConnpingCsvError, match="no timestamps"):
        parse_connping_csv(lines)
    a, b = parse_connping_csv(lines, start=START, interval=2.0)
    assert b.scheduled_at == datetime(2026, 1, 1, 0, 0, 4, tzinfo=UTC)
    assert a.extra["time_estimated"] is True


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([], "empty file"),
        (["hello world\n"], "line 1: not a connping CSV header"),
        (["# CONN OCI DUAL SID INST EPOCH\n", "1 2 x 4 5 6\n"], "line 2: not numbers"),
        (["# CONN OCI DUAL SID INST EPOCH\n", "1 2 3 4\n"], "line 2: expected 6 fields"),
        (["# CONN OCI DUAL SID INST TIME\n", "1 2 3 4 5 6\n"], "relative to the run's start"),
        (["# CONN OCI DUAL SID INST UTCTIME\n", "1 2 3 4 5 yesterday\n"], "line 2: UTCTIME"),
    ],
)
def test_bad_files_say_where(lines: list[str], message: str) -> None:
    with pytest.raises(ConnpingCsvError, match=message):
        parse_connping_csv(lines)


def test_binary_file_is_bad_input(tmp_path: object) -> None:
    from pathlib import Path

    f = Path(str(tmp_path)) / "x.csv"
    f.write_bytes(b"# CONN OCI DUAL SID INST EPOCH\n\xff\xfe\x00garbage\n")
    with f.open(newline="") as fh, pytest.raises(ConnpingCsvError, match="not UTF-8 text"):
        parse_connping_csv(fh)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("nan 0.1 0.1 7 1 1.0", "line 2: CONN 'nan' is not a time in milliseconds"),
        ("1.0 inf 0.1 7 1 1.0", "line 2: OCI 'inf' is not a time in milliseconds"),
        ("1.0 0.1 1e300 7 1 1.0", "line 2: DUAL '1e300' is not a time in milliseconds"),
        ("-1.0 0.1 0.1 7 1 1.0", "line 2: CONN '-1.0' is not a time in milliseconds"),
        ("1.0 0.1 0.1 2147483648 1 1.0", "line 2: SID 2147483648 is not from 0 to 2147483647"),
        ("1.0 0.1 0.1 7 -1 1.0", "line 2: INST -1 is not from 0 to 2147483647"),
        ("1.0 0.1 0.1 7 1 1e300", "line 2: bad TIME '1e300'"),
    ],
)
def test_values_the_store_cannot_hold_are_refused_naming_the_line(row: str, message: str) -> None:
    text = ["# CONN OCI DUAL SID INST TIME\n", row + "\n"]
    with pytest.raises(ConnpingCsvError, match="^" + re.escape(message)):
        parse_connping_csv(text, start=START)


def test_rows_outside_the_window_are_refused() -> None:
    window = (datetime(2025, 1, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))
    ok = ["# CONN OCI DUAL SID INST EPOCH\n", "1.0 0.1 0.1 7 1 1767225600\n"]
    assert len(parse_connping_csv(ok, window=window)) == 1
    year_5138 = ["# CONN OCI DUAL SID INST EPOCH\n", "1.0 0.1 0.1 7 1 1767225600\n",
                 "1.0 0.1 0.1 7 1 99999999999\n"]  # fmt: skip
    with pytest.raises(ConnpingCsvError, match=r"^line 3: 5138-11-16 09:46:39 UTC is outside"):
        parse_connping_csv(year_5138, window=window)
    for interval in (float("nan"), float("inf"), 0.0, 1e300):
        with pytest.raises(ConnpingCsvError, match="interval must be from 0 to 86400 seconds"):
            parse_connping_csv(["# CONN OCI DUAL SID INST\n"], start=START, interval=interval)


def test_a_start_at_the_end_of_the_calendar_is_refused_naming_the_line() -> None:
    late = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    rows = ["# CONN OCI DUAL SID INST\n", "1.0 0.1 0.1 7 1\n"]
    with pytest.raises(ConnpingCsvError, match=r"^line 2: start \+ interval is past year 9999"):
        parse_connping_csv(rows, start=late, interval=1.0)
    with pytest.raises(ConnpingCsvError, match=r"^line 2: bad TIME '5.0'"):
        parse_connping_csv(["# CONN OCI DUAL SID INST TIME\n", "1 1 1 7 1 5.0\n"], start=late)
