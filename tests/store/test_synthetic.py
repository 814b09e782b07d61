"""The synthetic history generator: shape, rollups through the real path, older rollups."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.store.hist import MAX_RELATIVE_ERROR
from app.store.synthetic import generate

END = datetime(2026, 11, 21, 6, 0, tzinfo=UTC)


def test_small_history(engine: Engine) -> None:
    rep = generate(engine, series=4, days=2, rollup_days=5, interval_s=60, end=END)
    assert len(rep.series_ids) == 4
    with engine.connect() as conn:
        names = conn.execute(text("select name from targets order by name")).scalars().all()
        assert names == ["synthetic-01", "synthetic-02"]
        n, first, last = conn.execute(
            text("select count(*), min(scheduled_at), max(scheduled_at) from samples")
        ).one()
        # yesterday whole and today up to END, one sample a minute per series
        assert n == rep.raw_samples == 4 * (1440 + 360)
        assert first == END.replace(hour=0) - timedelta(days=1) and last < END
        medians = dict(
            conn.execute(
                text(
                    "select m.kind, percentile_disc(0.5) within group (order by s.total_ns) "
                    "from samples s join series se on se.id = s.series_id "
                    "join modes m on m.id = se.mode_id group by 1"
                )
            ).all()
        )
        assert medians["dedicated"] > medians["pooled"] > medians["shared"]
        assert 40e6 < medians["shared"] < 70e6
        # raw days were rolled up by the store's own path: every raw sample is counted
        assert conn.execute(text("select sum(n) from rollup_1m")).scalar_one() == n
        assert (
            conn.execute(
                text("select sum(n) from rollup_1d where bucket >= :d"), {"d": first}
            ).scalar_one()
            == n
        )
        # three older days of 1-hour and 1-day rollups, no raw behind them
        older = conn.execute(
            text("select count(*), sum(n) from rollup_1h where bucket < :d"), {"d": first}
        ).one()
        assert older == (3 * 24 * 4, 3 * 1440 * 4)
        weeks = conn.execute(text("select sum(n) from rollup_1w")).scalar_one()
        assert weeks == n + 3 * 1440 * 4  # every day, raw-backed or not, is in its week
        row = conn.execute(
            text("select total_p50, total_min, total_max from rollup_1d where bucket < :d limit 1"),
            {"d": first},
        ).one()
        assert row[1] <= row[0] <= row[2] * (1 + MAX_RELATIVE_ERROR)
