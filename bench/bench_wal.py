"""What the agent's write-ahead log costs per sample, and how soon a sample is on disk.

Run from the repository root (about a minute):

    uv run --frozen python bench/bench_wal.py          # --samples 100000 --rate 2000 --rounds 3

Parts, each printed as one line of figures:

- ``log``: the group-commit thread alone (:class:`app.agent.output.wal.GroupCommit`, the
  hand-on a no-op): ``--samples`` submitted at once, per mode ``write`` and ``fsync``;
  CPU per sample = process CPU (all threads) / samples; frames and syncs written.
- ``latency``: samples submitted at a steady ``--rate`` per second for 5 s (as probes
  finish); latency = submit -> the group's ``write`` returned (the moment a SIGKILL no
  longer loses it), p50 / p99 / max, per mode.
- ``writer``: ``--samples`` synthetic samples through :class:`app.agent.output.writer.Writer`
  into a throw-away PostgreSQL (the agent's real path), WAL ``off`` / ``write`` /
  ``fsync`` alternated ``--rounds`` times in the same run: samples/s and process CPU per
  sample; the difference to ``off`` is what the log adds to a stored sample.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy.engine import Engine

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_agent import make_samples  # noqa: E402

from app import migrate  # noqa: E402
from app.agent.options import AgentOptions  # noqa: E402
from app.agent.output.spool import Spool  # noqa: E402
from app.agent.output.wal import GroupCommit, WriteAheadLog  # noqa: E402
from app.agent.output.writer import Writer  # noqa: E402
from app.agent.stats import percentile  # noqa: E402
from app.demo.pgcluster import PgCluster  # noqa: E402
from app.samples import Sample  # noqa: E402

COMMIT_S = AgentOptions().wal_commit_s


def log_alone(tmp: Path, samples: list[Sample], mode: str) -> dict[str, Any]:
    wal = WriteAheadLog(tmp / f"log-{mode}", fsync=mode == "fsync")
    seen = [0]
    gc = GroupCommit(wal, lambda g: seen.__setitem__(0, seen[0] + len(g)), COMMIT_S)
    gc.start()
    cpu0, t0 = time.process_time(), time.perf_counter()
    for s in samples:
        gc.submit(s)
    while seen[0] < len(samples):
        time.sleep(0.001)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    gc.stop()
    size = wal.bytes
    wal.close()
    return {
        "part": "log",
        "mode": mode,
        "samples": len(samples),
        "cpu_us_per_sample": round(1e6 * cpu / len(samples), 2),
        "samples_per_s": round(len(samples) / wall),
        "bytes_per_sample": round(size / len(samples), 1),
        "groups": gc.groups,
        "syncs": gc.syncs,
    }


def latency(tmp: Path, samples: list[Sample], mode: str, rate: float) -> dict[str, Any]:
    wal = WriteAheadLog(tmp / f"lat-{mode}", fsync=mode == "fsync")
    submitted: dict[int, float] = {}
    lat: list[float] = []
    lock = threading.Lock()

    def hand_on(group: list[Sample]) -> None:
        now = time.perf_counter()
        with lock:
            lat.extend(1000 * (now - submitted[id(s)]) for s in group)

    gc = GroupCommit(wal, hand_on, COMMIT_S)
    gc.start()
    t0 = time.perf_counter()
    for i, s in enumerate(samples):
        due = t0 + i / rate
        while (now := time.perf_counter()) < due:
            time.sleep(min(0.001, due - now))
        with lock:
            submitted[id(s)] = time.perf_counter()
        gc.submit(s)
    gc.stop()
    wal.close()
    lat.sort()
    return {
        "part": "latency",
        "mode": mode,
        "rate_per_s": rate,
        "samples": len(lat),
        "to_disk_p50_ms": round(percentile(lat, 50), 2),
        "to_disk_p99_ms": round(percentile(lat, 99), 2),
        "to_disk_max_ms": round(lat[-1], 2),
        "groups": gc.groups,
        "syncs": gc.syncs,
    }


def through_writer(
    engine: Engine, tmp: Path, samples: list[Sample], mode: str
) -> tuple[float, float]:
    wal = None if mode == "off" else WriteAheadLog(tmp / "wal", fsync=mode == "fsync")
    w = Writer(engine, Spool(tmp / "spool", 1 << 30), AgentOptions(), wal=wal)
    w.start()
    cpu0, t0 = time.process_time(), time.perf_counter()
    for s in samples:
        w.submit(s)
    while w.handed < len(samples):
        time.sleep(0.001)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    w.stop()
    return len(samples) / wall, 1e6 * cpu / len(samples)


def writer_part(cluster: PgCluster, tmp: Path, n: int, rounds: int) -> dict[str, Any]:
    cluster.create_database("bench_wal")
    engine = create_engine(cluster.url("bench_wal"), pool_size=4)
    migrate.upgrade(engine)
    load0 = os.getloadavg()[0]
    got: dict[str, list[tuple[float, float]]] = {"off": [], "write": [], "fsync": []}
    base = 0
    for k in range(rounds):
        for mode in got:
            base += 10_000
            got[mode].append(
                through_writer(engine, tmp / f"w{k}{mode}", make_samples(n, base), mode)
            )
    engine.dispose()
    out: dict[str, Any] = {"part": "writer", "samples_per_round": n, "rounds": rounds}
    for mode, runs in got.items():
        out[f"{mode}_per_s"] = [round(r) for r, _ in runs]
        out[f"{mode}_cpu_us_per_sample"] = [round(c, 2) for _, c in runs]
        out[f"{mode}_cpu_us_median"] = round(statistics.median(c for _, c in runs), 2)
    for mode in ("write", "fsync"):
        out[f"{mode}_adds_cpu_us"] = round(
            out[f"{mode}_cpu_us_median"] - out["off_cpu_us_median"], 2
        )
    out["load1"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["log", "latency", "writer"], action="append")
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--rate", type=float, default=2000.0, help="latency: samples per second")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    parts = args.only or ["log", "latency", "writer"]
    tmp = Path(tempfile.mkdtemp(prefix="connwatch-bench-wal-"))
    tmp.chmod(0o755)
    results: list[dict[str, Any]] = []
    print(f"load average at start: {os.getloadavg()}", flush=True)
    try:
        if "log" in parts:
            for mode in ("write", "fsync"):
                results.append(log_alone(tmp, make_samples(args.samples, 1), mode))
                print(results[-1], flush=True)
        if "latency" in parts:
            for mode in ("write", "fsync"):
                n = int(args.rate * 5)
                results.append(latency(tmp, make_samples(n, 1), mode, args.rate))
                print(results[-1], flush=True)
        if "writer" in parts:
            cluster = PgCluster(tmp / "pg")
            cluster.init()
            cluster.start()
            try:
                results.append(writer_part(cluster, tmp, args.samples, args.rounds))
                print(results[-1], flush=True)
            finally:
                cluster.stop(mode="immediate")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
