"""The error-code reference: ``/errors`` (a page) and ``/api/v1/errors`` (JSON).

Every code connwatch records, with a one-line meaning and a likely cause, from
:mod:`app.explain`; a code outside the table (``?code=ORA-00600``) gets its family's
sentence. Links from the overview, the outages, the samples and the charts land on a
code's row (``/errors#ORA-01017``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel

from app.explain import FAMILIES, catalogue, explain
from app.web.access.guards import require_viewer
from app.web.deps import TemplatesDep

router = APIRouter(dependencies=[Depends(require_viewer)])
CodeQ = Annotated[
    str | None,
    Query(max_length=64, pattern=r"^[A-Za-z0-9_.\-]*$", description="look one code up"),
]


class ExplanationOut(BaseModel):
    code: str
    family: str
    meaning: str
    cause: str
    known: bool


class ErrorsOut(BaseModel):
    families: dict[str, str]
    codes: list[ExplanationOut]


@router.get("/api/v1/errors", tags=["api"], summary="Every error code: meaning and likely cause")
def api_errors(code: CodeQ = None) -> ErrorsOut:
    rows = [explain(code.strip())] if code and code.strip() else catalogue()
    return ErrorsOut(
        families={k: v[0] for k, v in FAMILIES.items()},
        codes=[ExplanationOut(**r.as_dict()) for r in rows if r is not None],
    )


@router.get("/errors", response_class=HTMLResponse, include_in_schema=False)
def errors_page(request: Request, templates: TemplatesDep, code: CodeQ = None) -> Response:
    rows = catalogue()
    looked_up = explain(code.strip()) if code and code.strip() else None
    groups = [
        (k, title, text, [r for r in rows if r.family == k])
        for k, (title, text) in FAMILIES.items()
    ]
    return templates.TemplateResponse(
        request,
        "errors.html",
        {
            "title": "Error codes",
            "active": "",
            "groups": [g for g in groups if g[3]],
            "code": code or "",
            "looked_up": looked_up,
        },
    )
