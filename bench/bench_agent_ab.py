"""Agent cadence, side by side: a baseline revision against the working tree, alternated.

The machine is shared and noisy, so a figure alone says little; this runs
``bench/bench_agent.py --only sessionping`` (or ``connping``) of a baseline revision
(exported with ``git archive`` into a temporary directory, run with this venv) and of
a copy of the working tree taken at the start, in turns, ``--rounds`` times each, and
prints both side by side with the 1-minute load average of each run. Run from the repository root:

    uv run --frozen python bench/bench_agent_ab.py --base 4134bfd --rounds 2
    uv run --frozen python bench/bench_agent_ab.py --base 4134bfd -- --measure 20

Arguments after ``--`` go to both ``bench_agent.py`` runs.
"""

from __future__ import annotations

import argparse
import ast
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIELDS = (
    "executed_pct",
    "lag_p50_ms",
    "lag_p95_ms",
    "lag_p99_ms",
    "lag_max_ms",
    "cpu_ms_per_run",
    "cpu_pct",
    "sim_cpu_ms_per_run",
    "sim_cpu_pct",
    "load1",
)


def export(rev: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True
    ).stdout
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def snapshot(into: Path) -> Path:
    """A copy of the working tree as it is now (tracked and new files), so editing it
    while the benchmark runs cannot change the code under test."""
    names = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\0")
    for name in filter(None, names):
        src = ROOT / name
        if src.is_file():
            dst = into / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    return into


def run(tree: Path, part: str, extra: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, str(tree / "bench" / "bench_agent.py"), "--only", part, *extra]
    out = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, check=False)
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            result: dict[str, Any] = ast.literal_eval(line)
            return result
    raise RuntimeError(f"{cmd} printed no result:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="git revision of the baseline")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--part", choices=["sessionping", "connping"], default="sessionping")
    ap.add_argument("extra", nargs="*", help="passed to bench_agent.py (after --)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="connwatch-bench-ab-"))
    try:
        base = export(args.base, (tmp / "base"))
        new = snapshot(tmp / "new")
        rows: list[tuple[str, dict[str, Any]]] = []
        for k in range(args.rounds):
            for label, tree in ((f"base {args.base}", base), ("new (working tree)", new)):
                r = run(tree, args.part, args.extra)
                rows.append((f"{label} #{k + 1}", r))
                print(label, k + 1, {f: r.get(f) for f in ("due", "samples", *FIELDS)}, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n| run | " + " | ".join(FIELDS) + " |")
    print("|---" * (len(FIELDS) + 1) + "|")
    for label, r in rows:
        print(f"| {label} | " + " | ".join(str(r.get(f)) for f in FIELDS) + " |")


if __name__ == "__main__":
    main()
