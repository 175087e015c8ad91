"""HTTP face of the domain errors: one handler, statuses from `app.errors.ERROR_TABLE`."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from app.errors import DomainError, http_status

log = logging.getLogger("haico.api")


def error_body(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


async def _domain(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DomainError)
    body: dict[str, object] = dict(error_body(exc.code, exc.message))
    if exc.data:
        body["data"] = exc.data
    return JSONResponse(body, status_code=http_status(exc))


async def _validation(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    body = error_body("invalid_input", "; ".join(parts) or "invalid request")
    return JSONResponse({**body, "detail": jsonable_encoder(exc.errors())}, status_code=422)


async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error", exc_info=exc)
    return JSONResponse(error_body("internal_error", "internal server error"), status_code=500)


def install(app: FastAPI) -> None:
    app.add_exception_handler(DomainError, _domain)
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(Exception, _unexpected)
