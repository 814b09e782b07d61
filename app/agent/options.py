"""The agent's tuning knobs (defaults suit one agent probing up to a few thousand series).

Those an operator may tune are settings too (``CONNWATCH_AGENT_*``, see
:class:`app.config.Settings` and the README): :meth:`AgentOptions.from_settings`
takes them from there, and an agent built without explicit options does so. The
rest (poll periods, spool segment size, the interpreter's switch interval) only
benchmarks and tests change.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.config import Settings


@dataclass(frozen=True, slots=True)
class AgentOptions:
    # Scheduling
    max_in_flight: int = 512  # probe runs executing at once, all series together
    max_grace_s: float = 5.0  # a run may start at most min(interval/2, this) late
    # Logons per second (token buckets; burst = one second's worth)
    logons_per_s: float = 200.0  # the whole agent
    target_logons_per_s: float = 20.0  # one target (all its modes and series)
    switch_interval_s: float = 0.001  # sys.setswitchinterval while the agent runs
    thick_threads: int = 8  # worker threads for thick-mode (blocking) driver calls
    # Coordination with the store and the other agents
    poll_s: float = 1.0  # series fingerprint, locks, heartbeat
    requests_poll_s: float = 0.5  # "test now" requests
    maintain_every_s: float = 10.0  # store maintenance (one agent at a time)
    # Writer
    batch_max: int = 1000  # samples per COPY
    write_threads: int = 2  # batches in flight at once (each its own connection)
    flush_s: float = 1.0  # a sample waits at most this long before it is written
    retry_s: float = 1.0  # while the store is away, how often to try it again
    spool_segment_bytes: int = 4 * 1024 * 1024
    spool_warn_share: float = 0.8  # warn once the spool is this full
    memory_backlog_max: int = 200_000  # samples kept in memory when even the spool is full
    stop_grace_s: float = 10.0  # SIGTERM: wait this long for in-flight runs
    # Write-ahead log (app.agent.output.wal): "fsync" (written, then fdatasync'ed behind),
    # "write" (written to the OS: survives a killed agent, not a power cut), "off"
    wal: str = "fsync"
    wal_commit_s: float = 0.02  # group commit: samples of this long share one write

    @classmethod
    def from_settings(cls, settings: Settings) -> AgentOptions:
        """These defaults with the operator's ``CONNWATCH_AGENT_*`` settings applied."""
        return replace(
            cls(),
            max_in_flight=settings.agent_max_in_flight,
            max_grace_s=settings.agent_max_late_s,
            logons_per_s=settings.agent_logons_per_s,
            target_logons_per_s=settings.agent_target_logons_per_s,
            thick_threads=settings.agent_thick_threads,
            batch_max=settings.agent_write_batch,
            write_threads=settings.agent_write_threads,
            flush_s=settings.agent_flush_s,
            retry_s=settings.agent_retry_s,
            memory_backlog_max=settings.agent_memory_backlog_max,
            stop_grace_s=settings.agent_stop_grace_s,
            wal=settings.agent_wal,
            wal_commit_s=settings.agent_wal_commit_ms / 1000.0,
        )
