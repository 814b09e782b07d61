"""Response models of the JSON API (they document ``/api/v1`` in the OpenAPI schema).

No model has a password field: the API cannot return one by construction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field


class SeriesOut(BaseModel):
    id: int
    probe: str
    site: str
    interval_ms: int
    timeout_ms: int
    enabled: bool


class ModeOut(BaseModel):
    name: str
    kind: str
    transport: str
    enabled: bool
    color: str = Field(description="Okabe-Ito colour used for this mode in charts")
    series: list[SeriesOut]


class TargetOut(BaseModel):
    name: str
    kind: str
    dsn: str
    username: str
    description: str
    enabled: bool
    password: str = Field(description="'encrypted', 'reference' or 'none' (never the value)")
    labels: dict[str, Any]
    modes: list[ModeOut]


class OverviewRowOut(BaseModel):
    target: str
    mode: str
    mode_kind: str
    probe: str | None = Field(description="the probe kind read: connping where the mode has one")
    state: str = Field(
        description="ok, degraded, down, probe-error (no recent run measured the database: "
        "probe-side errors or skipped runs), stale, unknown or disabled"
    )
    reason: str
    logon_p50_ms: float | None
    logon_p95_ms: float | None
    ping_p50_ms: float | None
    ping_p95_ms: float | None
    error_rate_15m: float | None
    last_error_code: str | None = Field(
        None, description="the newest failure's code in the last 15 minutes"
    )
    last_error_meaning: str | None = Field(None, description="what that code means")
    samples_15m: int
    last_sample_at: datetime | None
    spark_logon_p50_ms: list[float | None] = Field(
        description="logon p50 per minute over the last hour, oldest first (null: no data)"
    )


class OverviewOut(BaseModel):
    at: datetime
    rows: list[OverviewRowOut]


class ModeTimeseries(BaseModel):
    name: str
    kind: str
    color: str
    dash: str
    symbol: str
    t: list[datetime] = Field(description="bucket starts (UTC)")
    p5: list[float | None] = Field(
        description="5th percentile per bucket, the band's lower edge (exact from raw "
        "samples, within 2 % from rollups)"
    )
    p50: list[float | None]
    p95: list[float | None]
    p99: list[float | None]
    n: list[int]
    errors: list[int]


class ErrorMark(BaseModel):
    mode: str
    t: datetime
    count: int = Field(
        description="failed samples (error or timeout) in the bucket; with probe_side: "
        "its probe-side errors"
    )
    n: int = Field(0, description="samples of any status in the bucket")
    codes: list[str] = Field(description="their codes, most frequent first")
    meanings: list[str] = Field(
        default_factory=list, description="one line per code: what it means (app.explain)"
    )
    probe_side: bool = Field(
        False,
        description="true: probe-side errors (class PROBE): connwatch's own trouble, "
        "not the database's, never in availability",
    )


class TimeseriesOut(BaseModel):
    target: str
    probe: str
    phase: str
    start: datetime = Field(description="first bucket (the window floored to the step)")
    end: datetime
    window_start: datetime | None = Field(None, description="the window asked for: the x axis")
    window_end: datetime | None = Field(None, description="its end ('now' for a preset)")
    resolution: str = Field(description="which table answered: raw, 1m, 1h or 1d")
    step_s: float
    band_low: str = Field(description="what the lower band edge is (p5)")
    modes: list[ModeTimeseries]
    errors: list[ErrorMark]


class BreakdownMode(BaseModel):
    name: str
    color: str
    groups: list[str]
    p50: list[float | None]
    p95: list[float | None]
    n: list[int]
    failed: list[int] = Field(
        default_factory=list, description="failed samples per group (by instance only)"
    )


class BreakdownOut(BaseModel):
    target: str
    phase: str
    probe: str
    by: str = Field(description="instance or site")
    start: datetime = Field(description="start of the window covered (instance: at most 2 days)")
    end: datetime
    modes: list[BreakdownMode]


class RoundTripOut(BaseModel):
    phase: str
    ms: float


class ProbeRequestOut(BaseModel):
    id: int
    status: str
    probe: str
    requested_at: datetime
    finished_at: datetime | None
    agent: str | None
    result: dict[str, Any] | None
    error: str | None
    logon_round_trips: list[RoundTripOut] = Field(
        default_factory=list, description="the logon's round trips in wire order (ms)"
    )
    explanation: str | None = Field(
        None, description="what the result's error code means and its likely cause"
    )
