"""ReDoc at /redoc without any request leaving the server.

Swagger UI (/docs) comes from ``fastapi-offline`` as it is. Its ReDoc bundle still draws a
logo from the vendor's CDN; this module serves the same bundle with that one address
replaced by an empty inline image, so the page works offline and loads nothing remote.
"""

from __future__ import annotations

import functools
from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html
from fastapi.responses import HTMLResponse, Response

_BUNDLE = Path(fastapi_offline.__file__).parent / "static" / "redoc.standalone.js"
_REMOTE_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
_EMPTY_SVG = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E"
BUNDLE_URL = "/static-docs/redoc.standalone.js"


@functools.cache
def _bundle() -> bytes:
    return _BUNDLE.read_text(encoding="utf-8").replace(_REMOTE_LOGO, _EMPTY_SVG).encode()


def add_redoc(app: FastAPI, path: str = "/redoc") -> None:
    @app.get(BUNDLE_URL, include_in_schema=False)
    def redoc_bundle() -> Response:
        return Response(_bundle(), media_type="application/javascript",
                        headers={"Cache-Control": "public, max-age=86400"})

    @app.get(path, include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} - ReDoc",
                              redoc_js_url=BUNDLE_URL, redoc_favicon_url="/static-offline-docs/favicon.png",
                              with_google_fonts=False)
