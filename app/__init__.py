"""connwatch: continuous connect/logon latency monitoring."""

__version__ = "0.1.0"
