"""The metric registry: Prometheus naming rules hold for every family, and the writer
refuses what is not declared."""

from __future__ import annotations

import re

import pytest

from app.metrics.registry import FAMILIES, Exposition, Family, ns_to_seconds, number, to_base

UNITS_ABBREVIATED = re.compile(r"_(ms|us|ns|sec|secs|min|mins|hrs|kb|mb|gb|pct)(_|$)")


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_every_family_follows_prometheus_naming(family: Family) -> None:
    assert re.fullmatch(r"connwatch_[a-z0-9_]+", family.name), "snake_case, connwatch_ prefix"
    assert not UNITS_ABBREVIATED.search(family.name), "base units, spelled out"
    assert family.type in ("counter", "gauge", "histogram")
    assert family.name.endswith("_total") == (family.type == "counter")
    assert not family.name.endswith(("_bucket", "_count", "_sum"))
    assert not {"le", "quantile"} & set(family.labels), "reserved for histograms/summaries"
    assert family.help and "\n" not in family.help
    if family.type == "histogram":
        assert family.name.endswith("_seconds")


def test_families_are_declared_once() -> None:
    names = [f.name for f in FAMILIES]
    assert len(names) == len(set(names))


def test_the_writer_refuses_undeclared_families_and_wrong_kinds() -> None:
    out = Exposition()
    with pytest.raises(KeyError, match="not declared"):
        out.add("connwatch_made_up", ("x",), 1)
    with pytest.raises(ValueError, match="histogram"):
        out.add("connwatch_logon_duration_seconds", ("t", "m", "p", "s"), 1)
    with pytest.raises(ValueError):
        out.add("connwatch_up", ("only one label",), 1)  # zip(strict) on the label count


def test_text_has_help_and_type_once_per_family_in_declared_order() -> None:
    out = Exposition()
    out.add("connwatch_up", ("b", "m"), 1)
    out.add("connwatch_samples_total", ("t", "m", "connping", "default", "ok"), 12345678901)
    out.add("connwatch_up", ("a", "m"), 0)
    lines = out.text().splitlines()
    assert lines[0].startswith("# HELP connwatch_samples_total ")
    assert lines[2] == (
        'connwatch_samples_total{target="t",mode="m",probe="connping",site="default",'
        'outcome="ok"} 12345678901'
    )
    assert [x for x in lines if x.startswith("# TYPE")] == [
        "# TYPE connwatch_samples_total counter",
        "# TYPE connwatch_up gauge",
    ]
    assert lines[-2:] == [
        'connwatch_up{target="b",mode="m"} 1',
        'connwatch_up{target="a",mode="m"} 0',
    ]
    assert Exposition().text() == ""


def test_values_are_printed_without_float_noise() -> None:
    """1.531247 ms is 0.001531247 s (binary ``/ 1000.0`` gives 0.0015312470000000001);
    integers stay exact, Unix times keep their milliseconds, the rest has at most 12
    significant digits."""
    assert number(to_base(1.531247, 1000)) == "0.001531247"
    assert number(1.531247 / 1000.0) == "0.001531247"
    assert number(to_base(3.3, 100)) == "0.033"
    assert number(ns_to_seconds(1_531_247)) == "0.001531247"
    assert number(ns_to_seconds(123_456_789_012_345)) == "123456.789012"
    assert number(0.1 + 0.2) == "0.3" and number(2 / 3) == "0.666666666667"
    assert number(123_456_789_012_345) == "123456789012345"  # a counter, in full
    assert number(1_763_900_000.123456) == "1763900000.123"
    assert number(1_763_900_000.0) == "1763900000"
    assert (number(float("nan")), number(float("inf"))) == ("NaN", "+Inf")
