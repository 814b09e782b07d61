"""The whole product on one machine: the demo, and the local PostgreSQL and pgbouncer it starts."""
