"""The write path: samples in, partitions, packed days, rollups, upkeep, synthetic history."""
