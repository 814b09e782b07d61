"""``/docs``: the API reference, rendered here from FastAPI's OpenAPI schema.

FastAPI's Swagger UI and ReDoc pull JavaScript from a CDN; connwatch must work on
machines without internet, so this page lists every path, its parameters (with
types, allowed values and limits) and its response model from ``/openapi.json``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from app.web.access.guards import require_viewer
from app.web.deps import TemplatesDep

router = APIRouter(include_in_schema=False, dependencies=[Depends(require_viewer)])


def _type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(repr(v) for v in schema["enum"])
    if "anyOf" in schema:
        return " | ".join(_type(s) for s in schema["anyOf"])
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if schema.get("type") == "array":
        return f"list[{_type(schema.get('items', {}))}]"
    if "const" in schema:
        return repr(schema["const"])
    return str(schema.get("type", "any"))


def _limits(schema: dict[str, Any]) -> str:
    keys = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "minLength", "maxLength")
    return ", ".join(f"{k}={schema[k]}" for k in keys if k in schema)


def endpoints(spec: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for path, ops in sorted(spec.get("paths", {}).items()):
        for method, op in ops.items():
            params = []
            for p in op.get("parameters", []):
                schema = p.get("schema", {})
                params.append(
                    {
                        "name": p["name"],
                        "in": p["in"],
                        "required": p.get("required", False),
                        "type": _type(schema),
                        "limits": _limits(schema),
                        "default": schema.get("default"),
                        "description": p.get("description") or schema.get("description", ""),
                    }
                )
            ok = op.get("responses", {}).get("200", {}).get("content", {})
            model = ""
            for content in ok.values():
                model = _type(content.get("schema", {}))
            out.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "summary": op.get("summary", ""),
                    "description": op.get("description", ""),
                    "params": params,
                    "returns": model,
                }
            )
    return out


@router.get("/docs", response_class=HTMLResponse)
def api_docs(request: Request, templates: TemplatesDep) -> Response:
    spec = request.app.openapi()
    return templates.TemplateResponse(
        request,
        "api_docs.html",
        {"title": "API", "active": "", "endpoints": endpoints(spec), "spec": spec},
    )


@router.get("/openapi.json")
def openapi_json(request: Request) -> JSONResponse:
    """The OpenAPI schema (behind the viewer guard, like the API it describes)."""
    return JSONResponse(request.app.openapi())
