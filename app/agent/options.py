"""The agent's tuning knobs (defaults suit one agent probing up to a few thousand series).

These are not (yet) environment settings: :class:`app.config.Settings` carries what
an operator sets (site, agent name, spool size, data directory); everything here has
a default that only benchmarks and tests change.
"""

from __future__ import annotations

from dataclasses import dataclass


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
