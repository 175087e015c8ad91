"""REST: health."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from haico.api.deps import HandlesDep
from haico.schemas.common import HealthOut

router = APIRouter(prefix="/api", tags=["health"])


@router.get(
    "/health",
    response_model=HealthOut,
    responses={503: {"model": HealthOut, "description": "The database is unreachable"}},
)
async def health(handles: HandlesDep) -> JSONResponse:
    ok = await handles.db.ping()
    body = HealthOut(
        status="ok" if ok else "degraded",
        database="ok" if ok else "unreachable",
        backend="sqlite" if handles.db.is_sqlite else "postgresql",
    )
    return JSONResponse(body.model_dump(), status_code=200 if ok else 503)
