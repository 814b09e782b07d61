"""Starting a simulator-tooling module in a child process that announces itself.

The child prints one JSON object on its first stdout line (where it listens);
anything else means it failed to start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]  # the repository: app/oraclesim/tooling/child.py


def start_child(module: str, args: list[str], what: str) -> tuple[subprocess.Popen[str], Any]:
    """Run ``python -m module *args``; return the process and its first-line JSON."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *args], stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("{"):
        stop_child(proc)
        raise RuntimeError(f"{what} did not start: {line!r}")
    return proc, json.loads(line)


def stop_child(proc: subprocess.Popen[str]) -> None:
    """Terminate a child started by :func:`start_child` (killed after 10 s) and close its
    stdout."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
