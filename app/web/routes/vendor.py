"""Plotly.js, served from the copy inside the installed ``plotly`` Python package.

No CDN and no copy in the repository: the file that ships with the locked
``plotly`` wheel (``plotly/package_data/plotly.min.js``) is read once, gzipped
once in memory, and served with a long cache lifetime under
``/static/vendor/plotly.min.js``.
"""

from __future__ import annotations

import gzip
import hashlib
import threading
from dataclasses import dataclass
from importlib import resources

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from app.web.access.guards import public

router = APIRouter(include_in_schema=False, dependencies=[Depends(public)])


@dataclass(frozen=True)
class _Asset:
    raw: bytes
    gz: bytes
    etag: str


_lock = threading.Lock()
_cache: dict[str, _Asset] = {}


def plotly_js() -> _Asset:
    with _lock:
        asset = _cache.get("plotly")
        if asset is None:
            raw = (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()
            asset = _Asset(
                raw=raw,
                gz=gzip.compress(raw, compresslevel=6),
                etag='"' + hashlib.sha256(raw).hexdigest()[:16] + '"',
            )
            _cache["plotly"] = asset
        return asset


@router.get("/static/vendor/plotly.min.js")
def serve_plotly(request: Request) -> Response:
    asset = plotly_js()
    headers = {
        "Cache-Control": "public, max-age=86400",
        "ETag": asset.etag,
        "Vary": "Accept-Encoding",
    }
    if request.headers.get("if-none-match") == asset.etag:
        return Response(status_code=304, headers=headers)
    if "gzip" in request.headers.get("accept-encoding", ""):
        headers["Content-Encoding"] = "gzip"
        return Response(asset.gz, media_type="text/javascript", headers=headers)
    return Response(asset.raw, media_type="text/javascript", headers=headers)
