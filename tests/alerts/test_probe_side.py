"""A probe-side failure (class PROBE: connwatch's or the driver's own trouble) never burns
an SLO nor fires an availability rule; the same failures as the target's do (the control)."""

from __future__ import annotations

from datetime import timedelta

from app.probes.errors import classify
from app.samples import ErrorClass
from app.slo.compute import series_counts
from app.slo.definitions import SloSpec, upsert_slo
from app.targets.selector import Selector
from tests.alerts.conftest import T0, World, bad, ok

RULES = ("any-failure", "rate-2m", "rate-1h", "burn")


def test_probe_side_failures_never_burn_an_slo_or_fire_availability(world: World) -> None:
    # what the probes make of python-oracledb's DRCP IndexError (issue 17 item 1)
    probe = classify(IndexError("list assignment index out of range"))
    assert (probe.error_class, probe.code) == (ErrorClass.PROBE, "PROBE-IndexError")
    with world.engine.begin() as conn:
        upsert_slo(
            conn, SloSpec(name="sales-up", selector=Selector(targets=["sales"]), objective=99.0)
        )
    world.rule(name="any-failure", kind="availability", m=3, n=5)
    world.rule(name="rate-2m", kind="availability", error_rate_pct=20, window="2m")
    world.rule(name="rate-1h", kind="availability", error_rate_pct=20, window="1h")
    world.rule(name="burn", kind="slo_burn", slo="sales-up")
    # 70 minutes of runs every 10 s, every other one failed: probe-side on dedicated,
    # the target's own failure (TNS-12520) on pooled
    samples = []
    for i in range(6 * 70):
        at = T0 + timedelta(seconds=10 * i)
        for mode, failure in (
            ("dedicated", bad(world.sid["dedicated"], at, probe.code, probe.error_class)),
            ("pooled", bad(world.sid["pooled"], at)),
        ):
            samples.append(failure if i % 2 else ok(world.sid[mode], at, 80.0))
    world.write(samples)
    world.rollup()  # the 1-hour windows read 1-minute rollups, the short ones raw samples
    end = T0 + timedelta(minutes=70)
    world.cycle(end)
    for rule in RULES:
        assert world.state(rule, mode="pooled") == "firing", rule
        assert world.state(rule, mode="dedicated") == "normal", rule
    with world.engine.connect() as conn:
        for window in (timedelta(minutes=10), timedelta(hours=1)):  # raw, then rollups
            got = series_counts(conn, list(world.sid.values()), end - window, end)
            ded, pooled = got[world.sid["dedicated"]], got[world.sid["pooled"]]
            runs = int(window.total_seconds()) // 10
            assert (ded.total, ded.good) == (runs // 2, runs // 2), window  # only the ok ones
            assert (pooled.total, pooled.good) == (runs, runs // 2), window
