"""The instances behind the listener: one by default, two or more for a RAC database.

Every instance has its own :class:`~app.oraclesim.database.views.ServerState` (sessions,
DRCP pool, shared servers, counters, startup time) and serves every service. The listener
hands a new connection to the running instance with the fewest sessions (ties: the one
whose turn it is, so an idle two-instance database alternates), unless the connect
descriptor pins one with ``(INSTANCE_NAME=...)``. An ``instance_down`` fault takes one
out: its sessions end, it gets no connections (a pinned connect is refused with
TNS-12521); when the fault ends it starts again with fresh counters and a new startup
time, as a restarted instance does.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from app.oraclesim.config import SimConfig
from app.oraclesim.database.pressure import Pressure
from app.oraclesim.database.views import ServerState
from app.oraclesim.faults import FaultSet

UNKNOWN_INSTANCE = 12521  # TNS:listener does not currently know of instance requested
NO_SERVICE = 12514  # TNS:listener does not currently know of service requested


@dataclass(slots=True)
class Instance:
    name: str
    number: int
    pressure: Pressure
    state: ServerState
    down: bool = False
    restarts: int = 0
    on_down: list[Callable[[], None]] = field(default_factory=list)


class Instances:
    def __init__(self, cfg: SimConfig, faults: FaultSet) -> None:
        self.cfg = cfg
        self._sids = itertools.count(17)
        self._turn = 0
        self.all: list[Instance] = []
        for ic in cfg.instance_list():
            pressure = Pressure(faults, ic.name)
            inst = Instance(
                ic.name, ic.number, pressure, self._new_state(ic.name, ic.number, pressure)
            )
            self.all.append(inst)

    def _new_state(self, name: str, number: int, pressure: Pressure) -> ServerState:
        cfg = self.cfg
        st = ServerState(
            cfg.shared_servers,
            cfg.drcp_max_servers,
            cfg.drcp_wait_timeout_s,
            processes=cfg.processes,
            pressure=pressure,
            max_shared_servers=cfg.max_shared_servers,
        )
        st.instance_name, st.instance_number = name, number
        several = len(cfg.instance_list()) > 1
        st.host_name = f"{cfg.server_host}{number}" if several else cfg.server_host
        st.version = cfg.version_tuple
        st.sid_source = self._sids
        return st

    def refresh(self) -> None:
        """Follow instance_down faults: stop an instance that went down (its sessions are
        told through ``on_down``), restart one whose fault ended."""
        for inst in self.all:
            down = inst.pressure.down()
            if down and not inst.down:
                inst.down = True
                for kill in list(inst.on_down):
                    kill()
                inst.on_down.clear()
            elif not down and inst.down:
                inst.down = False
                inst.restarts += 1
                inst.state = self._new_state(inst.name, inst.number, inst.pressure)

    def running(self) -> list[Instance]:
        self.refresh()
        return [i for i in self.all if not i.down]

    def states(self) -> list[ServerState]:
        return [i.state for i in self.running()]

    def by_name(self, name: str) -> Instance | None:
        return next((i for i in self.all if i.name == name.upper()), None)

    def pick(self, pinned: str | None) -> Instance | int:
        """The instance for a new connection, or the TNS error number to refuse it with."""
        up = self.running()
        if pinned:
            inst = self.by_name(pinned)
            return inst if inst is not None and not inst.down else UNKNOWN_INSTANCE
        if not up:
            return NO_SERVICE
        self._turn += 1
        order = up[self._turn % len(up) :] + up[: self._turn % len(up)]
        return min(order, key=lambda i: len(i.state.sessions) + i.state.logons_in_progress)
