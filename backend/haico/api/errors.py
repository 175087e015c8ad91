"""HTTP face of the domain errors: one handler, statuses from `haico.errors.ERROR_TABLE`."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from haico.db.outage import DRIVER_ERRORS, as_domain_error
from haico.errors import DomainError, StoreUnavailable, http_status
from haico.schemas.common import ErrorOut, ValidationErrorOut

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
    429: "Too many background jobs (`too_many_jobs`) or open streams (`too_many_streams`) "
    "for this user",
    502: "Seeding the new thread failed; nothing was kept",
    503: "The database is unreachable (`store_unavailable`); retry after `Retry-After` seconds",
}
# How long a client is asked to wait when the database is unreachable.
OUTAGE_RETRY_AFTER_S = 5


def responses(
    *statuses: int, validates: bool = True, stream: bool = False
) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses=` for the error statuses an operation can answer, with the
    401 and 503 every `/api` operation can, and 422 unless it takes no input at all.
    A stream's errors are still JSON (they are answered before the stream starts)."""
    wanted = {401, 503, *statuses} | ({422} if validates else set())
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
    if isinstance(exc, StoreUnavailable):
        return store_unavailable()
    body: dict[str, object] = dict(error_body(exc.code, exc.message))
    if exc.data:
        body["data"] = exc.data
    return JSONResponse(body, status_code=http_status(exc))


def _without_input(err: dict[str, Any]) -> dict[str, Any]:
    """A validation error as answered: where and why, never the rejected input itself
    (it may be text no answer can encode, or a token)."""
    return {k: v for k, v in err.items() if k not in ("input", "url")}


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
    detail = jsonable_encoder([_without_input(e) for e in exc.errors()])
    return JSONResponse({**body, "detail": detail}, status_code=422)


def store_unavailable() -> JSONResponse:
    body = error_body(StoreUnavailable.code, StoreUnavailable.MESSAGE)
    headers = {"Retry-After": str(OUTAGE_RETRY_AFTER_S)}
    return JSONResponse(body, status_code=503, headers=headers)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    """An error no layer turned into a domain error: a driver error that says the
    database is unreachable (503) or rolled back a lost race (409), else a 500.
    Registered for each driver error type too (not only as the catch-all), so that
    those answers are ordinary responses and the client's keep-alive connection stays
    usable."""
    known = as_domain_error(exc)
    if known is not None:
        log.warning("%s: %s: %s", known.code, type(exc).__name__, exc)
        return await _domain(request, known)
    log.exception("unexpected error", exc_info=exc)
    return JSONResponse(error_body("internal_error", "internal server error"), status_code=500)


def install(app: FastAPI) -> None:
    app.add_exception_handler(DomainError, _domain)
    app.add_exception_handler(RequestValidationError, _validation)
    for error_type in DRIVER_ERRORS:
        app.add_exception_handler(error_type, _unexpected)
    app.add_exception_handler(Exception, _unexpected)
