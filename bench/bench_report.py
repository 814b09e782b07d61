"""Report benchmark: time and peak memory to render and send one weekly report over 100
targets x 3 modes with a year of history, and the PDF engines side by side.

Dataset: ``app.store.write.synthetic.generate(series=300)`` (100 Oracle targets x
dedicated/shared/pooled, connping every 10 s), ``--days`` of raw samples ending now and
a year (``--rollup-days 365``) of 1-hour/1-day/weekly rollups: the last
``--simulate-days`` (42: the two weeks a report compares, the 4 weeks the spike
baseline reads) simulated, the older ones repeating them week for week
(``repeat_history``), so the year is in the store in minutes; generated once into a
throw-away PostgreSQL (Debian's binaries) unless ``--url`` (with ``--reuse``: only read,
nothing generated).

Measured, for the last complete week, in this process:

1. baseline: the store's ``weekly()`` over the same 2 weeks for every mode (what the old
   report read), then ``build_report`` (figures, verdicts with their bootstrap, trend,
   SLOs, incidents, mode comparison), each ``--iterations`` times, with the CPU time of
   this process and of its PostgreSQL backend per build (what a loaded machine does
   not inflate, unlike the wall time);
2. rendering: the view + HTML document, Chromium ``--print-to-pdf`` (size, pages), CSV,
   the mail's HTML and text;
3. sending: a subscription's full ``deliver`` (render + archive + outbox, one transaction)
   and the notify deliverer handing the mail to an aiosmtpd server on loopback;
4. peak memory: Python heap (tracemalloc) during 2-3 (deliver builds the report again),
   the process' max RSS, and the largest Chromium process' max RSS (``RUSAGE_CHILDREN``);
5. with ``--weasyprint PYTHON`` (a Python with WeasyPrint installed, e.g. a scratch
   venv: it is not a project dependency), the same HTML printed by WeasyPrint under
   ``/usr/bin/time -v`` next to Chromium under the same measurement.

Usage:

    .venv/bin/python bench/bench_report.py                         # generate, then measure
    .venv/bin/python bench/bench_report.py --url URL --reuse       # measure an existing dataset
    .venv/bin/python bench/bench_report.py --targets 10 --days 1 --rollup-days 120  # quick

Every figure is printed (and written as JSON with ``--json``); nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app import migrate
from app.config import Settings
from app.demo.pgcluster import PgCluster, free_port
from app.reports.content.build import build_report
from app.reports.content.period import last_week
from app.reports.delivery.schedule import period_due
from app.reports.delivery.send import deliver
from app.reports.delivery.subscriptions import get_subscription, save, validate
from app.reports.render.html import render_document, render_mail
from app.reports.render.pdf import find_browser, html_to_pdf
from app.reports.render.table import to_csv
from app.reports.render.view import make_view
from app.store.read.weekly import weekly
from app.store.write.synthetic import generate


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def backend_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) of a PostgreSQL backend on this machine, if visible."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def timed(fn: Any, n: int) -> tuple[list[float], Any]:
    out, res = [], None
    for _ in range(n):
        t = time.perf_counter()
        res = fn()
        out.append(time.perf_counter() - t)
    return out, res


def stats(xs: list[float]) -> str:
    return (
        f"median {statistics.median(xs):.2f} s (min {min(xs):.2f}, max {max(xs):.2f}, n={len(xs)})"
    )


def gnu_time(cmd: list[str]) -> tuple[float, int, int]:
    """(wall s, max RSS KiB of the largest process, exit status) under /usr/bin/time -v."""
    t = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    return wall, int(m.group(1)) if m else -1, p.returncode


def pages(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    m = re.search(r"Pages:\s+(\d+)", info)
    return int(m.group(1)) if m else -1


def engines(html: str, weasy_python: str | None, runs: int, tmp: Path) -> dict[str, Any]:
    doc = tmp / "report.html"
    doc.write_text(html)
    out: dict[str, Any] = {}
    chromium = find_browser()
    for i in range(runs):
        pdf = tmp / f"chromium-{i}.pdf"
        wall, rss, rc = gnu_time([
            chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
            "--disable-background-networking", "--disable-component-update", "--no-first-run",
            f"--user-data-dir={tmp}/profile-{i}", f"--print-to-pdf={pdf}", doc.as_uri(),
        ])  # fmt: skip
        out.setdefault("chromium", []).append(
            {"wall_s": round(wall, 2), "max_rss_mib": rss // 1024, "rc": rc,
             "bytes": pdf.stat().st_size if pdf.exists() else 0,
             "pages": pages(pdf) if pdf.exists() else 0}
        )  # fmt: skip
    if weasy_python:
        for i in range(runs):
            pdf = tmp / f"weasy-{i}.pdf"
            wall, rss, rc = gnu_time([weasy_python, "-m", "weasyprint", str(doc), str(pdf)])
            out.setdefault("weasyprint", []).append(
                {"wall_s": round(wall, 2), "max_rss_mib": rss // 1024, "rc": rc,
                 "bytes": pdf.stat().st_size if pdf.exists() else 0,
                 "pages": pages(pdf) if pdf.exists() else 0}
            )  # fmt: skip
        for name in ("chromium-0", "weasy-0"):
            if (tmp / f"{name}.pdf").exists():
                src, dst = str(tmp / f"{name}.pdf"), f"test-artifacts/bench-{name}"
                subprocess.run(["pdftoppm", "-r", "50", "-png", "-f", "1", "-l", "2", src, dst])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="SQLAlchemy URL of the database (default: throw-away)")
    ap.add_argument("--reuse", action="store_true", help="measure the existing dataset")
    ap.add_argument("--targets", type=int, default=100)
    ap.add_argument("--days", type=int, default=1, help="days of raw samples")
    ap.add_argument("--rollup-days", type=int, default=365)
    ap.add_argument(
        "--simulate-days",
        type=int,
        default=42,
        help="rollup days simulated; older ones repeat them (0: simulate all)",
    )
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--build-only", action="store_true", help="stop after build_report")
    ap.add_argument("--weasyprint", help="a Python with WeasyPrint, to compare the engines")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="connwatch-bench-report-"))
    Path("test-artifacts").mkdir(exist_ok=True)
    cluster = None
    url = args.url
    results: dict[str, Any] = {"args": vars(args), "load_before": load(),
                               "started": datetime.now(UTC).isoformat()}  # fmt: skip
    try:
        if url is None:
            cluster = PgCluster(tmp / "pg")
            cluster.init()
            cluster.start()
            cluster.create_database("bench")
            url = cluster.url("bench")
        engine = create_engine(url, pool_size=4)
        if not args.reuse:
            migrate.upgrade(engine)
            t = time.perf_counter()
            rep = generate(engine, series=3 * args.targets, days=args.days,
                           rollup_days=args.rollup_days,
                           simulate_days=args.simulate_days or None,
                           progress=lambda m: print("  " + m, flush=True))  # fmt: skip
            results["dataset"] = {"series": 3 * args.targets, "raw_samples": rep.raw_samples,
                                  "generate_s": round(time.perf_counter() - t, 1)}  # fmt: skip
            print("dataset:", json.dumps(results["dataset"]), flush=True)
            with engine.execution_options(isolation_level="AUTOCOMMIT").connect() as conn:
                for tbl in ("rollup_1h", "rollup_1d", "rollup_1w"):
                    conn.execute(text(f"vacuum (analyze) {tbl}"))
        now = datetime.now(UTC)
        period = last_week(now)

        def baseline() -> int:
            with engine.connect() as conn:
                a = weekly(conn, period.start - (period.end - period.start), period.end,
                           phase="logon", probe="connping")  # fmt: skip
                b = weekly(conn, period.start - (period.end - period.start), period.end,
                           phase="ping", probe="connping")  # fmt: skip
            return len(a) + len(b)

        cpu: list[tuple[float, float | None]] = []

        def build() -> Any:
            with engine.connect() as conn:
                pid = conn.execute(text("select pg_backend_pid()")).scalar_one()
                c0, p0 = backend_cpu(pid), time.process_time()
                rep = build_report(conn, period, now=now)
                c1 = backend_cpu(pid)
                cpu.append((time.process_time() - p0, c1 - c0 if c0 and c1 else None))
                return rep

        tb, nrows = timed(baseline, args.iterations)
        tr, report = timed(build, args.iterations)
        results["baseline_weekly_s"] = tb
        results["build_report_s"] = tr
        results["build_report_cpu_s"] = cpu
        print(f"baseline weekly() x2 ({nrows} rows): {stats(tb)}", flush=True)
        with engine.connect() as conn:
            span = conn.execute(text("select min(bucket), max(bucket), count(*) from rollup_1h"))
            results["rollup_1h"] = [str(v) for v in span.one()]
        print("rollup_1h first, last, rows:", results["rollup_1h"], flush=True)
        print(f"build_report ({len(report.rows)} rows, {len(report.incidents)} incidents, "
              f"{len(report.comparisons)} comparisons): {stats(tr)}", flush=True)  # fmt: skip
        print("  CPU per build (python, postgres backend): "
              + ", ".join(f"{a:.2f} s + {b:.2f} s" if b is not None else f"{a:.2f} s + ?"
                          for a, b in cpu), flush=True)  # fmt: skip
        # the heap is traced from here on (tracing slows Python code: not while timing the
        # builds above; deliver() below builds the report again under it)
        tracemalloc.start()
        if args.build_only:
            results["load_after"] = load()
            print("load average before/after:", results["load_before"], "/", load())
            return _finish(args, results)
        t = time.perf_counter()
        view = make_view(report, base_url="https://connwatch.example.org")
        html = render_document(view, "A4")
        t_html = time.perf_counter() - t
        t = time.perf_counter()
        pdf = html_to_pdf(html)
        t_pdf = time.perf_counter() - t
        t = time.perf_counter()
        csv = to_csv(report)
        mail_html, mail_text = render_mail(view, subject="s", late=False, due_text="",
                                           subscription="bench", schedule="weekly")  # fmt: skip
        t_rest = time.perf_counter() - t
        (tmp / "r.pdf").write_bytes(pdf)
        results["render"] = {"view_html_s": round(t_html, 3), "chromium_pdf_s": round(t_pdf, 2),
                             "pdf_bytes": len(pdf), "pdf_pages": pages(tmp / "r.pdf"),
                             "html_bytes": len(html), "csv_and_mail_s": round(t_rest, 3),
                             "csv_bytes": len(csv), "mail_html_bytes": len(mail_html),
                             "mail_text_bytes": len(mail_text)}  # fmt: skip
        print("render:", json.dumps(results["render"]), flush=True)
        # sending: a subscription over everything, through the outbox to aiosmtpd
        from aiosmtpd.controller import Controller

        got: list[int] = []

        class Handler:
            async def handle_DATA(self, srv: Any, session: Any, envelope: Any) -> str:
                got.append(len(envelope.content))
                return "250 OK"

        port = free_port()  # a fixed guess collided with another helper's server
        controller = Controller(Handler(), hostname="127.0.0.1", port=port)
        controller.start()
        try:
            with engine.begin() as conn:
                save(conn, validate({"name": "bench", "recipients": ["boss@example.org"]}))
                sub = get_subscription(conn, "bench")
            assert sub is not None
            t = time.perf_counter()
            with engine.begin() as conn:
                d = deliver(conn, sub, period_due(sub.spec, now), now=now, trigger="cli",
                            due_at=None, late=False, base_url="https://cw.example.org")  # fmt: skip
            t_deliver = time.perf_counter() - t
            from app.notify.deliver import Deliverer

            settings = Settings(
                data_dir=tmp / "data",
                smtp_host="127.0.0.1",
                smtp_port=port,
                smtp_security="none",
                smtp_from="connwatch@example.org",
            )  # type: ignore[call-arg]
            dl = Deliverer(engine, settings)
            t = time.perf_counter()
            sent = dl.run_once(only_id=d.outbox_id)
            t_smtp = time.perf_counter() - t
            dl.close()
        finally:
            controller.stop()
        _cur, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        results["send"] = {"deliver_s": round(t_deliver, 2), "smtp_s": round(t_smtp, 2),
                           "outcome": sent, "message_bytes": got[0] if got else 0}  # fmt: skip
        results["memory"] = {
            "python_heap_peak_mib": round(peak / 2**20, 1),
            "process_max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "largest_child_max_rss_mib":
                resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024,
        }  # fmt: skip
        print("send:", json.dumps(results["send"]), flush=True)
        print("memory:", json.dumps(results["memory"]), flush=True)
        results["engines"] = engines(html, args.weasyprint, 2, tmp)
        for name, runs in results["engines"].items():
            print(f"{name}: {json.dumps(runs)}", flush=True)
        results["load_after"] = load()
        print("load average before/after:", results["load_before"], "/", results["load_after"])
        engine.dispose()
    finally:
        if cluster is not None:
            cluster.stop(mode="immediate")
        shutil.rmtree(tmp, ignore_errors=True)
    return _finish(args, results)


def _finish(args: argparse.Namespace, results: dict[str, Any]) -> int:
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
