"""The CLI's expected failure, in a module of its own.

``python -m app.cli.main`` runs main.py as ``__main__``: a class defined there would
be a different class from the ``app.cli.main.CliError`` that other modules (the demo)
import and raise, and would escape ``main()`` as a traceback. Defined here, it is one.
"""


class CliError(Exception):
    """An expected failure: printed as one line, exit status 2."""
