"""Histogram maths: the log-bucket scheme and how many histograms merge (in SQL or numpy)."""
