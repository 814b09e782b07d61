"""Running the simulator: its command, child processes, fault control API, delay proxy."""
