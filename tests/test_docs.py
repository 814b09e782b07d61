"""The docs cite files that exist: a benchmark, module, script or migration named in the
README or docs/*.md is there to be run or read (docs/reports.md once cited a
``bench/bench_report_pdf.py`` that never existed)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CITED = re.compile(r"\b(?:bench|app|scripts|migrations)/[A-Za-z0-9_./-]+\.(?:py|sh|js|html|css)\b")


def test_every_cited_benchmark_module_and_script_exists() -> None:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    missing = [
        f"{doc.relative_to(ROOT)}:{n}: {path}"
        for doc in docs
        for n, line in enumerate(doc.read_text().splitlines(), 1)
        for path in CITED.findall(line)
        if not (ROOT / path).exists()
    ]
    assert missing == []
    reports = (ROOT / "docs" / "reports.md").read_text()
    assert "bench/bench_report.py --weasyprint" in reports
