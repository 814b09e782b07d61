"""An agent's worker processes: the probing unit, the supervisor of N of them, shared caps."""
