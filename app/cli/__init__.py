"""The ``connwatch`` command line: one entry point, one module per command group."""
