"""Container files: no Docker engine here, so check that what they invoke exists."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer
import yaml

from app.cli.main import cli
from app.config import Settings

ROOT = Path(__file__).resolve().parent.parent


def _assert_valid_invocation(argv: list[str]) -> None:
    group: Any = typer.main.get_command(cli)
    ctx = group.make_context("connwatch", [argv[0]], resilient_parsing=True)
    command = group.get_command(ctx, argv[0])
    assert command is not None, f"no such command: {argv[0]}"
    options = {opt for p in command.params for opt in getattr(p, "opts", [])}
    for arg in argv[1:]:
        if arg.startswith("--"):
            assert arg in options, f"{argv[0]} has no option {arg}"
    command.make_context(argv[0], list(argv[1:]))  # parses: raises on bad values


def _settings_envs() -> set[str]:
    return {f"CONNWATCH_{name.upper()}" for name in Settings.model_fields}


def test_compose_commands_and_environment_exist_in_cli_and_settings() -> None:
    doc: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = doc["services"]
    assert {"postgres", "migrate", "web", "agent"} <= set(services)
    checked = 0
    for name, svc in services.items():
        if name == "postgres":
            continue
        _assert_valid_invocation(svc["command"])
        for var in svc["environment"]:
            if var.startswith("CONNWATCH_"):
                assert var in _settings_envs(), f"{name}: unknown setting {var}"
                checked += 1
        assert svc["secrets"] == ["connwatch_key"]
    assert checked >= 9
    assert services["migrate"]["command"] == ["migrate"]
    assert services["web"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    # the UI needs a login and is published on loopback only (issue 12)
    assert all(str(p).startswith("127.0.0.1:") for p in services["web"]["ports"])
    assert services["web"]["environment"]["CONNWATCH_ANONYMOUS_ROLE"] == "none"
    assert all("ports" not in svc for n, svc in services.items() if n != "web")


def test_dockerfile_runs_non_root_with_a_readiness_healthcheck() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.1[1-9]-slim", text, re.M)
    user = re.search(r"^USER (\S+)", text, re.M)
    assert user and user.group(1) not in ("root", "0")
    assert "/readyz" in text.split("HEALTHCHECK", 1)[1]
    for var in re.findall(r"(CONNWATCH_[A-Z_]+)=", text):
        assert var in _settings_envs(), var
    cmd = re.search(r'^CMD \["(\w+)"\]', text, re.M)
    assert cmd
    _assert_valid_invocation([cmd.group(1)])
    assert "UV_PYTHON_DOWNLOADS=never" in text
