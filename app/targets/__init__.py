"""Targets as code: the YAML schema, probe and connection params, import, export and list."""
