"""`connwatch simulate`: run the Oracle Net simulator until SIGINT/SIGTERM.

Also runnable alone: `python -m app.oraclesim.tooling.cli --port 0 --control-port 0`.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Annotated

import typer

from app.oraclesim.config import ConfigError, SimConfig
from app.oraclesim.server import Simulator
from app.oraclesim.tooling.control import ControlServer


def simulate(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Listener port (0: any free port).")] = 1521,
    config: Annotated[
        Path | None, typer.Option("--config", help="YAML file with services, users, latency.")
    ] = None,
    no_latency: Annotated[
        bool, typer.Option("--no-latency", help="Turn all injected latency off.")
    ] = False,
    control_port: Annotated[
        int | None,
        typer.Option("--control-port", help="Port of the HTTP/JSON fault control API (0: any)."),
    ] = None,
    status_json: Annotated[
        bool, typer.Option("--status-json", hidden=True, help="Print one JSON status line.")
    ] = False,
) -> None:
    """Run the built-in Oracle Net simulator (demo and test target)."""
    try:
        cfg = SimConfig.from_yaml(config) if config is not None else SimConfig.default()
    except ConfigError as e:
        typer.echo(f"connwatch simulate: error: {e}", err=True)
        raise typer.Exit(2) from None
    if no_latency:
        cfg.no_latency = True
    if not 0 <= port <= 65535 or (control_port is not None and not 0 <= control_port <= 65535):
        typer.echo("connwatch simulate: error: --port/--control-port must be 0..65535", err=True)
        raise typer.Exit(2)
    try:
        asyncio.run(_serve(cfg, host, port, control_port, status_json))
    except OSError as e:
        typer.echo(f"connwatch simulate: error: cannot listen on {host}: {e.strerror}", err=True)
        raise typer.Exit(2) from None


async def _serve(
    cfg: SimConfig, host: str, port: int, control_port: int | None, status_json: bool
) -> None:
    sim = Simulator(cfg)
    await sim.start(host, port)
    control = None
    if control_port is not None:
        control = ControlServer(sim)
        await control.start(host, control_port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if status_json:
        print(
            json.dumps(
                {
                    "host": host,
                    "port": sim.port,
                    "dispatcher_port": sim.dispatcher_port,
                    "tls_port": sim.tls_port,
                    "control_port": control.port if control else None,
                }
            ),
            flush=True,
        )
    else:
        services = "; ".join(f"{s.name}: {', '.join(s.modes)}" for s in cfg.services.values())
        print(f"oraclesim listening on {host}:{sim.port} ({services})", flush=True)
        if sim.tls_port:
            print(f"tcps on {host}:{sim.tls_port}", flush=True)
        if len(sim.instances.all) > 1:
            names = ", ".join(f"{i.name} (#{i.number})" for i in sim.instances.all)
            print(f"instances: {names}", flush=True)
        print(
            f"users: {', '.join(u.name for u in cfg.users.values())}; "
            f"latency {'off' if cfg.no_latency else 'on'}",
            flush=True,
        )
        if control is not None:
            print(f"fault control API on http://{host}:{control.port}/faults", flush=True)
    await stop.wait()
    if control is not None:
        await control.stop()
    await sim.stop()


def main() -> None:
    typer.run(simulate)


if __name__ == "__main__":
    main()
