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
    "targets": ("app.web", "app.agent", "app.probes", "app.drivers", "app.oraclesim"),
    "demo": ("app.web.routes", "app.web.views"),
    # capabilities added around the core: the web calls them, they never import the web
    "auth": ("app.web", "app.agent", "app.probes", "app.drivers", "app.oraclesim"),
    "secrets": ("app.web", "app.agent", "app.probes", "app.drivers", "app.oraclesim", "app.store"),
    "alerts": ("app.web", "app.agent", "app.probes", "app.drivers", "app.oraclesim"),
    "notify": ("app.web", "app.agent", "app.probes", "app.drivers", "app.oraclesim", "app.alerts"),
    "slo": (
        "app.web",
        "app.agent",
        "app.probes",
        "app.drivers",
        "app.oraclesim",
        "app.alerts",
        "app.notify",
    ),
    "reports": ("app.web", "app.agent", "app.probes", "app.drivers", "app.oraclesim"),
    "explain": ("app.web", "app.agent", "app.probes", "app.drivers", "app.oraclesim", "app.store"),
    "metrics": ("app.web", "app.agent", "app.probes", "app.drivers", "app.oraclesim"),
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


# app/ is not a drawer: the loose top-level modules are the foundation everything shares.
# A new capability is a package of its own with a one-line purpose (its __init__ docstring).
TOP_LEVEL_MODULES = {
    "__init__.py",
    "config.py",
    "db.py",
    "migrate.py",
    "models.py",
    "logs.py",
    "samples.py",
}
MAX_FILES_PER_FOLDER = 14  # "about a dozen": past that a folder wants sub-packages by role
MAX_MODULE_LINES = 600  # modules of a few hundred lines
LONG_MODULES = {"store/write/synthetic.py": 900}  # to be split


def test_app_has_no_new_loose_modules() -> None:
    loose = {p.name for p in APP.glob("*.py")}
    assert loose <= TOP_LEVEL_MODULES, (
        f"put these in a package: {sorted(loose - TOP_LEVEL_MODULES)}"
    )


def test_every_package_says_what_it_is_for() -> None:
    missing = [
        str(d.relative_to(APP.parent))
        for d in sorted(APP.rglob("*"))
        if d.is_dir()
        and d.name != "__pycache__"
        and list(d.glob("*.py"))
        and not ast.get_docstring(
            ast.parse((d / "__init__.py").read_text())
            if (d / "__init__.py").exists()
            else ast.parse("")
        )
    ]
    assert missing == [], "each package's __init__.py starts with a one-line purpose"


def test_no_folder_is_a_drawer() -> None:
    crowded = {
        str(d.relative_to(APP.parent)): n
        for d in sorted(APP.rglob("*"))
        if d.is_dir() and (n := len(list(d.glob("*.py")))) > MAX_FILES_PER_FOLDER
    }
    assert crowded == {}, "group these folders into sub-packages by role"


def test_modules_stay_a_few_hundred_lines() -> None:
    long = {}
    for path in APP.rglob("*.py"):
        rel = str(path.relative_to(APP))
        n = len(path.read_text().splitlines())
        if n > LONG_MODULES.get(rel, MAX_MODULE_LINES):
            long[rel] = n
    assert long == {}, "split these modules by concept"
