"""Where samples go once measured: the writer (batches to the store), the spool, their records."""
