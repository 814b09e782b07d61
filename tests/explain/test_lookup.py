"""Every code connwatch records has a one-line meaning and a likely cause."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.explain import FAMILIES, catalogue, explain, family_of

ROOT = Path(__file__).resolve().parents[2]
CODE_LITERAL = re.compile(
    r"\b(ORA-\d{5}|TNS-\d{5}|DPY-\d{4}|PG-[0-9A-Z]{5}|NET-E[A-Z_]+|TLS-[A-Z]+(?:-[A-Z]+)*)\b"
)
SKIP_REASON = re.compile(r'self\._skip\(\s*[^,]+,\s*[^,]+,\s*"([A-Z_]+)"', re.S)


def codes_named_in(paths: list[Path]) -> set[str]:
    found: set[str] = set()
    for path in paths:
        found |= set(CODE_LITERAL.findall(path.read_text()))
    return found


def test_every_code_named_in_the_code_and_docs_is_in_the_table() -> None:
    sources = [
        p
        for p in (ROOT / "app").rglob("*.py")
        if "explain" not in p.parts and "oraclesim" not in p.parts
    ]
    sources += [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    named = codes_named_in(sources)
    assert {"ORA-01017", "DPY-4011", "TNS-12520", "PG-28P01", "NET-ECONNREFUSED"} <= named
    unexplained = sorted(c for c in named if not explain(c).known)  # type: ignore[union-attr]
    assert unexplained == []


def test_every_skip_reason_and_runner_code_is_in_the_table() -> None:
    scheduler = "".join(p.read_text() for p in (ROOT / "app/agent").rglob("*.py"))
    reasons = set(SKIP_REASON.findall(scheduler)) | set(re.findall(r'"(LATE)"', scheduler))
    assert {"OVERRUN", "LATE", "BUSY", "RATE_LIMIT"} <= reasons
    for code in sorted(reasons | {"TIMEOUT", "CONFIG"}):
        found = explain(code)
        assert found is not None and found.known and found.family == "connwatch", code


def test_entries_are_one_short_line_each() -> None:
    rows = catalogue()
    assert len(rows) >= 60
    assert len({r.code for r in rows}) == len(rows)
    for row in rows:
        for text in (row.meaning, row.cause):
            assert "\n" not in text and 3 < len(text) <= 200, row.code
        assert row.family in FAMILIES
        assert family_of(row.code) == row.family


def test_a_code_outside_the_table_still_gets_a_family_sentence() -> None:
    ora = explain("ORA-29999")
    assert ora is not None and not ora.known
    assert "oerr ora 29999" in ora.cause
    pg = explain("PG-53400")
    assert pg is not None and "insufficient resources" in pg.meaning
    net = explain("NET-EPROTO")
    assert net is not None and "protocol error" in net.meaning
    other = explain("InterfaceError")
    assert other is not None and other.family == "OTHER" and "InterfaceError" in other.meaning


@pytest.mark.parametrize("code", [None, ""])
def test_no_code_no_explanation(code: str | None) -> None:
    assert explain(code) is None


def test_line_is_what_hover_text_and_alerts_show() -> None:
    found = explain("ORA-01017")
    assert found is not None
    assert found.line() == (
        "ORA-01017: invalid username or password; logon denied (likely: a wrong or changed "
        "password, a wrong user, or a password reference that resolves to an old value)"
    )
