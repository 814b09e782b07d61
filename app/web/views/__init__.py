"""What pages and the API show, shaped from the store's rows: no routes, no HTML."""
