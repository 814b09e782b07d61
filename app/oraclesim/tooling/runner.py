"""Run the simulator for synchronous users: in a daemon thread of this process (tests) or
in a child process (benchmarks, demos).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import urllib.request
from collections.abc import Coroutine
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from app.oraclesim.config import SimConfig
from app.oraclesim.faults import FaultSet
from app.oraclesim.server import Simulator
from app.oraclesim.tooling.child import start_child, stop_child

T = TypeVar("T")


class SimulatorThread:
    """The simulator on its own event loop in a daemon thread.

    `faults` is thread-safe; other calls are marshalled onto the simulator's loop.
    """

    def __init__(self, config: SimConfig | None = None, host: str = "127.0.0.1", port: int = 0):
        self.sim = Simulator(config)
        self.host, self._want_port = host, port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, daemon=True, name="oraclesim"
        )

    def start(self) -> SimulatorThread:
        self._thread.start()
        self.call(self.sim.start(self.host, self._want_port))
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        self.call(self.sim.stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> SimulatorThread:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def _sync(self, fn: Any, *args: Any) -> Any:
        async def run() -> Any:
            return fn(*args)

        return self.call(run())

    @property
    def port(self) -> int:
        return self.sim.port

    @property
    def dispatcher_port(self) -> int:
        return self.sim.dispatcher_port

    @property
    def faults(self) -> FaultSet:
        return self.sim.faults

    def ground_truth(self) -> list[dict[str, Any]]:
        return self.sim.ground_truth()

    @property
    def tls_port(self) -> int:
        return self.sim.tls_port

    def view(self, name: str, instance: str | None = None) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self._sync(self.sim.view, name, instance)
        return rows

    def sessions(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self._sync(self.sim.sessions)
        return rows

    def kill_session(self, sid: int, code: int = 2396) -> bool:
        return bool(self._sync(self.sim.kill_session, sid, code))

    def listener_down(self, duration_s: float | None = None) -> None:
        self.call(self.sim.listener_down(duration_s))

    def listener_up(self) -> None:
        self.call(self.sim.listener_up())


class SimulatorProcess:
    """`python -m app.oraclesim.tooling.cli` in a child process, driven through the control API."""

    def __init__(self, config_path: str | Path | None = None, no_latency: bool = True) -> None:
        self.config_path, self.no_latency = config_path, no_latency
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0
        self.control_port = 0
        self.tls_port = 0

    def start(self, timeout: float = 30) -> SimulatorProcess:
        args = ["--port", "0", "--control-port", "0", "--status-json"]
        if self.no_latency:
            args.append("--no-latency")
        if self.config_path is not None:
            args += ["--config", str(self.config_path)]
        self.proc, info = start_child("app.oraclesim.tooling.cli", args, "simulator")
        self.port, self.control_port = info["port"], info["control_port"]
        self.tls_port = info.get("tls_port") or 0
        return self

    def control(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.control_port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read() or b"null")

    def stop(self) -> None:
        if self.proc is not None:
            stop_child(self.proc)
        self.proc = None

    def __enter__(self) -> SimulatorProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
