"""HTTP errors raised by routing itself (no such path, method not allowed, unreadable
body), answered with the `{code, message}` envelope; a 405 names every method the
path allows."""

from __future__ import annotations

import os
from os import PathLike
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount
from starlette.types import Receive, Scope, Send

from haico.api.errors import error_body
from haico.api.headers import CSP, studio_policies

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
        # Each page's content policy, its inline scripts hashed once at start-up.
        self.policies = studio_policies(directory)

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        if isinstance(response, FileResponse):
            # The 404 page is served without `file_response`: its policy is set here.
            policy = self.policies.get(str(response.path))  # served by its resolved path
            if policy is not None:
                response.headers[CSP] = policy
        return response

    def file_response(
        self,
        full_path: PathLike[str] | str,
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        # Every answer for a page carries its policy, a 304 too: a browser revalidating
        # its cached page takes the 304's headers as the page's own.
        policy = self.policies.get(str(Path(full_path).resolve()))
        if policy is not None:
            response.headers[CSP] = policy
        return response

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and str(scope.get("path", "")).startswith("/api/"):
            status = 405 if allowed_methods(Request(scope)) else 404
            raise StarletteHTTPException(status_code=status, detail="Not Found")
        await super().__call__(scope, receive, send)


def install(app: FastAPI) -> None:
    app.add_exception_handler(StarletteHTTPException, _http_error)
