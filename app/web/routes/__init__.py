"""The web's routers: pages, the JSON API, /metrics, the report, the API docs, vendored assets."""
