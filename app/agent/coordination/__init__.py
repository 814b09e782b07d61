"""Coordination through PostgreSQL: the agents row and heartbeat, who runs which series."""
