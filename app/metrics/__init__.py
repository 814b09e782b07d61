"""Prometheus exposition of connwatch's figures: one registry of metric families (name,
type, help), and the collectors that fill them from the store."""
