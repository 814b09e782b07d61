"""Who may call the alerting routes, and the record of what they changed, in one place.

Reading alerting pages and API needs a viewer (``require_viewer``); changing rules,
silences, acknowledgements, annotations and contact points needs an operator
(``OperatorDep``: the route guard of app.web.access.guards, which also checks the
anti-forgery token of a browser session). Every change goes to the audit log
(``record`` is app.auth.audit.record, in the change's own transaction).
"""

from __future__ import annotations

from app.auth.audit import record
from app.auth.principal import Principal as Actor
from app.web.access.guards import OperatorDep, require_operator, require_viewer

__all__ = ["Actor", "OperatorDep", "record", "require_operator", "require_viewer"]
