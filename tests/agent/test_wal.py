"""The write-ahead log: group commits, recovery after a crash, checkpoints, torn frames."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.agent.options import AgentOptions
from app.agent.output.spool import Spool
from app.agent.output.wal import GroupCommit, WalLocked, WriteAheadLog, read_segment
from app.agent.output.writer import Writer
from app.samples import Sample, SampleStatus

T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)


def make(series: int, i: int) -> Sample:
    at = T0 + timedelta(milliseconds=100 * i)
    return Sample(series, at, at, SampleStatus.OK, total_ns=1000 + i, extra={"i": i})


def stored(engine: Engine, series: int) -> list[int]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("select total_ns from samples where series_id = :s order by scheduled_at"),
            {"s": series},
        ).scalars()
        return [int(r) - 1000 for r in rows]


def test_recover_returns_what_no_checkpoint_covers(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path, fsync=False)
    assert wal.recover() == []
    wal.append([make(1, i) for i in range(5)])
    wal.append([make(1, i) for i in range(5, 8)], checkpoint=3)
    wal.close()
    again = WriteAheadLog(tmp_path)
    got = again.recover()
    assert [s.total_ns for s in got] == [1003, 1004, 1005, 1006, 1007]
    assert got[0] == make(1, 3)  # every field survives the round trip
    assert again.next_seq == 8 and again.checkpointed == 3
    again.close()


def test_a_second_process_cannot_open_the_same_log(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path)
    wal.recover()
    with pytest.raises(WalLocked, match="in use by another connwatch process"):
        WriteAheadLog(tmp_path).recover()
    wal.close()
    again = WriteAheadLog(tmp_path)  # free again once closed
    again.recover()
    again.close()


def test_a_torn_frame_ends_the_segment_and_is_repaired(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    wal = WriteAheadLog(tmp_path)
    wal.append([make(2, 0), make(2, 1)])
    wal.append([make(2, 2)])
    wal.close()
    (seg,) = wal.segments()
    seg.write_bytes(seg.read_bytes()[:-7])  # killed while writing the second frame
    again = WriteAheadLog(tmp_path)
    with caplog.at_level(logging.WARNING):
        got = again.recover()
    assert [s.total_ns for s in got] == [1000, 1001]
    assert "torn or corrupt frame" in caplog.text
    again.append([make(2, 3)])  # appends after the last complete frame
    again.close()
    frames = [f for p in again.segments() for f in read_segment(p)]
    assert [len(f.samples) for f in frames] == [2, 1]


def test_checkpoints_delete_whole_segments(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path, segment_bytes=600)
    for k in range(10):
        wal.append([make(3, 2 * k), make(3, 2 * k + 1)])
    assert len(wal.segments()) >= 4
    wal.checkpoint(14)
    first_seqs = [int(p.name[4:-4]) for p in wal.segments()]
    assert first_seqs[0] <= 14 < (first_seqs[1] if len(first_seqs) > 1 else 10**9)
    assert wal.bytes == sum(p.stat().st_size for p in wal.segments())
    wal.close()
    again = WriteAheadLog(tmp_path)
    assert [s.total_ns - 1000 for s in again.recover()] == list(range(14, 20))
    again.close()


def test_group_commit_hands_on_in_order_and_in_groups(tmp_path: Path) -> None:
    got: list[list[Sample]] = []
    wal = WriteAheadLog(tmp_path)
    gc = GroupCommit(wal, got.append, commit_s=0.05)
    gc.start()
    for i in range(30):
        gc.submit(make(4, i))
    deadline = time.monotonic() + 5
    while sum(map(len, got)) < 30 and time.monotonic() < deadline:
        time.sleep(0.01)
    gc.stop()
    assert [s.total_ns for g in got for s in g] == [1000 + i for i in range(30)]
    assert len(got) < 30  # grouped, not one write per sample
    assert gc.syncs >= 1  # mode fsync: synced behind the writes
    assert wal.next_seq == 30 and gc.pending == 30  # on disk, none final yet
    gc.done(30)
    assert gc.pending == 0
    wal.close()


def test_writer_with_the_log_stores_everything_and_leaves_the_log_empty(
    store: Engine, tmp_path: Path
) -> None:
    wal = WriteAheadLog(tmp_path / "wal")
    w = Writer(store, Spool(tmp_path / "spool", 10_000_000), AgentOptions(flush_s=0.1), wal=wal)
    w.start()
    for i in range(250):
        w.submit(make(5, i))
    deadline = time.monotonic() + 10
    while w.written < 250 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert w.written == 250
    deadline = time.monotonic() + 5
    while w.wal_pending and time.monotonic() < deadline:  # the watermark reached the log
        time.sleep(0.02)
    assert w.wal_pending == 0
    w.stop()
    assert stored(store, 5) == list(range(250))
    assert wal.segments() == []  # a clean stop leaves nothing to replay


def test_samples_of_a_killed_writer_are_stored_once_at_the_next_start(
    store: Engine, tmp_path: Path
) -> None:
    # first life: samples reach the log, the first 40 also the store, then "SIGKILL"
    wal = WriteAheadLog(tmp_path / "wal")
    w = Writer(store, Spool(tmp_path / "spool", 10_000_000), AgentOptions(flush_s=0.1), wal=wal)
    w.start()
    for i in range(40):
        w.submit(make(6, i))
    deadline = time.monotonic() + 10
    while w.written < 40 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert w.written == 40
    dead = GroupCommit(wal, lambda group: None, commit_s=0.01)  # the writer never sees these
    w.log = dead
    dead.start()
    for i in range(40, 100):
        w.submit(make(6, i))
    dead.stop()
    wal.close()  # the process is gone: no checkpoint for 40..99, maybe not even for 0..39
    w.wal = w.log = None
    w.stop()  # (only to end this test's threads)
    # second life: the log is replayed into the store before anything else
    w2 = Writer(
        store,
        Spool(tmp_path / "spool", 10_000_000),
        AgentOptions(flush_s=0.1),
        wal=WriteAheadLog(tmp_path / "wal"),
    )
    w2.start()
    w2.stop()
    assert w2.recovered >= 60
    assert stored(store, 6) == list(range(100))  # each exactly once
    assert w2.written == 60  # the replay stored only what was missing
