"""Dependency rules between the packages of app/ (checked on the source, statically)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parent.parent / "app"

# package -> packages it must never import (directly)
FORBIDDEN = {
    "web": ("app.probes", "app.drivers", "app.oraclesim", "app.agent"),
    "store": ("app.probes", "app.drivers", "app.oraclesim", "app.agent", "app.web"),
    "probes": ("app.web", "app.store", "app.agent"),
    "drivers": ("app.web", "app.store", "app.agent", "app.probes.runner", "app.probes.base"),
    "oraclesim": ("app.web", "app.store", "app.agent", "app.probes", "app.drivers"),
    "agent": ("app.web",),
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_does_not_import_forbidden_layers(package: str) -> None:
    offenders = []
    for path in sorted((APP / package).rglob("*.py")):
        for mod in imported_modules(path):
            if any(mod == f or mod.startswith(f + ".") for f in FORBIDDEN[package]):
                offenders.append(f"{path.relative_to(APP.parent)} imports {mod}")
    assert offenders == []


def test_the_rule_detects_an_offender(tmp_path: Path) -> None:
    bad = tmp_path / "m.py"
    bad.write_text("from app.probes.runner import run_once\nimport app.drivers.oracle\n")
    assert {"app.probes.runner", "app.drivers.oracle"} <= imported_modules(bad)
