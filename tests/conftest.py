"""Shared test configuration.

Fixtures that start real services live in ``tests/fixtures/`` as pytest plugins,
one module per service, so each test directory can use any of them.
"""

pytest_plugins = [
    "tests.fixtures.pg",
    "tests.fixtures.pgbouncer",
    "tests.fixtures.oraclesim",
    "tests.fixtures.browser",
    "tests.fixtures.receivers",
]
