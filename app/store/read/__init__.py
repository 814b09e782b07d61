"""The store's read queries: what the web and /metrics ask of the samples and rollups."""
