"""Tools for people walking the product (not collected as tests)."""
