"""The web: FastAPI app, pages, JSON API and /metrics; it reads the store, never imports probes."""
