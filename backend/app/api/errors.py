"""HTTP face of the domain errors: one handler, statuses from `app.errors.ERROR_TABLE`."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from app.errors import DomainError, http_status
from app.schemas import ErrorOut, ValidationErrorOut

log = logging.getLogger("haico.api")

_WHAT = {
    400: "Bad request (e.g. a branch at or before its own branch point)",
    401: "Missing or unknown bearer token (token mode)",
    403: "The thread belongs to another user",
    404: "Unknown or deleted thread, item or turn",
    409: "Conflict (`turn_in_progress`, `conflict`, `snapshot_missing`, "
    "`checkout_would_discard_changes`)",
    413: "Request body too large",
    422: "The request does not match its schema (`invalid_input`)",
    502: "Seeding the new thread failed; nothing was kept",
}


def responses(
    *statuses: int, validates: bool = True, stream: bool = False
) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses=` for the error statuses an operation can answer, with the
    401 every `/api` operation can, and 422 unless it takes no input at all. A stream's
    errors are still JSON (they are answered before the stream starts)."""
    wanted = {401, *statuses} | ({422} if validates else set())
    out: dict[int | str, dict[str, Any]] = {}
    for code in sorted(wanted):
        model = ValidationErrorOut if code == 422 else ErrorOut
        if stream:
            schema = {"$ref": f"#/components/schemas/{model.__name__}"}
            out[code] = {
                "description": _WHAT[code],
                "content": {"application/json": {"schema": schema}},
            }
        else:
            out[code] = {"model": model, "description": _WHAT[code]}
    return out


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
        if err.get("type") == "json_invalid":
            # A malformed body: the loc is a character offset, not a field.
            reason = (err.get("ctx") or {}).get("error", "")
            parts.append(f"body: invalid JSON ({reason})" if reason else "body: invalid JSON")
            continue
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
