"""What the simulated database does: logon verifier, calls, queries and the V$ views."""
