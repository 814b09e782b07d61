"""Oracle Net simulator: a listener and server that the unmodified python-oracledb thin
driver talks to, with per-mode latency models, server views and fault injection.

It validates probe logic, timing, error handling and the dashboard; it is not a
performance model of Oracle.
"""

from app.oraclesim.config import ConfigError, SimConfig
from app.oraclesim.faults import Fault, FaultError
from app.oraclesim.server import Simulator

__all__ = ["ConfigError", "Fault", "FaultError", "SimConfig", "Simulator"]
