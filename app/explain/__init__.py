"""What each error code connwatch records means, and its likely cause, in one line each.

Every failed or skipped sample carries a code (``ORA-01017``, ``DPY-4011``,
``TNS-12520``, ``NET-ECONNREFUSED``, ``PG-28P01``, ``TIMEOUT``, ``CONFIG``, the
skipped reasons ``LATE``/``BUSY``/``RATE_LIMIT``/``OVERRUN``/``OVERLOAD``/``PAUSED``, or
an exception's class name). :func:`explain` turns one into an :class:`Explanation` (exact
entry from the table in :mod:`app.explain.codes`, else a family-level one, so every code gets a
sentence); :func:`catalogue` lists the table for the ``/errors`` reference page.
Pure data and string work: no web, store or probe imports, so the web, the alerts and
the reports can all use it.
"""

from app.explain.lookup import FAMILIES, Explanation, catalogue, explain, family_of

__all__ = ["FAMILIES", "Explanation", "catalogue", "explain", "family_of"]
