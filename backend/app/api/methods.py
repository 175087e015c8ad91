"""HTTP errors raised by routing itself (no such path, method not allowed, unreadable
body), answered with the `{code, message}` envelope; a 405 names every method the
path allows."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount
from starlette.types import Receive, Scope, Send

from app.api.errors import error_body

_CODES = {404: "not_found", 405: "method_not_allowed"}


METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path (Starlette names only the first
    route's). Asks the router itself, so included routers are searched too."""
    # The studio's catch-all mount would claim every method; it keeps its own answer.
    routes = [r for r in request.app.router.routes if not isinstance(r, Mount)]
    return [
        method
        for method in METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes
        )
    ]


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 400:
        # Routing's only 400: a body that could not be read as JSON (bad encoding).
        # Answered like every other malformed body.
        return JSONResponse(
            error_body("invalid_input", f"body: could not be parsed ({exc.detail})"),
            status_code=422,
        )
    if exc.status_code == 405:
        allow = allowed_methods(request)
        if allow:
            headers["Allow"] = ", ".join(allow)
        message = f"{request.method} is not allowed here; allowed: {headers.get('Allow', '')}"
    else:
        message = str(exc.detail)
    if exc.status_code in (204, 304):
        return Response(status_code=exc.status_code, headers=headers)
    code = _CODES.get(exc.status_code, "http_error")
    return JSONResponse(error_body(code, message), status_code=exc.status_code, headers=headers)


class StudioFiles(StaticFiles):
    """The studio's static export, mounted at `/`. It never answers under `/api/`: a
    path there that no route fully matched is the API's own 404, or its 405 when
    another method is served there (the catch-all mount would otherwise claim it)."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory=directory, html=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and str(scope.get("path", "")).startswith("/api/"):
            status = 405 if allowed_methods(Request(scope)) else 404
            raise StarletteHTTPException(status_code=status, detail="Not Found")
        await super().__call__(scope, receive, send)


def install(app: FastAPI) -> None:
    app.add_exception_handler(StarletteHTTPException, _http_error)
