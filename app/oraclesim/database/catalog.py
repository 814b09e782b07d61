"""What one session may select from, as Oracle decides it.

- ``V$X``: the rows of the session's own instance; ``GV$X``: every running instance's
  rows, each with ``INST_ID`` first (RAC). A view the simulator does not have, or one the
  user was not granted (``grants`` in the user's config; GV$ needs its own grant), does
  not exist for this user: ORA-00942, as in Oracle.
- V$AUTHPOOL_STATS exists from 19.10 on (the authentication pool).
- In a CDB (``cdb: true``) the DRCP views (V$CPOOL_STATS, V$CPOOL_CC_STATS,
  V$AUTHPOOL_STATS, DBA_CPOOL_INFO) return rows only in CDB$ROOT, unless
  ``per_pdb_drcp`` (ENABLE_PER_PDB_DRCP, 21c and later) gives every PDB its pool.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from app.oraclesim.config import ROOT
from app.oraclesim.database import monitoring
from app.oraclesim.database.views import ServerState

Row = dict[str, Any]
View = tuple[list[tuple[str, str]], list[Row]]
DRCP_VIEWS = frozenset({"V$CPOOL_STATS", "V$CPOOL_CC_STATS", "V$AUTHPOOL_STATS", "DBA_CPOOL_INFO"})
INSTANCE_WIDE = frozenset({"DBA_CPOOL_INFO"})  # one row for the database, no GV$ form


def _base(state: ServerState, name: str, per_pdb_drcp: bool) -> View | None:
    if name == "V$PARAMETER":
        return monitoring._v_parameter(state, per_pdb_drcp)
    if name == "V$AUTHPOOL_STATS" and state.version < monitoring.AUTHPOOL_SINCE:
        return None
    builder = monitoring.VIEWS.get(name)
    if builder is not None:
        return builder(state)
    return state.view(name)


class Catalog:
    """The views of one session (or of the control API, with ``user=None``: all of them)."""

    def __init__(
        self,
        state: ServerState,
        instances: Callable[[], Sequence[ServerState]],
        *,
        may_read: Callable[[str], bool] | None = None,
        container: str | None = None,
        per_pdb_drcp: bool = False,
    ) -> None:
        self.state = state
        self.instances = instances  # the running instances' states, for GV$
        self.may_read = may_read
        self.container = container  # None: not a CDB
        self.per_pdb_drcp = per_pdb_drcp

    def _pool_hidden(self, name: str) -> bool:
        return (
            name in DRCP_VIEWS
            and self.container is not None
            and self.container != ROOT
            and not (self.per_pdb_drcp and self.state.version >= monitoring.PER_PDB_DRCP_SINCE)
        )

    def view(self, name: str) -> View | None:
        """(columns, rows) of ``name``; None where Oracle would answer ORA-00942."""
        name = name.upper()
        if self.may_read is not None and not self.may_read(name):
            return None
        glob = name.startswith("GV$")
        local = "V$" + name[3:] if glob else name
        if glob and local in INSTANCE_WIDE:
            return None
        found = _base(self.state, local, self.per_pdb_drcp)
        if found is None:
            return None
        cols, rows = found
        if self._pool_hidden(local):
            rows = []
        if not glob:
            return cols, rows
        out: list[Row] = []
        for st in self.instances():
            other = _base(st, local, self.per_pdb_drcp)
            if other is not None and not self._pool_hidden(local):
                out.extend({"INST_ID": st.instance_number, **r} for r in other[1])
        return [("INST_ID", "number"), *cols], out
