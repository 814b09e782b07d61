"""The probing agent: schedules each series at its exact instants, runs probes, writes samples."""
